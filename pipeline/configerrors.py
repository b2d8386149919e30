"""Configuration errors as one line each, with "did you mean" for a mistyped key.

pydantic's own text (`1 validation error for PipelineConfig ... [type=extra_forbidden ...] For
further information visit ...`) names the key but not what was meant. `explain` turns each error
of a `ValidationError` into `unknown key mint.timeouts.instanse (did you mean
mint.timeouts.instance?)` or `workers: Input should be a valid integer (got 'x')`, walking the
model tree (nested models, `Optional[...]`, lists and dicts of models) for the keys that exist at
the error's place and picking the closest with `difflib` (the standard library's matcher, as
git's and argparse's suggestions do).
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence

from pydantic import BaseModel, ValidationError


def _members(annotation) -> list:
    """An annotation's alternatives: a union's members (None dropped), `Annotated` unwrapped."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) if a is not type(None) for m in _members(a)]
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    return [annotation]


def _step(annotation, part) -> list:
    """The annotations one location part leads to from `annotation`: a model's field, a list's
    item (int part) or a dict's value."""
    out = []
    for a in _members(annotation):
        if isinstance(a, type) and issubclass(a, BaseModel):
            f = a.model_fields.get(str(part))
            if f is not None:
                out.append(f.annotation)
        elif typing.get_origin(a) in (list, tuple, set, frozenset, dict) and typing.get_args(a):
            out.append(typing.get_args(a)[-1])
    return out


def known_keys(model: type[BaseModel], loc: Sequence) -> list[str]:
    """The field names that exist at `loc` (a pydantic error location without its last part)
    below `model`; [] when the place cannot be followed (a union's tag, a free-form dict)."""
    current: list = [model]
    for part in loc:
        current = [n for a in current for n in _step(a, part)]
    models = [m for a in current for m in _members(a) if isinstance(m, type) and issubclass(m, BaseModel)]
    return sorted({k for m in models for k in m.model_fields})


def _dotted(loc: Sequence) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def explain(error: ValidationError, model: type[BaseModel]) -> list[str]:
    """One line per error of `error` (raised validating `model`): unknown keys with the closest
    known key at their place ("did you mean"), else the known keys there; other errors as
    `key: message (got value)`. A validator's error (`ValueError` raised in a validator) is its
    own sentence: without pydantic's `Value error, ` prefix, without the `key: ` prefix when the
    sentence starts with the key, and without the value when that is a whole section (a model
    validator's input, a mapping, e.g. `mint.policy hybrid needs a usable `llm` block ...`; a list
    field's value stays: it says which entry the field's validator refused)."""
    lines = []
    for e in error.errors(include_url=False):
        loc = tuple(e.get("loc") or ())
        key = _dotted(loc)
        if e.get("type") == "extra_forbidden" and loc:
            known = known_keys(model, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
            prefix = _dotted(loc[:-1]) + "." if len(loc) > 1 else ""
            if close:
                lines.append(f"unknown key {key} (did you mean {prefix}{close[0]}?)")
            elif known:
                lines.append(f"unknown key {key} (keys here: {', '.join(known)})")
            else:
                lines.append(f"unknown key {key}")
            continue
        if e.get("type") == "missing":
            lines.append(f"{key}: required, not given")
            continue
        msg = str(e.get("msg", "invalid"))
        if e.get("type") in ("value_error", "assertion_error"):  # a validator's own sentence
            msg = msg.split(", ", 1)[1] if msg.startswith(("Value error, ", "Assertion failed, ")) else msg
        prefix = "" if msg.startswith(key) else f"{key}: "
        value = e.get("input")
        if isinstance(value, dict) and e.get("type") in ("value_error", "assertion_error"):
            lines.append(f"{prefix}{msg}")  # a model's validator: its input is the whole section
            continue  # (a list field's value says which entry its validator refused: kept)
        got = repr(value)
        got = got if len(got) <= 60 else got[:57] + "..."
        lines.append(f"{prefix}{msg} (got {got})")
    return lines
