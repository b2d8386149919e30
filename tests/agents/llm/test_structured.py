"""JSON extraction, validation messages, and the Retry-After reading (no HTTP)."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest
from pydantic import BaseModel

from agents.llm.cache import ResponseCache, cache_key
from agents.llm.retry import retry_after_seconds
from agents.llm.structured import ParseFailure, extract_json, parse_reply

pytestmark = pytest.mark.llm


class Plan(BaseModel):
    python: str
    packages: list[str] = []


@pytest.mark.parametrize("reply", [
    '{"python": "3.11"}',
    '  {"python": "3.11"}\n',
    'Sure.\n```json\n{"python": "3.11"}\n```\nDone.',
    '```\n{"python": "3.11"}\n```',
    'The answer is {"python": "3.11"} as requested.',
])
def test_extract_json_bare_fenced_or_embedded(reply):
    assert parse_reply(reply, Plan) == Plan(python="3.11")


@pytest.mark.parametrize("reply,needle", [
    ("", "empty"), ("no json here", "no valid JSON"), ('{"python": ', "no valid JSON"),
    ('{"packages": ["x"]}', "python: Field required"), ('{"python": 3}', "valid string"),
])
def test_invalid_replies_explain_themselves(reply, needle):
    with pytest.raises(ParseFailure, match=needle):
        parse_reply(reply, Plan)


def test_extract_json_prefers_the_whole_reply():
    assert extract_json('[1, 2]') == [1, 2]


class _Resp:
    def __init__(self, headers):
        self.headers = headers


class _Err(Exception):
    def __init__(self, headers=None, litellm_headers=None):
        self.response = _Resp(headers) if headers is not None else None
        self.litellm_response_headers = litellm_headers


def test_retry_after_forms():
    assert retry_after_seconds(_Err({"Retry-After": "12"})) == 12.0
    assert retry_after_seconds(_Err({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert retry_after_seconds(_Err(None, {"retry-after": "0.25"})) == 0.25
    date = formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds(_Err({"Retry-After": date})) <= 30
    assert retry_after_seconds(_Err({})) is None
    assert retry_after_seconds(_Err({"retry-after": "soon"})) is None
    assert retry_after_seconds(ValueError("no response")) is None


def test_cache_key_is_canonical_and_entries_roundtrip(tmp_path):
    a = cache_key({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0})
    b = cache_key({"temperature": 0, "messages": [{"content": "x", "role": "user"}], "model": "m"})
    assert a == b and len(a) == 64
    assert a != cache_key({"model": "m", "messages": [{"role": "user", "content": "y"}], "temperature": 0})
    cache = ResponseCache(tmp_path)
    assert cache.get(a) is None
    cache.put(a, {"text": "hi"})
    assert cache.get(a) == {"text": "hi"} and (tmp_path / a[:2] / f"{a}.json").is_file()
    (tmp_path / a[:2] / f"{a}.json").write_text("{broken")
    assert cache.get(a) is None  # unreadable entry: a miss, not an error
