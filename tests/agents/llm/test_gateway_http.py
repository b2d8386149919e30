"""The gateway through the real litellm client against the scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import os

import pytest
from pydantic import BaseModel

from agents.llm import (
    RUN_SHELL,
    CostOverride,
    LLMConfig,
    LLMConfigError,
    LLMContextOverflowError,
    LLMGateway,
    LLMOutputError,
    LLMRequestError,
    LLMUnavailableError,
    run_tool_loop,
)
from tests.agents.llm.conftest import KEY_ENV
from tests.fakes.openai_server import auth_error, context_overflow, error, rate_limited, server_error, text, tool_call

pytestmark = pytest.mark.llm

USER = [{"role": "user", "content": "Which Python does this repository need?"}]


class Plan(BaseModel):
    python: str
    packages: list[str]


def test_plain_text_reply_and_request_shape(make_gateway, server, key):
    gw = make_gateway(text("3.11", prompt_tokens=42, completion_tokens=3), temperature=0.2, max_tokens=64)
    result = gw.complete(USER, agent="analysis", instance_id="org__repo-1")
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("3.11", 42, 3)
    assert result.requests == 1 and not result.cached and result.raw["choices"][0]["message"]["content"] == "3.11"
    [req] = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "scripted-model" and req["body"]["messages"] == USER
    assert req["body"]["temperature"] == 0.2 and req["body"]["max_tokens"] == 64
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert headers["authorization"] == f"Bearer {key}"
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_structured_reply_fenced_json(make_gateway, server):
    gw = make_gateway(text('Here it is:\n```json\n{"python": "3.11", "packages": ["numpy"]}\n```'))
    result = gw.complete(USER, response_model=Plan, agent="setup")
    assert result.parsed == Plan(python="3.11", packages=["numpy"])
    sent = server.bodies()[0]["messages"]
    assert sent[:-1] == USER and "JSON schema" in sent[-1]["content"] and '"packages"' in sent[-1]["content"]


def test_malformed_json_is_sent_back_once_then_valid(make_gateway, server):
    gw = make_gateway(text('{"python": "3.11", "packages": '), text('{"python": "3.11", "packages": []}'))
    result = gw.complete(USER, response_model=Plan, agent="setup", instance_id="i-1")
    assert result.parsed == Plan(python="3.11", packages=[])
    assert server.count() == 2 and result.requests == 2
    assert result.invalid_replies == ['{"python": "3.11", "packages": ']
    assert result.prompt_tokens == 200  # both requests are paid for
    repair = server.bodies()[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"python": "3.11", "packages": '}
    assert "could not be used" in repair[-1]["content"] and "no valid JSON" in repair[-1]["content"]


def test_invalid_twice_raises_output_error_after_exactly_two_requests(make_gateway, server):
    gw = make_gateway(text('{"python": 3}'), text("I think Python 3.11."))
    with pytest.raises(LLMOutputError) as info:
        gw.complete(USER, response_model=Plan, agent="setup", instance_id="i-2")
    assert server.count() == 2
    err = info.value
    assert err.replies == ['{"python": 3}', "I think Python 3.11."] and err.requests == 2
    assert err.raw[1]["choices"][0]["message"]["content"] == "I think Python 3.11."  # kept for the record
    assert err.instance_id == "i-2" and err.agent == "setup"
    assert "validation error" in server.bodies()[1]["messages"][-1]["content"]  # the pydantic error went back
    assert gw.usage.to_dict()["total"]["failed_calls"] == 1


def test_tool_call_then_final_answer(make_gateway, server):
    gw = make_gateway(tool_call("python --version"), text("Python 3.11 is installed."))
    ran = []

    def execute(cmd: str) -> tuple[int, str]:
        ran.append(cmd)
        return 0, "Python 3.11.7\n"

    out = run_tool_loop(gw, system_prompt="You set up environments.", task="Check Python.", execute=execute,
                        agent="execution", instance_id="i-3")
    assert ran == ["python --version"] and out.stopped == "answered"
    assert out.final_text == "Python 3.11 is installed." and out.usage.requests == 2
    first, second = server.bodies()
    assert first["tools"][0]["function"]["name"] == RUN_SHELL["function"]["name"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "run_shell"
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_0",
                                     "content": "exit_code: 0\noutput:\nPython 3.11.7\n"}


def test_429_with_retry_after_is_retried_and_honoured(make_gateway, server, sleeps):
    gw = make_gateway(rate_limited(retry_after=7), text("ok"))
    result = gw.complete(USER, agent="analysis")
    assert result.text == "ok" and result.requests == 2 and server.count() == 2
    assert sleeps == [7.0]


def test_retry_after_is_capped(make_gateway, sleeps):
    gw = make_gateway(rate_limited(retry_after=3600), text("ok"), max_retry_after=30)
    gw.complete(USER, agent="analysis")
    assert sleeps == [30.0]


def test_500_is_retried_then_success(make_gateway, server, sleeps):
    gw = make_gateway(server_error(), text("ok"), retry_wait_min=0.5, retry_wait_max=2)
    assert gw.complete(USER, agent="analysis").text == "ok"
    assert server.count() == 2 and len(sleeps) == 1 and 0 < sleeps[0] <= 2


def test_timeout_is_retried(make_gateway, server):
    gw = make_gateway(text("late", delay=1.5), text("ok"), timeout=0.3)
    result = gw.complete(USER, agent="analysis")
    assert result.text == "ok" and result.requests == 2 and server.count() == 2


def test_transient_errors_exhaust_into_unavailable(make_gateway, server, sleeps):
    gw = make_gateway(*[server_error()] * 3, max_retries=2)
    with pytest.raises(LLMUnavailableError) as info:
        gw.complete(USER, agent="analysis", instance_id="i-4")
    assert server.count() == 3 and info.value.requests == 3 and len(sleeps) == 2
    assert info.value.status_code == 500


def test_connection_refused_is_retried(key, sleeps):
    import socket
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gw = LLMGateway(LLMConfig(model="openai/x", api_base=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV,
                              max_retries=1, timeout=2), sleep=sleeps)
    with pytest.raises(LLMUnavailableError) as info:
        gw.complete(USER, agent="analysis")
    assert info.value.requests == 2 and len(sleeps) == 1


def test_context_overflow_is_not_retried(make_gateway, server, sleeps):
    """mini-swe-agent #921: a denylist retried a context overflow 10 times. One request here."""
    gw = make_gateway(context_overflow(), text("never sent"), max_retries=10)
    with pytest.raises(LLMContextOverflowError) as info:
        gw.complete(USER, agent="execution", instance_id="i-5")
    assert server.count() == 1 and sleeps == [] and info.value.requests == 1
    assert info.value.status_code == 400 and "context" in str(info.value)


def test_bad_request_is_not_retried(make_gateway, server, sleeps):
    gw = make_gateway(error(400, "Invalid value for 'tools'.", code="invalid_value"), text("never sent"))
    with pytest.raises(LLMRequestError) as info:
        gw.complete(USER, agent="setup")
    assert not isinstance(info.value, LLMContextOverflowError)
    assert server.count() == 1 and sleeps == []


def test_missing_key_env_fails_before_any_request(make_gateway, server, monkeypatch):
    gw = make_gateway(text("never sent"))
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(LLMConfigError, match=KEY_ENV):
        gw.complete(USER, agent="setup")
    assert server.count() == 0


def test_no_key_env_sends_placeholder_not_openai_key(make_gateway, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-should-not-travel")
    gw = make_gateway(text("ok"), api_key_env=None)
    gw.complete(USER, agent="setup")
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert headers["authorization"] == "Bearer EMPTY"


def test_key_never_in_logs_or_errors(make_gateway, server, key, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="LiteLLM")
    gw = make_gateway(rate_limited(1), text("ok"), auth_error(f"Incorrect API key provided: {key}."))
    assert gw.complete(USER, agent="setup", instance_id="i-6").text == "ok"
    with pytest.raises(LLMRequestError) as info:
        gw.complete(USER, agent="setup", instance_id="i-6")
    err = info.value
    assert err.status_code == 401 and "[REDACTED]" in str(err)
    assert err.__cause__ is None and err.__context__ is None  # the provider's text is not chained
    assert key not in str(err) and key not in repr(err.args)
    assert "retrying" in caplog.text  # the retry was logged ...
    assert key not in caplog.text  # ... without the key
    out, errout = capfd.readouterr()
    assert key not in out and key not in errout
    assert all(f"Bearer {key}" == {k.lower(): v for k, v in r["headers"].items()}["authorization"]
               for r in server.requests)  # the key did travel, in the header only
    assert all(key not in json.dumps(b) for b in server.bodies())


def test_cache_hit_makes_no_request(make_gateway, server, tmp_path, key):
    gw = make_gateway(text('{"python": "3.12", "packages": ["pytest"]}'), cache_dir=tmp_path / "cache",
                      cost=CostOverride(input_per_1k=1.0, output_per_1k=2.0))
    first = gw.complete(USER, response_model=Plan, agent="setup", instance_id="i-7")
    again = gw.complete(USER, response_model=Plan, agent="setup", instance_id="i-7")
    assert server.count() == 1
    assert again.cached and not first.cached and again.requests == 0
    assert again.parsed == first.parsed == Plan(python="3.12", packages=["pytest"])
    assert again.cost_usd == first.cost_usd  # what the reply cost originally ...
    usage = gw.usage.for_instance("i-7")["total"]
    assert usage["calls"] == 2 and usage["cached_calls"] == 1 and usage["requests"] == 1
    assert usage["cost_usd"] == pytest.approx(0.14)  # ... counted once as spent
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1 and key not in files[0].read_text()
    # another parameter is another key: a new request
    server.push(text('{"python": "3.12", "packages": []}'))
    other = make_gateway(cache_dir=tmp_path / "cache", temperature=0.7)
    assert not other.complete(USER, response_model=Plan, agent="setup").cached and server.count() == 2


def test_usage_and_cost_per_instance_and_agent(make_gateway, tmp_path):
    gw = make_gateway(text("a", prompt_tokens=1000, completion_tokens=500),
                      text("b", prompt_tokens=2000, completion_tokens=0),
                      text("c", prompt_tokens=100, completion_tokens=100),
                      cost=CostOverride(input_per_1k=0.5, output_per_1k=1.5))
    r = gw.complete(USER, agent="analysis", instance_id="i-a")
    assert r.cost_usd == pytest.approx(0.5 + 0.75)
    gw.complete(USER, agent="setup", instance_id="i-a")
    gw.complete(USER, agent="setup", instance_id="i-b")
    data = json.loads(gw.usage.dump(tmp_path / "usage.json").read_text())
    assert data["total"]["calls"] == 3 and data["total"]["prompt_tokens"] == 3100
    assert data["total"]["cost_usd"] == pytest.approx(1.25 + 1.0 + 0.2)
    assert data["by_agent"]["setup"]["calls"] == 2
    assert data["by_instance"]["i-a"]["total"]["cost_usd"] == pytest.approx(2.25)
    assert data["by_instance"]["i-a"]["by_agent"]["analysis"]["completion_tokens"] == 500
    assert data["by_instance"]["i-b"]["total"]["requests"] == 1


def test_two_gateways_keep_their_own_prices(make_gateway):
    cheap = make_gateway(text("a", prompt_tokens=1000, completion_tokens=0), model="openai/shared-name",
                         cost=CostOverride(input_per_1k=1.0))
    dear = make_gateway(text("b", prompt_tokens=1000, completion_tokens=0), model="openai/shared-name",
                        cost=CostOverride(input_per_1k=3.0))
    assert dear.complete(USER, agent="setup").cost_usd == pytest.approx(3.0)
    assert cheap.complete(USER, agent="setup").cost_usd == pytest.approx(1.0)


def test_unknown_model_without_price_costs_zero_and_is_flagged(make_gateway):
    gw = make_gateway(text("a"), model="openai/never-priced-model")  # litellm's price map is global
    assert gw.complete(USER, agent="setup").cost_usd == 0.0
    assert gw.usage.to_dict()["total"]["unpriced_requests"] == 1


def test_known_model_is_priced_from_the_bundled_cost_map(make_gateway):
    gw = make_gateway(text("a", prompt_tokens=1_000_000, completion_tokens=0), model="openai/gpt-4o-mini")
    assert gw.complete(USER, agent="setup").cost_usd > 0


def test_smoke_command_against_the_scripted_server(server, key, capsys):
    from agents.llm.__main__ import main
    server.push(text('{"answer": "pong", "model_family": "scripted"}', prompt_tokens=50, completion_tokens=10))
    code = main(["--model", "openai/smoke-model", "--api-base", server.base_url, "--api-key-env", KEY_ENV,
                 "--input-per-1k", "1", "--output-per-1k", "1"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["parsed"] == {"answer": "pong", "model_family": "scripted"}
    assert out["cost_usd"] == pytest.approx(0.06) and out["usage"]["by_agent"]["smoke"]["calls"] == 1
    server.push(context_overflow())
    assert main(["--model", "openai/smoke-model", "--api-base", server.base_url, "--api-key-env", KEY_ENV]) == 1
    assert "LLMContextOverflowError" in capsys.readouterr().err
