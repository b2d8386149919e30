"""Every ecosystem behind one contract (`agents.ecosystems.base.Ecosystem`), Python included.

`ECOSYSTEM_MODULES` is the registration: each package under `agents.ecosystems` exposes
`ECOSYSTEM`, an instance of an `Ecosystem` subclass. Adding an ecosystem is its package (planning,
setup, test configuration, repairs, its data file), its toolchain module, its parser module and one
name here (docs/languages.md, "Adding a language"). `pick_ecosystem` returns the one whose
`detect` scores highest for a tree among those serving the row's language (or all of them without
one), or None. The languages they declare are the vocabulary of the experience memory
(`languages`; `kin`: the languages one ecosystem serves together, which the memory's
`agents.memory.experience.family` shares entries across).
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from agents.ecosystems.base import Ecosystem, Plan, PlanRequest, PolyPlan, Route, TestSpec
from agents.gitrepo import GitTree
from agents.models import canonical_language

ECOSYSTEM_MODULES: tuple[str, ...] = ("python", "node", "golang", "rust", "java", "cfamily", "php", "ruby", "lua")
"""Packages under `agents.ecosystems` providing an `ECOSYSTEM` object, in tie-break order."""


def ecosystems() -> list[Ecosystem]:
    """Every registered ecosystem object."""
    return [importlib.import_module(f"agents.ecosystems.{m}").ECOSYSTEM for m in ECOSYSTEM_MODULES]


def by_name(name: str) -> Ecosystem | None:
    """The registered ecosystem called `name` (`python`, `node`, `go`, ...), or None."""
    return next((e for e in ecosystems() if e.name == name), None)


def serving(language: str) -> list[Ecosystem]:
    """The registered ecosystems whose `languages` include `language` (vocabulary name)."""
    return [e for e in ecosystems() if language in e.languages]


_REGISTERED = ECOSYSTEM_MODULES
"""The registration as written: the vocabulary's source, so a test that narrows `ecosystems()` or
`ECOSYSTEM_MODULES` to one competitor leaves the memory's vocabulary as it is."""


@lru_cache(maxsize=1)
def _registered() -> dict[str, tuple[str, ...]]:
    """Ecosystem name -> its languages, for the registration as written."""
    ecos = [importlib.import_module(f"agents.ecosystems.{m}").ECOSYSTEM for m in _REGISTERED]
    return {e.name: tuple(e.languages) for e in ecos}


def _registered_languages() -> tuple[tuple[str, ...], ...]:
    return tuple(_registered().values())


def languages_of(name: str) -> tuple[str, ...] | None:
    """The languages the registered ecosystem called `name` serves (`node` -> `javascript`,
    `typescript`), or None when no registered ecosystem is called so."""
    return _registered().get(name)


def languages() -> tuple[str, ...]:
    """Every row language a registered ecosystem serves, in registration order."""
    return tuple(dict.fromkeys(lang for served in _registered_languages() for lang in served))


def kin(language: str) -> tuple[str, ...]:
    """`language` and the other languages of the registered ecosystems serving it (`typescript` ->
    `typescript`, `javascript`: a TypeScript repository meets npm's problems; `cpp` -> `cpp`, `c`)."""
    return tuple(dict.fromkeys([language, *(lang for served in _registered_languages() if language in served
                                            for lang in served)]))


def pick_ecosystem(tree: GitTree, language: str | None) -> Ecosystem | None:
    """The ecosystem for `tree` (the instance's `language` as a constraint: only ecosystems
    serving it compete), or None when none claims it."""
    lang = canonical_language(language)
    best, score = None, 0
    for eco in ecosystems():
        if lang and lang not in eco.languages:
            continue
        s = eco.detect(tree, language)
        if s > score:
            best, score = eco, s
    return best


__all__ = ["ECOSYSTEM_MODULES", "Ecosystem", "Plan", "PlanRequest", "PolyPlan", "Route", "TestSpec", "by_name",
           "ecosystems", "kin", "languages", "languages_of", "pick_ecosystem", "serving"]
