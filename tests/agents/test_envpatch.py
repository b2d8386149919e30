"""EnvPatch decisions on a FakeSandbox (no Docker): the reused environment is synced with the
dependencies this commit declares before the probe, and falls back to `--no-deps` when the
sync does not resolve.

Regression: pytest 4.5/4.6 minted in the environment of pytest 8.0 (dev set, warm run) needed
six, atomicwrites, py, packaging and importlib-metadata; re-installed `--no-deps`, the probe
named one missing module per round and the candidate was given up after two rounds.
"""

from __future__ import annotations

import re

from agents.analysis import analyze_python
from agents.envpatch import EnvPatch
from agents.python_plan import choose_python
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec
from tests.agents.test_python_rules import make_tree, utc

DEPS = ["six", "atomicwrites", "py"]
FILES = {"setup.py": "from setuptools import setup\nsetup(name='p', version='4.5', packages=['p'], "
                     f"install_requires={DEPS!r}, extras_require={{'testing': ['mock']}})\n",
         "requirements-test.txt": "pytest==3.0.7\n",
         "p/__init__.py": "import six, atomicwrites, py\n",
         "tests/test_p.py": "def test_x():\n    pass\n"}
PROBE = r"pytest --collect-only"
INSTALL = r"uv pip install"


def envpatch(tmp_path, sb: FakeSandbox, rounds: int = 2) -> EnvPatch:
    tree = make_tree(tmp_path, FILES)
    profile = analyze_python(tree)
    choice = choose_python(profile, utc("2019-06-01T00:00:00"), ["3.11"])  # the candidate's interpreter
    return EnvPatch(sb, tree, profile, choice, utc("2019-06-01T00:00:00"), "4.5", rounds=rounds)


def fake_env(sync_resolves: bool = True) -> tuple[FakeSandbox, set[str]]:
    """A candidate environment without DEPS: installs with dependencies add them (unless
    `sync_resolves` is False: the resolver fails); the probe names the first missing one."""
    sb = FakeSandbox(SandboxSpec(image="cand"))
    have: set[str] = set()

    def install(cmd: str, _sb) -> tuple[int, str]:
        if "--no-deps" in cmd:
            return 0, "Installed 1 package"
        if "-e" in cmd.split() and not sync_resolves:
            return 1, "error: No solution found when resolving dependencies: conflicting requirements"
        if "-e" in cmd.split():
            have.update(DEPS)
        have.update(d for d in DEPS if re.search(rf"(^|\s|'){d}($|\s|')", cmd))
        return 0, "Installed packages"

    def probe(cmd: str, _sb) -> tuple[int, str]:
        missing = [d for d in DEPS if d not in have]
        return (2, f"ModuleNotFoundError: No module named '{missing[0]}'") if missing else (0, "1 test collected")

    sb.on(INSTALL, install).on(PROBE, probe)
    return sb, have


def test_reuse_syncs_the_dependencies_of_this_commit_before_probing(tmp_path):
    sb, have = fake_env()
    patch = envpatch(tmp_path, sb)
    assert patch.run(["tests/test_p.py"], "")
    assert patch.synced and have == set(DEPS)
    installs = [c for c in sb.commands if c.startswith("uv pip install")]
    assert len(installs) == 1 and "--no-deps" not in installs[0]
    # the project with its test extras and requirement file, pytest pin raised to the 3.11 floor
    assert "-e '.[testing]' -C editable_mode=compat" in installs[0]
    assert "pytest==3.0.7" not in installs[0] and "'pytest>=7.2'" in installs[0]
    assert patch.commands == installs  # the increment is the sync itself
    assert sum(1 for c in sb.commands if re.search(PROBE, c)) == 1


def test_reuse_falls_back_to_no_deps_and_repairs_within_the_rounds(tmp_path):
    sb, have = fake_env(sync_resolves=False)
    patch = envpatch(tmp_path, sb, rounds=3)
    assert patch.run(["tests/test_p.py"], "")
    assert not patch.synced
    installs = [c for c in sb.commands if c.startswith("uv pip install")]
    assert any("--no-deps -e ." in c for c in installs)
    # the probe's missing modules installed one per round (the sync is not retried)
    assert [d for d in DEPS if any(re.search(rf"\s'?{d}'?$", c) for c in installs)] == DEPS
    assert have == set(DEPS)


def test_reuse_gives_up_when_the_rounds_run_out(tmp_path):
    sb, _ = fake_env(sync_resolves=False)
    patch = envpatch(tmp_path, sb, rounds=1)
    assert not patch.run(["tests/test_p.py"], "")
    assert "still fails after 1 repair" in patch.reason and "No module named 'atomicwrites'" in patch.reason
