"""The test/code split: per-ecosystem path rules (data) and the diff split."""

from __future__ import annotations

import pytest

from envpool.patches import is_test_path
from pipeline.sources.crawl_config import SplitConfig
from envpool.patches import file_sections
from pipeline.sources.diff_split import default_rules, rules, split_diff

TESTS = [
    "tests/test_core.py", "pkg/test_utils.py", "pkg/core_test.py", "conftest.py",
    "tests/fixtures/data.json", "testing/helpers.py",
    "pkg/server/handler_test.go", "pkg/parse/testdata/input.txt",
    "src/app.spec.ts", "src/components/Button.test.tsx", "lib/util.test.js", "src/__tests__/a.js",
    "src/__mocks__/fs.js", "e2e/login.cy.ts",
    "core/src/test/java/org/x/ParserTest.java", "src/test/resources/cfg.xml", "src/main/java/FooIT.java",
    "tests/integration.rs", "spec/models/user_spec.rb", "tests/Unit/UserTest.php",
    "App.Tests/CalcTests.cs", "src/test/kotlin/FooTest.kt",
]
CODE = [
    "src/pkg/core.py", "setup.py", "pkg/server/handler.go", "src/app.ts", "lib/util.js",
    "core/src/main/java/org/x/Parser.java", "src/lib.rs", "app/models/user.rb", "README.md",
    "docs/testing.md", "locales/it/messages.json", "src/contest.py", "pkg/attest/sign.go",
]


@pytest.mark.parametrize("path", TESTS)
def test_test_paths(path):
    assert default_rules().is_test(path)


@pytest.mark.parametrize("path", CODE)
def test_code_paths(path):
    assert not default_rules().is_test(path)


@pytest.mark.parametrize("path", [p for p in TESTS + CODE if p != "locales/it/messages.json"])
def test_agrees_with_envpool_where_envpool_says_test(path):
    # envpool's rules are a subset (bar the deliberate `it/` difference): ours must not lose any
    if is_test_path(path):
        assert default_rules().is_test(path)


def test_rules_follow_the_config():
    go_only = SplitConfig(ecosystems=["go"]).rules()
    assert go_only.is_test("x/y_test.go") and not go_only.is_test("src/app.spec.ts")
    custom = SplitConfig(ecosystems=["python"], extra_dirs=["qa"], extra_names=["check_*.py"],
                         extra_paths=["bench/**/fixtures/*"]).rules()
    assert custom.is_test("qa/run.py") and custom.is_test("lib/check_io.py")
    assert custom.is_test("bench/a/b/fixtures/x.bin") and not custom.is_test("bench/x.py")
    with pytest.raises(ValueError):
        SplitConfig(ecosystems=["cobol"])


def _section(path: str, *, old: str | None = None) -> str:
    a = old or path
    rename = f"similarity index 90%\nrename from {a}\nrename to {path}\n" if old else ""
    return f"diff --git a/{a} b/{path}\n{rename}--- a/{a}\n+++ b/{path}\n@@ -1 +1 @@\n-x\n+y\n"


def test_split_keeps_sections_verbatim_and_in_order():
    diff = _section("src/a.py") + _section("tests/test_a.py") + _section("src/b.py")
    patch, test_patch = split_diff(diff)
    assert patch == _section("src/a.py") + _section("src/b.py")
    assert test_patch == _section("tests/test_a.py")
    assert file_sections(diff) == [_section("src/a.py"), _section("tests/test_a.py"), _section("src/b.py")]


def test_a_rename_out_of_tests_is_a_test_section():
    diff = _section("src/helpers.py", old="tests/helpers.py")
    assert split_diff(diff) == ("", diff)


def test_split_uses_the_given_rules():
    diff = _section("pkg/x_test.go") + _section("src/x.spec.ts")
    patch, test_patch = split_diff(diff, rules(["go"]))
    assert "x_test.go" in test_patch and "x.spec.ts" in patch
