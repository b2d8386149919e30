"""Structured output: find the JSON object in a reply, validate it with a pydantic model, and
phrase the one repair request (the invalid reply goes back with the validation error; the idea of
sending the error back is instructor's `max_retries` re-ask, bounded here to a single round).

The JSON may be the whole reply, a fenced block (```json ... ``` or ``` ... ```), or the outermost
`{...}` span inside prose. No provider-side JSON mode is needed, so any chat endpoint works.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.llm.types import Message
from envpool.errors import SwemintError

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)


class ParseFailure(SwemintError, ValueError):
    """The reply holds no valid instance of the response model; `str()` is what the model is told."""


def extract_json(text: str | None) -> Any:
    """The JSON value in `text` (bare, fenced, or the outermost `{...}`). Raises ParseFailure."""
    if not text or not text.strip():
        raise ParseFailure("the reply is empty; expected a JSON object")
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    first_error = None
    for c in candidates:
        try:
            return json.loads(c)
        except ValueError as e:
            first_error = first_error or e
    raise ParseFailure(f"the reply contains no valid JSON object ({first_error})")


def _describe(e: ValidationError) -> str:
    lines = []
    for err in e.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"- {loc}: {err['msg']}")
    return f"{e.error_count()} validation error(s):\n" + "\n".join(lines)


def parse_reply(text: str | None, model: type[BaseModel]) -> BaseModel:
    """`model` validated from the JSON in `text`. Raises ParseFailure (message for the model)."""
    data = extract_json(text)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ParseFailure(_describe(e)) from None


def schema_message(model: type[BaseModel]) -> Message:
    """A user message asking for one JSON object valid against `model`'s JSON schema."""
    schema = json.dumps(model.model_json_schema(), indent=1, sort_keys=True)
    return {"role": "user", "content": (
        "Answer with exactly one JSON object that validates against this JSON schema, "
        f"and nothing else:\n```json\n{schema}\n```")}


def repair_messages(bad_reply: str | None, error: str) -> list[Message]:
    """The invalid reply as an assistant turn, then a user turn with the error (one repair round)."""
    return [{"role": "assistant", "content": bad_reply or ""},
            {"role": "user", "content": (
                f"Your reply could not be used: {error}\n"
                "Reply again with only the corrected JSON object.")}]
