"""Every ecosystem behind one seam (`agents.ecosystems.base.Ecosystem`), Python included.

`ECOSYSTEM_MODULES` is the registration: each module (or package) under `agents.ecosystems`
exposes `ECOSYSTEM`. Adding an ecosystem is one module, its data file in `recipes/` and one name
here. `pick_ecosystem` returns the one whose `detect` scores highest for a tree among those
serving the row's language (or all of them without one), or None.
"""

from __future__ import annotations

import importlib

from agents.ecosystems.base import Ecosystem, Plan, PlanRequest, PolyPlan, Route, TestSpec, languages_of
from agents.gitrepo import GitTree
from agents.models import canonical_language

ECOSYSTEM_MODULES: tuple[str, ...] = ("python", "node", "golang", "rust", "java", "cfamily", "php", "ruby")
"""Modules under `agents.ecosystems` providing an `ECOSYSTEM` object, in tie-break order."""


def ecosystems() -> list[Ecosystem]:
    """Every registered ecosystem object."""
    return [importlib.import_module(f"agents.ecosystems.{m}").ECOSYSTEM for m in ECOSYSTEM_MODULES]


def by_name(name: str) -> Ecosystem | None:
    """The registered ecosystem called `name` (`python`, `node`, `go`, ...), or None."""
    return next((e for e in ecosystems() if e.name == name), None)


def pick_ecosystem(tree: GitTree, language: str | None) -> Ecosystem | None:
    """The ecosystem for `tree` (the instance's `language` as a constraint: only ecosystems
    serving it compete), or None when none claims it."""
    lang = canonical_language(language)
    best, score = None, 0
    for eco in ecosystems():
        if lang and lang not in languages_of(eco):
            continue
        s = eco.detect(tree, language)
        if s > score:
            best, score = eco, s
    return best


__all__ = ["ECOSYSTEM_MODULES", "Ecosystem", "Plan", "PlanRequest", "PolyPlan", "Route", "TestSpec", "by_name",
           "ecosystems", "pick_ecosystem"]
