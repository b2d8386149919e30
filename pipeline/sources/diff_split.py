"""The sources' test/code split of a PR diff, by the one test-path rule set (`envpool.testpaths`).

A PR's diff becomes SWE-bench's `patch` (the gold fix) and `test_patch` (test code and test
infrastructure) by `envpool.patches.split_by_rules`: a file section goes to the test_patch when
a path it names is a test path (a test folder, a test module's name, a runner's file such as
conftest.py or jest.config.js) or when it changes runner configuration in a shared file (a
`[tool:pytest]` section, package.json's `"jest"` key, CMake `add_test`). The rules are data
(`envpool/testpaths.yaml`) shared with the minter, which refuses a fix that touches them
(`invalid_task`), and with the reset before grading; `SplitConfig` (config.py) picks the
ecosystems and adds globs. The test infrastructure the split moved is recorded in the row
(`moved_to_test_patch`). Known limit: Rust unit tests live inside `src/*.rs` (`#[cfg(test)]`).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from envpool.patches import Split, file_sections, files_in_patch, split_by_rules
from envpool.testpaths import TestPathRules, groups_for, packaged_rules

__all__ = ["DEFAULT_RULES", "Split", "TestPathRules", "config_only", "default_rules", "ecosystem_groups",
           "file_sections", "rules", "split", "split_diff"]


def _known() -> dict[str, list[str]]:
    data = packaged_rules()
    known = {g: [g] for g in data["groups"]}
    for lang in data.get("languages") or {}:
        known[lang] = groups_for(lang) or list(data["groups"])
    return known


DEFAULT_RULES: dict[str, list[str]] = _known()
"""Ecosystem or language name a split may select (`SplitConfig.ecosystems`) -> the groups of the
rule set it stands for."""


def ecosystem_groups(ecosystems: Iterable[str] | None) -> list[str] | None:
    """The rule groups of `ecosystems` (language or group names, `DEFAULT_RULES`), in order,
    unique; None (every group) for None. Raises KeyError for an unknown name."""
    if ecosystems is None:
        return None
    out: list[str] = []
    for e in ecosystems:
        out += [g for g in DEFAULT_RULES[e.lower()] if g not in out]
    return out


def rules(ecosystems: Iterable[str] | None = None, *, extra_dirs: Iterable[str] = (),
          extra_names: Iterable[str] = (), extra_paths: Iterable[str] = ()) -> TestPathRules:
    """`TestPathRules` of `ecosystems` (None: all) plus extra test folders, names and path globs."""
    return TestPathRules(None, ecosystem_groups(ecosystems), extra_dirs=extra_dirs, extra_names=extra_names,
                         extra_paths=extra_paths)


@lru_cache(maxsize=1)
def default_rules() -> TestPathRules:
    """`TestPathRules` over every group of the rule set (shared, immutable)."""
    return TestPathRules()


def split(diff: str, rules: TestPathRules | None = None, base=None) -> Split:
    """`envpool.patches.split_by_rules`: (patch, test_patch, moved) of a PR diff; `base(path) ->
    str | None`: a file's text at the PR's base, so a runner section far above a change of a shared
    configuration file still counts (without it the hunks alone decide)."""
    return split_by_rules(diff, rules or default_rules(), base)


def split_diff(diff: str, rules: TestPathRules | None = None) -> tuple[str, str]:
    """(patch, test_patch) of a PR diff, file sections verbatim and in order (`split`)."""
    s = split(diff, rules)
    return s.patch, s.test_patch


def config_only(test_patch: str, rules: TestPathRules | None = None) -> str | None:
    """The paths of `test_patch` when every one is a shared configuration file whose runner
    section it changes (`TestPathRules.kind` ``config``: a ``[tool.pytest]`` table of
    pyproject.toml, package.json's ``"jest"`` key) -- no test file, no test infrastructure --
    else None. Such a unit has no test to fail before and pass after (rule S19: a tool's
    autoupdate that reorders pyproject.toml was accepted and minted to `tests_not_run`)."""
    rules = rules or default_rules()
    paths = files_in_patch(test_patch)
    if paths and all(rules.kind(p) == "config" for p in paths):
        return ", ".join(paths[:5])
    return None
