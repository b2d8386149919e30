"""Instance fields are data, end to end (issue 24, item 1; real Docker, PyPI): an instance file
whose ids hold `../x`, `a/b`, a newline and a command, and 10 kB has those rows refused with a
line naming each; the one good row -- whose test ids, test_patch and problem statement hold shell
metacharacters, heredoc-like lines and an ANSI escape -- is minted, exported as a SWE-bench v5
task repository with nothing outside the export folder and no id as a shell word in any script,
and its exported `eval.sh` grades as the harness runs it (gold passes, no patch fails) without
running any of that text.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.gitrepo import GitTree
from agents.minter import mint_instance
from pipeline.demo import build_repository
from pipeline.export import export_task_repo
from pipeline.instances import load_instances
from pipeline.store import ResultStore
from tests.envpool.test_evalscript import _status
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BASE = {
    "setup.py": "from setuptools import setup\n\nsetup()\n",
    "setup.cfg": "[metadata]\nname = calc\nversion = 0.1.0\n\n[options]\npackages = find:\n\n"
                 "[options.packages.find]\nexclude =\n    tests\n",
    "calc/__init__.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
}
TESTS = {"tests/test_calc.py": '''import pytest

from calc import add

# lines the eval script must carry as data, never as its own lines:
# EOF
# $(touch /tmp/PWNED_TP)
TEXT = """
EOF
'EOF'
'; touch /tmp/PWNED_TP2; '
"""


def test_zero():
    assert add(0, 0) == 0


@pytest.mark.parametrize("a,b,c", [(1, 2, 3), (2, 2, 4)],
                         ids=["$(touch /tmp/PWNED_ID)", "x'; touch /tmp/PWNED_ID2; '"])
def test_add(a, b, c):
    assert add(a, b) == c
'''}
FIX = {"calc/__init__.py": "def add(a, b):\n    return a + b\n"}


def data_dir(root: Path) -> Path:
    d = root / "acme__calc"
    for sub, files in (("base", BASE), ("fix", FIX), ("tests", TESTS)):
        for rel, text in files.items():
            p = d / sub / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    meta = {"number": 7, "title": "add subtracts",
            "problem_statement": "add subtracts \x1b[31mred\x1b[0m\nEOF\n$(touch /tmp/PWNED_PS)\n",
            "created_at": "2024-03-01T00:00:00Z", "version": "0.1", "base_message": "base", "test_message": "tests",
            "fix_message": "fix", "expected_outcome": "verified", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}
    (d / "meta.json").write_text(json.dumps(meta))
    return d


def test_hostile_rows_refused_good_row_minted_exported_and_graded_inert(tmp_path, python_image, docker_client):
    mirrors = tmp_path / "mirrors"
    good = build_repository(data_dir(tmp_path / "data"), mirrors)
    rows = [good, *({**good, "instance_id": i} for i in ("../x", "a/b", "acme__calc-7\ntouch /tmp/PWNED",
                                                        "acme__calc-" + "7" * 10_000))]
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_instances(f)
    assert [i.instance_id for i in loaded.instances] == ["acme__calc-7"]
    assert [re.search(r"line (\d+):", str(e)).group(1) for e in loaded.errors] == ["2", "3", "4", "5"]
    assert all("\n" not in str(e) and len(str(e)) < 800 for e in loaded.errors)

    inst = loaded.instances[0]
    repo_path = mirrors / "acme+calc" / "repo"
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-fields-{SESSION}", image_repository=ENV_REPOSITORY)
    res = mint_instance(inst, repo_path, cfg)
    try:
        assert res.outcome == "verified", res.reason
        assert sorted(res.FAIL_TO_PASS) == ["tests/test_calc.py::test_add[$(touch /tmp/PWNED_ID)]",
                                            "tests/test_calc.py::test_add[x'; touch /tmp/PWNED_ID2; ']"]
        store = ResultStore(cfg.workdir)
        store.mark_running(inst)
        store.write_result(res)
        out = tmp_path / "export"
        dest = out / "dest"
        rep = export_task_repo(store, dest, lambda i: GitTree(repo_path, i.base_commit).archive())
        assert rep == {"tasks": 1, "skipped": {}}
        assert all(p.resolve().is_relative_to(dest.resolve()) for p in out.rglob("*"))
        task = dest / "tasks" / "acme__calc-7"
        for name in ("eval.sh", "Dockerfile"):
            for line in (task / name).read_text().splitlines():
                if "acme__calc-7" in line:
                    assert line.startswith("#"), (name, line)
        assert (task / "problem_statement.md").read_text() == inst.problem_statement  # data, kept whole
        assert not list(Path("/tmp").glob("PWNED*"))

        # the harness: model patch applied in /testbed, then /eval.sh, then the log read back
        from envpool.docker_sandbox import DockerSandboxFactory
        from envpool.sandbox import SandboxSpec

        factory = DockerSandboxFactory(run_id=f"test-fields-{SESSION}", client=docker_client)
        for patch, want in ((inst.patch, "PASS"), ("", "FAIL")):
            with factory.sandbox(SandboxSpec(image=res.image, run_id=f"test-fields-{SESSION}", network="none")) as sb:
                if patch:
                    sb.put_file("/tmp/model.patch", patch)
                    assert sb.exec("cd /testbed && git apply /tmp/model.patch", timeout=60).ok
                sb.put_file("/eval.sh", (task / "eval.sh").read_text())
                r = sb.exec("/bin/bash /eval.sh", timeout=600)
                st = _status(r.output)
                assert {st.get(t) for t in res.FAIL_TO_PASS} == {want}, r.output[-3000:]
                assert st.get("tests/test_calc.py::test_zero") == "PASS"
                assert sb.exec("ls /tmp/PWNED* /testbed/PWNED* 2>/dev/null; true", timeout=30).output.strip() == ""
        r = subprocess.run(["bash", "-n", str(task / "eval.sh")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)
