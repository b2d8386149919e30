"""EnvPatch decisions on a FakeSandbox (no Docker): the reused environment is synced with the
dependencies this commit declares before the probe (with the test extras, else without), and
falls back to `--no-deps` when the sync does not resolve; requirement files only as a repair.

Regression: pytest 4.5/4.6 minted in the environment of pytest 8.0 (dev set, warm run) needed
six, atomicwrites, py, packaging and importlib-metadata; re-installed `--no-deps`, the probe
named one missing module per round and the candidate was given up after two rounds.
"""

from __future__ import annotations

import re

from agents.ecosystems.python.builder import PythonEnvBuilder
from agents.ecosystems.python.profile import analyze_python
from agents.ecosystems.python.python_envpatch import EnvPatch
from agents.ecosystems.python.python_plan import choose_python
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
    return EnvPatch(PythonEnvBuilder(sb, tree, profile, choice, utc("2019-06-01T00:00:00"), "4.5"), rounds=rounds)


def fake_env(sync_resolves: bool = True, extras_resolve: bool = True,
             registry_has_deps: bool = True) -> tuple[FakeSandbox, set[str]]:
    """A candidate environment without DEPS: installs of the project with dependencies add them
    (unless `sync_resolves` is False, or with the extras unless `extras_resolve`: the resolver
    fails); a requirement-file install fails (one of its pins has no release), so does a bare
    install of a dependency unless `registry_has_deps`; the probe names the first missing module."""
    sb = FakeSandbox(SandboxSpec(image="cand"))
    have: set[str] = set()

    def install(cmd: str, _sb) -> tuple[int, str]:
        words = cmd.split()
        if "--no-deps" in words:
            return 0, "Installed 1 package"
        if "pytest>=7.2'" in cmd:
            return 1, "error: Because pytest-pinned-plugin==0.1 has no usable wheels, requirements are unsatisfiable"
        if "-e" in words and (not sync_resolves or ("[testing]" in cmd and not extras_resolve)):
            return 1, "error: No solution found when resolving dependencies: conflicting requirements"
        if "-e" in words:
            have.update(DEPS)
        elif not registry_has_deps:
            return 1, f"error: {words[-1]} was not found in the package registry"
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
    assert installs[0].endswith("-e '.[testing]' -C editable_mode=compat")  # no requirement file
    assert patch.commands == installs  # the increment is the sync itself
    assert sum(1 for c in sb.commands if re.search(PROBE, c)) == 1


def test_reuse_syncs_without_extras_when_they_do_not_resolve(tmp_path):
    sb, have = fake_env(extras_resolve=False)
    patch = envpatch(tmp_path, sb)
    assert patch.run(["tests/test_p.py"], "")
    assert patch.synced and have == set(DEPS)
    assert patch.commands == [c for c in sb.commands if c.endswith(" -e . -C editable_mode=compat")
                              and "--no-deps" not in c]


def test_reuse_falls_back_to_no_deps_and_repairs_within_the_rounds(tmp_path):
    sb, have = fake_env(sync_resolves=False)
    patch = envpatch(tmp_path, sb, rounds=3)
    assert patch.run(["tests/test_p.py"], "")
    assert not patch.synced
    installs = [c for c in sb.commands if c.startswith("uv pip install")]
    assert any("--no-deps -e ." in c for c in installs)
    # the probe's missing modules installed one per round
    assert [d for d in DEPS if any(re.search(rf"\s'?{d}'?$", c) for c in installs)] == DEPS
    assert have == set(DEPS)


def test_requirement_files_are_a_repair_round_with_test_pins_relaxed(tmp_path):
    sb, _ = fake_env(sync_resolves=False, registry_has_deps=False)
    patch = envpatch(tmp_path, sb, rounds=2)
    assert not patch.run(["tests/test_p.py"], "")
    reqs = [c for c in sb.commands if "pytest" in c and c.startswith("uv pip install")]
    assert reqs and "pytest==3.0.7" not in reqs[0] and "'pytest>=7.2'" in reqs[0]
    assert "-e '.[testing]' -C editable_mode=compat" in reqs[0]


def test_reuse_gives_up_when_the_rounds_run_out(tmp_path):
    sb, _ = fake_env(sync_resolves=False)
    patch = envpatch(tmp_path, sb, rounds=1)
    assert not patch.run(["tests/test_p.py"], "")
    assert "still fails after 1 repair" in patch.reason and "No module named 'atomicwrites'" in patch.reason
