"""Ecosystems other than Python, each behind `agents.ecosystems.base.Ecosystem`.

`ECOSYSTEM_MODULES` lists the modules (each exposes `ECOSYSTEM`); `pick_ecosystem` returns the
one whose `detect` scores highest for a tree, or None (then the Python path is used).
"""

from __future__ import annotations

import importlib

from agents.gitrepo import GitTree
from agents.ecosystems.base import Ecosystem, PolyPlan

PYTHON_MARKERS = frozenset({"setup.py", "setup.cfg", "pyproject.toml"})
"""Root files that make a tree without a `language` hint a Python project."""

ECOSYSTEM_MODULES: tuple[str, ...] = ("node", "golang", "rust", "java", "cfamily", "php", "ruby")
"""Modules under `agents.ecosystems` providing an `ECOSYSTEM` object, in tie-break order."""


def ecosystems() -> list[Ecosystem]:
    """Every registered ecosystem object."""
    return [importlib.import_module(f"agents.ecosystems.{m}").ECOSYSTEM for m in ECOSYSTEM_MODULES]


def pick_ecosystem(tree: GitTree, language: str | None) -> Ecosystem | None:
    """The ecosystem for `tree` (the instance's `language` field as a hint; None when absent),
    or None when the tree is a Python project or no ecosystem claims it."""
    if (language or "").lower() == "python":
        return None
    if language is None and tree.file_set & PYTHON_MARKERS:
        return None
    best, score = None, 0
    for eco in ecosystems():
        s = eco.detect(tree, language)
        if s > score:
            best, score = eco, s
    return best


__all__ = ["ECOSYSTEM_MODULES", "Ecosystem", "PolyPlan", "ecosystems", "pick_ecosystem"]
