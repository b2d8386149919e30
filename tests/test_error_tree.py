"""One exception root (issue 28): every public exception class of swemint's packages derives from
`envpool.errors.SwemintError`, but for the few the tree's docstring names as outside it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from envpool.errors import SwemintError

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = {"envpool.quoting.UnsafePath", "envpool.testrun.slim.TooLarge",
           "envpool.testrun.plugins.swemint_pytest_report.SwemintTestTimeout",
           "envpool.testpaths.RuleSetError"}
"""Named in `envpool.errors`' docstring: a ValueError quoting cannot root (it formats the root's
messages), a private size cut-off, the plugin that runs inside the sandbox without swemint, and
the test-path rules' error (envpool.testpaths is stdlib only: the status tool in every image runs it)."""


def exception_classes():
    for top in ("envpool", "agents", "pipeline", "swemint"):
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and any(
                        ast.unparse(b).split(".")[-1].endswith(("Error", "Exception", "Exhausted",
                                                                  "Unavailable", "Refused", "Locked"))
                        for b in node.bases):
                    yield module, node.name


def test_every_public_exception_derives_from_the_one_root():
    found = list(exception_classes())
    assert len(found) >= 20
    stray = []
    for module, name in found:
        if f"{module}.{name}" in OUTSIDE:
            continue
        cls = getattr(importlib.import_module(module), name)
        if not issubclass(cls, SwemintError):
            stray.append(f"{module}.{name}")
    assert stray == []


def test_errors_that_are_also_builtin_kinds_stay_catchable_as_those():
    from agents.memory.experience_store import UnknownExperience
    from pipeline.sources.source_errors import SourceError
    from pipeline.store import WorkdirLocked

    assert issubclass(WorkdirLocked, BlockingIOError) and issubclass(UnknownExperience, KeyError)
    assert str(SourceError("boom", repo="o/r", item="pull 1")) == "o/r pull 1: boom"
