"""Under `hybrid`, an unknown layout the rules cannot plan -- in Python, in a compiled language (C)
and in JavaScript -- reaches `verified` through an LLM plan: the real litellm client against the
scripted OpenAI-compatible server, real Docker. The model's plan is validated by the Environment
Setup agent's pydantic model and built on the named ecosystem's toolchain image; its tokens are
counted under the agent that asked (`analysis`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.llm import LLMConfig
from agents.minter import mint_instance
from agents.models import StepRecord
from tests.agents.llm.conftest import KEY_ENV
from tests.agents.test_loop_docker import Repo
from tests.fakes.openai_server import text
from tests.session import SESSION, ENV_REPOSITORY

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.llm]


@pytest.fixture
def mint_llm(tmp_path, server, key, docker_client):
    """mint(instance, git_dir, plan) -> InstanceResult under `hybrid`, the model answering `plan`."""
    made: list[str] = []

    def run(inst, git_dir, plan: dict):
        server.push(text(json.dumps(plan), prompt_tokens=900, completion_tokens=60))
        llm = LLMConfig(model="openai/scripted-model", api_base=server.base_url, api_key_env=KEY_ENV, timeout=30,
                        max_retries=0, cache_dir=tmp_path / "llm-cache")
        cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-llm-plan-{SESSION}", image_repository=ENV_REPOSITORY,
                         policy="hybrid", llm=llm, memory={"enabled": False})
        res = mint_instance(inst, git_dir, cfg)
        if res.image:
            made.append(res.image)
        return res

    yield run
    for image in made:
        docker_client.images.remove(image, force=True)


def _planned_by_llm(res) -> None:
    steps = [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]
    plan = next(s for s in steps if s.rule == "llm:plan")
    assert plan.tokens == 960 and plan.agent == "analysis"
    assert set(res.llm_usage["by_agent"]) == {"analysis"} and res.llm_usage["total"]["calls"] == 1


def test_python_tests_in_an_unknown_folder(tmp_path, mint_llm, python_image):
    """checks/verify_calc.py is no test module by name or folder: the rules select nothing."""
    repo = Repo(tmp_path, "pychecks")
    repo.commit({"calc.py": "def add(a, b):\n    return a - b\n",
                 "checks/verify_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"},
                "2023-05-01T00:00:00")
    inst = repo.instance({"checks/verify_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0"
                          "\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"},
                         {"calc.py": "def add(a, b):\n    return a + b\n"}, "2023-05-02T00:00:00Z", "python")
    res = mint_llm(inst, repo.git_dir, {"ecosystem": "python", "toolchain": None, "setup_commands": [],
                                        "test_command": "", "parser": "pytest_plugin",
                                        "test_files": ["checks/verify_calc.py"], "reason": "pytest collects it"})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["checks/verify_calc.py::test_add"] and res.PASS_TO_PASS == ["checks/verify_calc.py::test_zero"]
    _planned_by_llm(res)


def test_c_built_by_a_shell_script(tmp_path, mint_llm, docker_client):
    """No Makefile, CMake or configure: the C rules know no route; the model's plan builds with
    build.sh and reads `PASS:`/`FAIL:` lines."""
    repo = Repo(tmp_path, "cscript")
    run_sh = 'r=$(./calc 0 0); [ "$r" = 0 ] && echo "PASS: zero" || echo "FAIL: zero"\n'
    repo.commit({"calc.c": '#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) {\n'
                           '  printf("%d\\n", atoi(v[1]) - atoi(v[2]));\n  return 0;\n}\n',
                 "build.sh": "cc -o calc calc.c\n", "tests/run.sh": run_sh}, "2023-05-01T00:00:00")
    inst = repo.instance({"tests/run.sh": run_sh + 'r=$(./calc 2 3); [ "$r" = 5 ] && echo "PASS: add" || '
                                                   'echo "FAIL: add"\n'},
                         {"calc.c": '#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) {\n'
                                    '  printf("%d\\n", atoi(v[1]) + atoi(v[2]));\n  return 0;\n}\n'},
                         "2023-05-02T00:00:00Z", "c")
    res = mint_llm(inst, repo.git_dir, {"ecosystem": "cfamily", "toolchain": "12", "setup_commands": ["sh build.sh"],
                                        "test_command": "sh build.sh && sh tests/run.sh", "parser": "automake_log",
                                        "test_files": ["tests/run.sh"], "reason": "build.sh builds, run.sh tests"})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["add"] and res.PASS_TO_PASS == ["zero"] and res.language == "c"
    _planned_by_llm(res)


def test_javascript_without_a_package_json(tmp_path, mint_llm, docker_client):
    repo = Repo(tmp_path, "jsplain")
    run_js = ("const {add} = require('../lib/calc');\nconst check = (n, ok) => console.log((ok ? 'PASS: ' : 'FAIL: ') + n);\n"
              "check('zero', add(0, 0) === 0);\n")
    repo.commit({"lib/calc.js": "exports.add = (a, b) => a - b;\n", "test/run.js": run_js}, "2023-05-01T00:00:00")
    inst = repo.instance({"test/run.js": run_js + "check('add', add(2, 3) === 5);\n"},
                         {"lib/calc.js": "exports.add = (a, b) => a + b;\n"}, "2023-05-02T00:00:00Z", "javascript")
    res = mint_llm(inst, repo.git_dir, {"ecosystem": "node", "toolchain": "18", "setup_commands": ["node --version"],
                                        "test_command": "node test/run.js", "parser": "automake_log",
                                        "test_files": ["test/run.js"], "reason": "a plain node script"})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["add"] and res.PASS_TO_PASS == ["zero"] and res.language == "javascript"
    _planned_by_llm(res)
