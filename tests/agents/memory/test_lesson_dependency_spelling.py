"""Review rv86: `learn.lesson_context` keys a lesson on the declared dependencies its error names.
The declared names are normalised (`RepoContext.dependency_names`: `[-_.]` -> `-`), the error text
is not, so a dependency whose spelling has a dot or an underscore never matched: Go's module paths
(`github.com/mattn/go-sqlite3` -> `github-com/mattn/go-sqlite3`), Python's import names
(`typing_extensions`, `zope.interface`). Such lessons could serve another repository only by the
build system (`learned_match`), never by the dependency they are about."""

from __future__ import annotations

import pytest

from agents.memory.learn import lesson_context
from agents.memory.repo_context import RepoContext


@pytest.mark.parametrize(("eco", "declared", "error", "want"), [
    ("go", "github.com/mattn/go-sqlite3",
     "main.go:5:2: missing go.sum entry for module providing package github.com/mattn/go-sqlite3 (imported by x)",
     "github-com/mattn/go-sqlite3"),
    ("python", "typing_extensions", "ModuleNotFoundError: No module named 'typing_extensions'", "typing-extensions"),
    ("python", "zope.interface", "ImportError: cannot import name 'implementer' from 'zope.interface'",
     "zope-interface"),
    ("python", "numpy", "ModuleNotFoundError: No module named 'numpy.core._multiarray_umath'", "numpy"),
])
def test_a_declared_dependency_the_error_names_keys_the_lesson_whatever_its_spelling(eco, declared, error, want):
    ctx = RepoContext(ecosystem=eco, toolchain="1", era=2022, repo="a/b", build_systems=["x"], declared={declared: ""})
    assert want in lesson_context([], error, "a/b", ctx).dependencies
