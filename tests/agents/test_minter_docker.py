"""End-to-end minting of small repositories the tests write themselves (real Docker, PyPI).

Cases from the issue's "must hold" list: a setuptools_scm project in a mirror without tags,
a setup step that edits a tracked file, and a 2020 commit whose unbounded requirement (numpy)
must resolve to a release of that era that has a wheel for the interpreter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.minter import mint_instance
from agents.models import Instance
from envpool.testrun.status import TestStatus
from pipeline.demo import build_repository
from tests.session import SESSION, ENV_REPOSITORY

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def write_repo(root: Path, name: str, base: dict[str, str], fix: dict[str, str], tests: dict[str, str],
               created_at: str, version: str | None) -> Path:
    """Lay out a demo-style data dir (base/, fix/, tests/, meta.json) under `root`."""
    d = root / f"acme__{name}"
    for sub, files in (("base", base), ("fix", fix), ("tests", tests)):
        for rel, text in files.items():
            p = d / sub / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    meta = {"number": 7, "title": f"{name} bug", "problem_statement": f"{name} is wrong", "created_at": created_at,
            "version": version, "base_message": "base", "test_message": "tests", "fix_message": "fix",
            "expected_outcome": "verified", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}
    (d / "meta.json").write_text(json.dumps(meta))
    return d


@pytest.fixture
def minted(tmp_path, python_image, docker_client):
    """mint(data_dir) -> (instance, result); environment images are removed afterwards."""
    made: list[str] = []

    def run(data_dir: Path):
        inst, res = mint(tmp_path, data_dir)
        if res.image:
            made.append(res.image)
        return inst, res

    yield run
    for image in made:
        docker_client.images.remove(image, force=True)


def mint(tmp_path: Path, data_dir: Path):
    mirrors = tmp_path / "mirrors"
    row = build_repository(data_dir, mirrors)
    inst = Instance(**row)
    repo_path = mirrors / inst.repo.replace("/", "+") / "repo"
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-minter-{SESSION}", image_repository=ENV_REPOSITORY)
    res = mint_instance(inst, repo_path, cfg)
    return inst, res


def image_exec(docker_client, image: str, cmd: str) -> str:
    out = docker_client.containers.run(image, ["bash", "-c", cmd], remove=True, network_mode="none",
                                       labels={"swemint.run": "test-minter"})
    return out.decode()


def pyproject(build_requires: str, name: str, project: str, tail: str = "") -> str:
    """A setuptools pyproject.toml: `build_requires` (TOML list items), the [project] `name`
    and further `project` lines, then `tail`."""
    return (f'[build-system]\nrequires = [{build_requires}]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "{name}"\n{project}{tail}')


SCM_BASE = {
    "pyproject.toml": pyproject('"setuptools>=64", "setuptools_scm>=7"', "scmpkg",
                                'dynamic = ["version"]\nrequires-python = ">=3.8"\n', "\n[tool.setuptools_scm]\n"),
    "scmpkg/__init__.py": "def double(x):\n    return x + x + 1\n",
    "tests/test_double.py": "from scmpkg import double\n\n\ndef test_zero_ok():\n    assert double(0) in (0, 1)\n",
}


def test_setuptools_scm_without_tags_installs_with_the_instance_version(tmp_path, minted, docker_client):
    d = write_repo(tmp_path / "data", "scmpkg", SCM_BASE,
                   fix={"scmpkg/__init__.py": "def double(x):\n    return x + x\n"},
                   tests={"tests/test_double.py": SCM_BASE["tests/test_double.py"]
                          + "\n\ndef test_two():\n    assert double(2) == 4\n"},
                   created_at="2024-03-01T00:00:00Z", version="1.2")
    inst, res = minted(d)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/test_double.py::test_two"]
    assert res.PASS_TO_PASS == ["tests/test_double.py::test_zero_ok"]
    assert "SETUPTOOLS_SCM_PRETEND_VERSION" in res.setup_script
    out = image_exec(docker_client, res.image,
                     "/opt/venv/bin/python -c 'import importlib.metadata as m; print(m.version(\"scmpkg\"))'")
    assert out.strip() == "1.2.0"
    assert res.dockerfile.startswith("# swemint environment") and "FROM " in res.dockerfile
    # the stored test command is reproducible and runs in the published image as is (the report
    # plugin is baked in): it resets the test files, applies the test_patch itself, and prints
    # the plugin's frames, which `pytest_channel` reads (signed when a key is given on stdin)
    assert "/tmp/swemint/run/" in res.test_command and not re.search(r"-[0-9a-f]{8}/", res.test_command)
    assert res.parser == "pytest_channel" and res.anomalies == [] and res.test_infra_files == []
    out = image_exec(docker_client, res.image, res.test_command + " 2>&1 || true")
    assert "1 passed" in out and "Error importing plugin" not in out
    from envpool.testrun.registry import get_parser

    rep = get_parser("pytest_channel")(out)
    assert rep.tests_ran and rep.statuses == {"tests/test_double.py::test_zero_ok": TestStatus.PASSED,
                                              "tests/test_double.py::test_two": TestStatus.FAILED}
    signed = _run_with_key(docker_client, res.image, inst.patch, res.test_command)
    assert signed.tests_ran and set(signed.statuses.values()) == {TestStatus.PASSED}
    # warm path: the pooled environment is reused as is (no setup), and kept afterwards
    repo_path = tmp_path / "mirrors" / inst.repo.replace("/", "+") / "repo"
    cfg = MintConfig(workdir=tmp_path / "work2", run_id=f"test-minter-{SESSION}", image_repository=ENV_REPOSITORY)
    warm = mint_instance(inst, repo_path, cfg, env=res.env)
    assert warm.outcome == "verified", warm.reason
    assert warm.reused_from == inst.instance_id and warm.timings["setup"] == 0.0
    assert (warm.FAIL_TO_PASS, warm.PASS_TO_PASS) == (res.FAIL_TO_PASS, res.PASS_TO_PASS)
    assert docker_client.images.get(res.image)


def _run_with_key(docker_client, image: str, patch: str, test_command: str):
    """What a harness grading a patch does with a row: apply it, run the row's test_command
    with a fresh key on stdin, and read the signed frames with `pytest_channel`."""
    import base64

    from envpool.testrun.channel import key_line, new_key
    from envpool.testrun.parsers import parse_pytest_channel

    key = new_key()
    b64 = base64.b64encode(patch.encode()).decode()
    script = f"cd /testbed && echo {b64} | base64 -d | git apply - && {test_command}"
    c = docker_client.containers.create(image, ["bash", "-c", script], stdin_open=True, network_mode="none",
                                        labels={"swemint.run": "test-minter"})
    try:
        sock = c.attach_socket(params={"stdin": 1, "stream": 1})
        c.start()
        sock._sock.sendall(key_line(key))
        sock._sock.close()
        c.wait(timeout=300)
        out = c.logs(stdout=True, stderr=True)
    finally:
        c.remove(force=True)
    return parse_pytest_channel(out, key)


FORGER_BASE = {
    "setup.py": "from setuptools import setup\nsetup(name='forger', version='0.1', packages=['forger'])\n",
    "forger/__init__.py": "def add(a, b):\n    return a - b\n",
    "tests/test_add.py": "from forger import add\n\n\ndef test_zero():\n    assert add(1, 0) == 1\n",
}
FORGER_FIX = '''import atexit, glob, json, os


def add(a, b):
    return a - b  # still wrong: the "fix" forges the report instead


def _rewrite_report():
    env = open("/proc/self/environ", "rb").read().split(b"\\0")
    paths = [e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"SWEMINT_REPORT=")]
    paths += glob.glob("/tmp/swemint/*/report.jsonl")
    pid = os.getpid()
    for p in set(paths):
        with open(p, "w") as f:
            for r in [{"kind": "session_start", "pid": pid}, {"kind": "collected", "count": 2, "pid": pid}]:
                f.write(json.dumps(r) + "\\n")
            for t in ("tests/test_add.py::test_zero", "tests/test_add.py::test_add"):
                f.write(json.dumps({"kind": "test", "nodeid": t, "when": "call", "outcome": "passed", "pid": pid}) + "\\n")
            f.write(json.dumps({"kind": "session_finish", "exitstatus": 0, "pid": pid}) + "\\n")
    for fd in range(1, 32):  # and whatever could be a report channel
        try:
            os.write(fd, b"\\x1eSWR1 2 - eyJraW5kIjogInRlc3QifQ==\\n")
        except OSError:
            pass
    os._exit(0)


atexit.register(_rewrite_report)
'''


def test_a_patch_rewriting_the_report_at_exit_is_not_verified_and_the_row_says_why(tmp_path, minted):
    """Issue 11: such a patch ended `verified` (its failing test became FAIL_TO_PASS)."""
    d = write_repo(tmp_path / "data", "forger", FORGER_BASE, fix={"forger/__init__.py": FORGER_FIX},
                   tests={"tests/test_add.py": FORGER_BASE["tests/test_add.py"]
                          + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"},
                   created_at="2024-03-01T00:00:00Z", version="0.1")
    inst, res = minted(d)
    assert res.outcome == "tests_not_run" and res.FAIL_TO_PASS == [], (res.outcome, res.reason)
    assert "tampered" in res.reason
    assert any(a.startswith("after#1: tamper: ") for a in res.anomalies), res.anomalies
    assert res.image == "" and res.env is None  # nothing of it is pooled


MONKEY_BASE = {
    "setup.py": "from setuptools import setup\nsetup(name='pmonkey', version='0.1', packages=['pmonkey'])\n",
    "pmonkey/__init__.py": "def mean(xs):\n    return sum(xs) / len(xs) + 0.5\n",
    "tests/test_base.py": "from pmonkey import mean\n\n\ndef test_one():\n    assert mean([1]) > 0\n",
}
# attacker trial 8's route: no test path touched; the package, imported by the tests, wraps
# pytest's report making so that the failing test reports passed
MONKEY_FORGED = MONKEY_BASE["pmonkey/__init__.py"] + """
import sys as _s
_r = _s.modules.get('_pytest.reports')
if _r is not None:
    _f = _r.TestReport.from_item_and_call.__func__

    def _g(cls, item, call):
        rep = _f(cls, item, call)
        if rep.when == 'call' and rep.failed:
            rep.outcome, rep.longrepr = 'passed', None
        return rep
    _r.TestReport.from_item_and_call = classmethod(_g)
"""


@pytest.mark.parametrize("fix", ["forged", "gold"])
def test_a_fix_rewiring_pytest_in_process_is_refused_and_the_real_fix_verifies(tmp_path, minted, fix):
    """Issue 24 item 2 (the fix may not touch what grades it): the trial-8 patch ended `verified`
    with a forged FAIL_TO_PASS; the plugin's tripwire now sees the replaced internals."""
    init = MONKEY_FORGED if fix == "forged" else "def mean(xs):\n    return sum(xs) / len(xs)\n"
    d = write_repo(tmp_path / "data", "pmonkey", MONKEY_BASE, fix={"pmonkey/__init__.py": init},
                   tests={"tests/test_mean.py": "from pmonkey import mean\n\n\ndef test_mean():\n"
                                                "    assert mean([1, 2, 3]) == 2.0\n"},
                   created_at="2024-03-01T00:00:00Z", version="0.1")
    inst, res = minted(d)
    if fix == "gold":
        assert res.outcome == "verified", res.reason
        assert res.FAIL_TO_PASS == ["tests/test_mean.py::test_mean"] and res.anomalies == []
        return
    assert res.outcome == "tests_not_run" and res.FAIL_TO_PASS == [], (res.outcome, res.reason)
    assert "tampered" in res.reason and "TestReport.from_item_and_call" in res.reason, res.reason
    assert any(a.startswith("after#1: tamper: ") and "rewired pytest in-process" in a for a in res.anomalies), \
        res.anomalies
    assert res.image == "" and res.env is None

EDIT_BASE = {
    "setup.py": """import datetime, pathlib
from setuptools import setup
# a build step that rewrites a tracked file (as versioneer-like tools do)
pathlib.Path("editpkg/_build.py").write_text("BUILT = %r\\n" % datetime.datetime.now().isoformat())
setup(name="editpkg", version="0.1", packages=["editpkg"])
""",
    "editpkg/__init__.py": "def inc(x):\n    return x\n",
    "editpkg/_build.py": "BUILT = None\n",
    "tests/test_inc.py": "from editpkg import inc\n\n\ndef test_type():\n    assert isinstance(inc(1), int)\n",
}


def test_setup_edit_of_a_tracked_file_never_leaks_into_the_diff(tmp_path, minted, docker_client):
    d = write_repo(tmp_path / "data", "editpkg", EDIT_BASE,
                   fix={"editpkg/__init__.py": "def inc(x):\n    return x + 1\n"},
                   tests={"tests/test_inc.py": EDIT_BASE["tests/test_inc.py"]
                          + "\n\ndef test_inc():\n    assert inc(1) == 2\n"},
                   created_at="2023-05-01T00:00:00Z", version="0.1")
    inst, res = minted(d)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/test_inc.py::test_inc"]
    assert "_build.py" not in inst.patch and "_build.py" not in inst.test_patch
    # the environment's working tree is clean: the edit is committed apart from base_commit
    status = image_exec(docker_client, res.image, "cd /testbed && git status --porcelain --untracked-files=no")
    assert status.strip() == ""
    log = image_exec(docker_client, res.image, "cd /testbed && git log --format=%s")
    assert "swemint: environment setup edits" in log
    traj = Path(res.trajectory_path).read_text()
    assert "tracked-edits" in traj


OLD_BASE = {
    "setup.py": "from setuptools import setup\nsetup(name='oldnum', version='0.3', packages=['oldnum'],"
                " install_requires=['numpy'])\n",
    "oldnum/__init__.py": "import numpy as np\n\n\ndef mean(xs):\n    return float(np.sum(xs)) / (len(xs) + 1)\n",
    "tests/test_mean.py": "from oldnum import mean\n\n\ndef test_single():\n    assert mean([0]) == 0\n",
}


def test_2020_commit_resolves_an_unbounded_requirement_to_a_release_of_its_era(tmp_path, minted):
    d = write_repo(tmp_path / "data", "oldnum", OLD_BASE,
                   fix={"oldnum/__init__.py": "import numpy as np\n\n\ndef mean(xs):\n    return float(np.mean(xs))\n"},
                   tests={"tests/test_mean.py": OLD_BASE["tests/test_mean.py"]
                          + "\n\ndef test_two():\n    assert mean([1, 3]) == 2\n"},
                   created_at="2020-06-01T00:00:00Z", version="0.3")
    inst, res = minted(d)
    assert res.outcome == "verified", res.reason
    assert res.interpreter == "3.9"  # era 3.8 is not installable here: the nearest, recorded
    assert any("3.8 wanted" in s for s in res.substitutions)
    numpy = [line for line in res.installed_packages.splitlines() if line.startswith("numpy==")]
    assert numpy, res.installed_packages
    major, minor = (int(x) for x in numpy[0].split("==")[1].split(".")[:2])
    # newest numpy with cp39 wheels around then (1.19.3+, 2020-10 .. 2021-07), never 2.x
    assert (1, 19) <= (major, minor) <= (1, 21)


CEXT_SETUP = """from setuptools import Extension, setup
from Cython.Build import cythonize

setup(ext_modules=cythonize([Extension("bottleneck._fast", ["bottleneck/_fast.pyx"])]))
"""
CEXT_BASE = {
    # named like a package of HEAVY_COMPILED (wheels only for dependencies): the project itself
    # must still build from source, with Cython from a wheel
    "pyproject.toml": pyproject('"setuptools>=64", "cython>=3"', "bottleneck",
                                'version = "0.1.0"\nrequires-python = ">=3.9"\n'),
    "setup.py": CEXT_SETUP,
    "bottleneck/__init__.py": "from bottleneck._fast import add\n\n\ndef twice(x):\n    return add(x, x) + 1\n",
    "bottleneck/_fast.pyx": "def add(long a, long b):\n    return a + b\n",
    "tests/test_fast.py": "from bottleneck import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}


def test_the_projects_own_c_extension_builds_from_source_while_dependencies_stay_wheels_only(tmp_path, minted,
                                                                                             docker_client):
    """astropy ended env_failed with "Building source distributions for `astropy` is disabled":
    the wheels-only rule for compiled dependencies was applied to the project itself. A project
    named like one of them (`bottleneck`) with a Cython extension now builds in /testbed, its
    extension imports on both sides, and `--only-binary` still covers the dependencies."""
    d = write_repo(tmp_path / "data", "bottleneck", CEXT_BASE,
                   fix={"bottleneck/__init__.py": CEXT_BASE["bottleneck/__init__.py"].replace(" + 1", "")},
                   tests={"tests/test_fast.py": CEXT_BASE["tests/test_fast.py"]
                          + "\n\ndef test_twice():\n    from bottleneck import twice\n    assert twice(4) == 8\n"},
                   created_at="2024-09-01T00:00:00Z", version="0.1")
    inst, res = minted(d)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/test_fast.py::test_twice"]
    assert res.PASS_TO_PASS == ["tests/test_fast.py::test_add"]
    installs = [line for line in res.setup_script.splitlines() if line.startswith("uv pip install")]
    assert installs and all("--only-binary bottleneck" not in line for line in installs)
    assert any("--only-binary numpy" in line for line in installs)
    so = image_exec(docker_client, res.image, "ls /testbed/bottleneck/")
    assert re.search(r"_fast\.cpython-\d+.*\.so", so), so
