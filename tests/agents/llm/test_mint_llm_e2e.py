"""The LLM path end to end: `mint_instance` under the `hybrid` policy, real Docker, the real litellm
client against the scripted OpenAI-compatible server on loopback (it proves the plumbing, not a
model's quality).

The repository the test writes imports a module that only a code generator of its own makes
(`tools/gen_speedups.py`, as projects with generated lookup tables do). No rule knows that step:
the missing module is the project's own (`acme._speedups`), so the rule backend does not try to
install it, and the experience memory is off. The scripted model then calls `run_shell` with the
generator, answers, and the instance must end `verified`, with the model's command in the setup
script and the LLM step (with tokens) in the trajectory.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.llm import LLMConfig
from agents.llm.llm_config import CostOverride
from agents.minter import mint_instance
from agents.models import Instance, StepRecord
from pipeline.demo import build_repository
from tests.agents.llm.conftest import KEY, KEY_ENV
from tests.agents.test_minter_docker import write_repo
from tests.fakes.openai_server import text, tool_call
from tests.session import SESSION, ENV_REPOSITORY

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.llm]

GENERATE = "cd /testbed && /opt/venv/bin/python tools/gen_speedups.py"

BASE = {
    "pyproject.toml": """[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "acme"
version = "0.3"
requires-python = ">=3.8"

[tool.setuptools]
packages = ["acme"]
""",
    ".gitignore": "acme/_speedups.py\n",
    "tools/gen_speedups.py": """# writes acme/_speedups.py (a generated table; not tracked)
import pathlib
squares = {i: i * i for i in range(16)}
out = pathlib.Path(__file__).resolve().parents[1] / "acme" / "_speedups.py"
out.write_text("SQUARES = %r\\n" % squares)
""",
    "acme/__init__.py": "from acme._speedups import SQUARES\nfrom acme.core import square\n",
    "acme/core.py": "from acme._speedups import SQUARES\n\n\ndef square(x):\n    return SQUARES.get(x, x)\n",
    "tests/test_core.py": "from acme import square\n\n\ndef test_table():\n    assert square(3) == 9\n",
}
FIX = {"acme/core.py": "from acme._speedups import SQUARES\n\n\ndef square(x):\n"
                       "    return SQUARES[x] if x in SQUARES else x * x\n"}
TESTS = {"tests/test_core.py": BASE["tests/test_core.py"] + "\n\ndef test_beyond_table():\n"
                                                           "    assert square(20) == 400\n"}


@pytest.fixture
def scripted(server, key):
    """The scripted server with the model's two turns: the generator as a tool call, then an answer."""
    server.push(tool_call(GENERATE, prompt_tokens=640, completion_tokens=31),
                text("Generated acme/_speedups.py with tools/gen_speedups.py.", prompt_tokens=700,
                     completion_tokens=12))
    return server


def test_hybrid_policy_mints_with_the_llm_repair_through_litellm(tmp_path, scripted, python_image, docker_client):
    data = write_repo(tmp_path / "data", "acme", BASE, FIX, TESTS, created_at="2024-03-01T00:00:00Z", version="0.3")
    mirrors = tmp_path / "mirrors"
    inst = Instance(**build_repository(data, mirrors))
    llm = LLMConfig(model="openai/scripted-model", api_base=scripted.base_url, api_key_env=KEY_ENV, timeout=30,
                    max_retries=0, cache_dir=tmp_path / "llm-cache",
                    cost=CostOverride(input_per_1k=0.01, output_per_1k=0.03))
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-mint-llm-{SESSION}", image_repository=ENV_REPOSITORY,
                     policy="hybrid", llm=llm, memory={"enabled": False})
    res = mint_instance(inst, mirrors / inst.repo.replace("/", "+") / "repo", cfg)
    try:
        assert res.outcome == "verified", res.reason
        assert res.FAIL_TO_PASS == ["tests/test_core.py::test_beyond_table"]
        assert res.PASS_TO_PASS == ["tests/test_core.py::test_table"]
        # the model's command is an increment of the setup script (and the Dockerfile)
        assert GENERATE in res.setup_script and GENERATE.replace("cd /testbed && ", "") in res.dockerfile

        steps = [StepRecord.model_validate_json(line)
                 for line in Path(res.trajectory_path).read_text().splitlines() if line.strip()]
        failed_probe = next(s for s in steps if s.rule == "probe:collect" and s.exit_code not in (0, 5))
        assert "No module named 'acme._speedups'" in failed_probe.output_excerpt
        assert failed_probe.note.startswith("repair: ") and GENERATE in json.loads(failed_probe.note[8:])[0]["command"]
        llm_exec = [s for s in steps if s.rule == "llm:execution"]
        assert [(s.command, s.exit_code) for s in llm_exec] == [(GENERATE, 0)]
        repair = next(s for s in steps if s.rule == "llm:repair")
        assert repair.tokens == 640 + 31 + 700 + 12 and "answered" in repair.note
        assert steps.index(failed_probe) < steps.index(llm_exec[0]) < steps.index(repair)
        assert any(s.rule == "probe:collect" and s.exit_code == 0 for s in steps[steps.index(repair):])
        # no rule tried to install the project's own module
        assert not any(s.rule == "repair:missing-module" for s in steps)

        # tokens per instance and per agent
        assert res.llm_usage["total"]["calls"] == 2
        assert res.llm_usage["total"]["prompt_tokens"] == 1340
        assert res.llm_usage["total"]["completion_tokens"] == 43
        assert res.llm_usage["total"]["cost_usd"] == pytest.approx((1340 * 0.01 + 43 * 0.03) / 1000)
        assert set(res.llm_usage["by_agent"]) == {"execution"}

        # the real HTTP path: two requests, the tool offered, the failure in the prompt, the key
        # only in the Authorization header and nowhere in what the instance wrote
        assert scripted.count() == 2
        first, second = scripted.bodies()
        assert first["model"] == "scripted-model"
        assert [t["function"]["name"] for t in first["tools"]] == ["run_shell"]
        assert "No module named 'acme._speedups'" in json.dumps(first["messages"])
        assert second["messages"][-1]["role"] == "tool"
        assert all({k.lower(): v for k, v in r["headers"].items()}["authorization"] == f"Bearer {KEY}"
                   for r in scripted.requests)
        written = [f for d in (Path(cfg.workdir), tmp_path / "llm-cache") for f in d.rglob("*") if f.is_file()]
        assert any("llm-cache" in f.parts for f in written)  # the responses were cached
        for f in written:
            assert KEY not in f.read_text(errors="replace"), f
        # the generated module is in the committed environment, the tree otherwise clean
        out = docker_client.containers.run(res.image, ["bash", "-c", "cd /testbed && cat acme/_speedups.py && "
                                                       "git status --porcelain"], remove=True,
                                           network_mode="none", labels={"swemint.run": "test-mint-llm"}).decode()
        assert out.startswith("SQUARES = {0: 0") and "acme/core.py" not in out
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)
