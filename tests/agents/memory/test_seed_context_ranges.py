"""Issue 30's fresh-user trial: before planning, small Python 3.9/3.11 projects got the Python 3.12
removal seeds (`py-imp-removed-312`, `py-distutils-removed-312`, `py-pkgutil-impimporter`) and
`py-pytest-lineno-alias` (pytest < 6.2.5 on Python >= 3.10); `py-setuptools58-use2to3`
(setuptools < 58) came up for projects declaring setuptools>=61 and `py-setup-py-test-removed`
for projects with no setup.py. A hand-written entry's context may carry the toolchain range, the
files and the package versions it is about (`EntryContext.toolchain` / `files` / `versions`);
retrieval before planning holds it back when the project's known context is outside them
(`retrieve.outside_range`), and the error text still finds it after a failure."""

from __future__ import annotations

import json
import re

import pytest

from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.experience import EntryContext, Experience
from agents.memory.experience_store import SEED_DIR, hand_written
from agents.memory.repo_context import RepoContext
from agents.memory.retrieve import outside_range, ranges_meet

REMOVED_312 = ("py-imp-removed-312", "py-distutils-removed-312", "py-pkgutil-impimporter")


def memory() -> ExperienceMemory:
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.load_seed()
    return mem


def small(toolchain: str | None, files=("pyproject.toml",), declared=None) -> RepoContext:
    """A small Python project that names nose, six, setuptools and pytest (so the entries'
    package context lets them through: only the new ranges decide)."""
    return RepoContext(ecosystem="python", toolchain=toolchain, era=2021, repo="acme/tool", build_systems=["pip"],
                       declared=declared if declared is not None else {"nose": "", "six": "", "setuptools": "",
                                                                     "pytest": ""},
                       files=list(files), frameworks=["pytest"],
                       commands=["uv pip install -e .", "python setup.py test", "pytest -rA"])


def before_ids(mem: ExperienceMemory, ctx: RepoContext) -> set[str]:
    return {h.experience.id for h in mem.retrieve(ctx, k=200)}


def test_the_python_312_removal_entries_wait_for_a_312_toolchain():
    mem = memory()
    on311, on312 = before_ids(mem, small("3.11")), before_ids(mem, small("3.12"))
    assert not set(REMOVED_312) & on311, on311
    assert set(REMOVED_312) <= on312
    assert "py-pytest-lineno-alias" not in before_ids(mem, small("3.9"))
    assert "py-pytest-lineno-alias" in before_ids(mem, small("3.11"))
    assert set(REMOVED_312) <= before_ids(mem, small(None))  # unknown toolchain: not held back


def test_the_error_text_still_finds_them_on_any_toolchain():
    mem = memory()
    errors = {"py-imp-removed-312": "ModuleNotFoundError: No module named 'imp'",
              "py-distutils-removed-312": "ModuleNotFoundError: No module named 'distutils'",
              "py-pytest-lineno-alias": 'TypeError: required field "lineno" missing from alias',
              "py-setup-py-test-removed": "error: invalid command 'test'"}
    for eid, err in errors.items():
        ids = [h.experience.id for h in mem.retrieve_for_error(err, "python", ctx=small("3.9", files=["pyproject.toml"]))]
        assert eid in ids, (eid, ids)


def test_an_entry_about_setup_py_waits_for_a_project_with_one():
    mem = memory()
    assert "py-setup-py-test-removed" not in before_ids(mem, small("3.11", files=["pyproject.toml"]))
    assert "py-setup-py-test-removed" in before_ids(mem, small("3.11", files=["setup.py", "pyproject.toml"]))
    assert "py-setup-py-test-removed" in before_ids(mem, small("3.11", files=[]))  # files unknown


def test_an_entry_about_old_setuptools_waits_for_a_project_that_may_use_it():
    mem = memory()
    deps = {"setuptools": "", "anyjson": ""}
    assert "py-setuptools58-use2to3" in before_ids(mem, small("3.9", declared=deps))
    assert "py-setuptools58-use2to3" in before_ids(mem, small("3.9", declared={**deps, "setuptools": ">=40,<60"}))
    assert "py-setuptools58-use2to3" not in before_ids(mem, small("3.9", declared={**deps, "setuptools": ">=61"}))


def test_outside_range_says_why_and_ranges_meet():
    e = Experience(id="py-x", ecosystem="python", problem="Python 3.12 removed the thing", solution="older Python",
                   error_signature="the thing", context=EntryContext(toolchain=">=3.12", files=["setup.py"],
                                                                     versions={"Set_Up": "<58"}))
    assert outside_range(e, small("3.11")) == "toolchain 3.11 outside >=3.12"
    assert outside_range(e, small("3.12.1", files=["setup.cfg"])) == "none of setup.py"
    assert outside_range(e, small("3.12", files=["setup.py"], declared={"set-up": ">=61"})) == \
        "declares set-up>=61, outside <58"
    assert outside_range(e, small("3.12", files=["setup.py"], declared={"set-up": ""})) == ""
    assert not ranges_meet("<58", ">=61") and ranges_meet("<58", ">=40") and ranges_meet("", "<1")
    assert not ranges_meet(">=7.2", "<7.2") and ranges_meet("<6.2.5", ">=6,<7")
    with pytest.raises(ValueError, match="not a version range"):
        EntryContext(toolchain="py3.12+")


PY_VERSION = re.compile(r"-3\d{1,2}$|\bPython (?:>= ?)?3\.\d+")
"""A seed about a Python release: an id ending in its version (`-312`) or a problem naming one."""
NOT_A_TOOLCHAIN_RANGE = {
    "py-numpy-distutils-removed": "numpy.distutils is gone in NumPy 2 on any Python too",
    "py-pkg-resources-missing": "uv's venvs have no setuptools on any Python, not only 3.12's",
}
"""Seeds naming a Python release that is not the range they are about (with the reason)."""


def range_gaps(entries: list[Experience]) -> list[str]:
    """Python seeds whose id or problem names a Python version but carry no toolchain range."""
    return [e.id for e in entries if e.ecosystem == "python" and PY_VERSION.search(f"{e.id} {e.problem}")
            and not e.context.toolchain and e.id not in NOT_A_TOOLCHAIN_RANGE]


def test_every_seed_about_a_python_release_carries_a_toolchain_range():
    entries = hand_written()
    assert range_gaps(entries) == []
    named = [e.id for e in entries if e.ecosystem == "python" and PY_VERSION.search(f"{e.id} {e.problem}")]
    assert set(REMOVED_312) | {"py-pytest-lineno-alias", "py-time-clock-38"} <= set(named)
    # the check can fail: the imp line as it was before the audit
    raw = next(json.loads(ln) for ln in (SEED_DIR / "python.jsonl").read_text(encoding="utf-8").splitlines()
               if '"py-imp-removed-312"' in ln)
    raw.pop("context")
    assert range_gaps([Experience(**raw)]) == ["py-imp-removed-312"]
    for eid in NOT_A_TOOLCHAIN_RANGE:
        assert eid in {e.id for e in entries}


def test_version_named_seeds_of_other_languages_carry_one_too():
    ids = re.compile(r"^(?:ruby3\d*|php8\d*)-|-jdk\d+|-gcc\d+")
    gaps = [e.id for e in hand_written() if ids.search(e.id) and not e.context.toolchain]
    assert gaps == []


def test_a_toolchain_range_is_retrieval_only():
    seeds = {e.id: e for e in hand_written()}
    assert all(seeds[i].context.derived for i in REMOVED_312)
