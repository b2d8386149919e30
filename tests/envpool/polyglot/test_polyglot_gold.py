"""The gold matcher against SWE-bench Multilingual's real gold ids.

tests/data/polyglot/swebench_multilingual_gold.json is an extract (extract_gold.py) of every
instance of the 13 non-Python repositories of the dev set: gold FAIL_TO_PASS / PASS_TO_PASS and,
per test_patch file, its path and the test functions it shows. For each gold FAIL_TO_PASS id the
test builds the id *our* parser would produce -- the runner's full form -- from the gold id and
the test_patch, by the per-repository rule written out in `ours_for`, and checks that it matches
its gold id and no PASS_TO_PASS id of the instance.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import pytest

from envpool.testrun.polyglot.gold import exact_form_agreement, gold_forms, gold_match, matched
from envpool.testrun.polyglot.php import dox_method

DATA = Path(__file__).resolve().parents[2] / "data" / "polyglot" / "swebench_multilingual_gold.json"
INSTANCES = json.loads(DATA.read_text(encoding="utf-8"))
GO_MODULES = {"gin-gonic/gin": "github.com/gin-gonic/gin",
              "caddyserver/caddy": "github.com/caddyserver/caddy/v2"}


def _go_package(inst: dict, test: str) -> str:
    """Directory of the _test.go file defining `test`; else of the only _test.go file; else the
    directory holding the test data the patch touches (Go reads testdata from the test's dir)."""
    top = test.split("/")[0]
    go_files = [f for f in inst["test_files"] if f["path"].endswith("_test.go")]
    for f in go_files:
        if top in f["defines"]:
            return posixpath.dirname(f["path"])
    if len(go_files) == 1:
        return posixpath.dirname(go_files[0]["path"])
    data = inst["test_files"][0]["path"]
    return posixpath.dirname(posixpath.dirname(data))


def _java_class(inst: dict, simple: str) -> str:
    for f in inst["test_files"]:
        m = re.search(r"src/test/java/(.+)\.java$", f["path"])
        if m and m.group(1).endswith("/" + simple):
            return m.group(1).replace("/", ".")
    raise AssertionError(f"{simple} not in the test_patch of {inst['instance_id']}")


def _phpunit(inst: dict, gold: str) -> str:
    title, _, method_title = gold.partition(" > ")
    for f in inst["test_files"]:
        m = re.match(r"tests/(.+)Test\.php$", f["path"])
        if m and m.group(1).split("/")[-1] == title.replace(" ", ""):
            cls = "Tests\\" + m.group(1).replace("/", "\\") + "Test"
            method = next((d for d in f["defines"] if dox_method(d) == method_title),
                          "test" + "".join(w.capitalize() for w in method_title.split()))
            return f"{cls}::{method}"
    raise AssertionError(f"no test class for {gold!r} in {inst['instance_id']}")


def ours_for(inst: dict, gold: str) -> str:
    """The id our parser for this repository's runner produces for the test gold names."""
    repo = inst["repo"]
    if repo in GO_MODULES:                       # go test -json: <package>::<Test/sub>
        pkg = _go_package(inst, gold)
        return f"{GO_MODULES[repo]}/{pkg}".rstrip("/") + "::" + gold
    if repo == "google/gson":                    # Surefire XML: pkg.Class#method
        cls, _, method = gold.partition("#")
        return f"{_java_class(inst, cls.split('.')[-1])}#{method}"
    if repo == "javaparser/javaparser":          # gold is a class; we see its methods
        cls = _java_class(inst, gold)
        f = next(f for f in inst["test_files"] if f["path"].endswith(f"/{gold}.java"))
        return f"{cls}#{f['defines'][0]}"
    if repo == "briannesbitt/carbon":            # PHPUnit JUnit: Ns\Class::testMethod
        return _phpunit(inst, gold)
    if repo == "faker-ruby/faker":               # minitest -v: TestClass#test_method
        path = inst["test_files"][0]["path"]
        cls = "".join(w.capitalize() for w in posixpath.basename(path)[:-3].split("_"))
        return f"{cls}#{gold}"
    # cargo test (libtest path), mocha fullTitle, vitest `file > describe > test`,
    # automake script, GoogleTest Suite.Case: our form is the gold form
    return gold


CASES = [(inst, gold) for inst in INSTANCES for gold in inst["FAIL_TO_PASS"]]


def test_extract_covers_the_thirteen_repositories():
    assert len({i["repo"] for i in INSTANCES}) == 13 and len(CASES) >= 100


@pytest.mark.parametrize("inst, gold", CASES, ids=[f"{i['instance_id']}:{g[:40]}" for i, g in CASES])
def test_our_full_form_matches_its_gold_id_and_no_pass_to_pass_id(inst, gold):
    ours = ours_for(inst, gold)
    assert gold_match(ours, gold), (ours, gold)
    others = [g for g in inst["FAIL_TO_PASS"] + inst["PASS_TO_PASS"]
              if g != gold and not gold_match(gold, g)]  # gold's own parent/child ids aside
    assert not [g for g in others if gold_match(ours, g)], ours


@pytest.mark.parametrize("ours, gold", [
    ("github.com/gin-gonic/gin::TestContextBindHeader", "TestContextBindHeader"),
    ("github.com/gin-gonic/gin/render::TestReaderRenderNoHeaders", "TestReaderRenderNoHeaders"),
    ("github.com/caddyserver/caddy/v2/cmd::Test_isCaddyfile/prefix_of_Caddyfile_and_./"
     "_with_any_extension_is_Caddyfile", "Test_isCaddyfile"),
    ("com.google.gson.stream.JsonWriterTest#testNonFiniteDoublesWhenLenient",
     "com.google.gson.stream.JsonWriterTest#testNonFiniteDoublesWhenLenient"),
    ("com.github.javaparser.ast.NodeTest#findNodeByRange", "NodeTest"),
    ("com.github.javaparser.ast.NodeTest", "NodeTest"),                  # Maven class-level id
    ("Tests\\Carbon\\RoundTest::testFloorYear", "Round > Floor year"),
    ("TestFakerInternet#test_password", "test_password"),
    ("packages/runtime-core/__tests__/apiWatch.spec.ts > api: watch > effect", "api: watch > effect"),
    ("regression::r2208", "regression::r2208"),
])
def test_full_forms_match_gold_granularity(ours, gold):
    assert gold_match(ours, gold)


@pytest.mark.parametrize("ours, gold", [
    ("github.com/gin-gonic/gin::TestContextBindHeaderX", "TestContextBindHeader"),
    ("github.com/gin-gonic/gin::TestContextShouldBindHeader", "TestContextBindHeader"),
    ("com.google.gson.stream.JsonWriterTest#testNonFiniteDoubles",
     "com.google.gson.stream.JsonWriterTest#testNonFiniteDoublesWhenLenient"),
    ("com.github.javaparser.ast.NodePositionTest#x", "NodeTest"),
    # a bare space ends a word, not an id: testIsWeekdayTrue is not testIs
    ("Tests\\CarbonImmutable\\IsTest::testIsWeekdayTrue", "Is > Is"),
    ("supports http with nodejs should support max body length",
     "supports http with nodejs should support max body length (follow-redirects as well)"),
    ("TestFakerInternet#test_password_with_integer_arg", "test_password"),
    ("regression::r22080", "regression::r2208"),
    ("format_test.format_nan_x", "format_test.format_nan"),
    ("tests/shtest2", "tests/shtest"),
    ("", "x"),
])
def test_unrelated_ids_do_not_match(ours, gold):
    assert not gold_match(ours, gold)


def test_gold_forms_add_the_testdox_title_for_phpunit_ids_only():
    assert gold_forms("Tests\\Carbon\\RoundTest::testFloorYear") == [
        "Tests\\Carbon\\RoundTest::testFloorYear", "Round > Floor year"]
    assert gold_forms("routing::tests::test_x") == ["routing::tests::test_x"]


def test_matched_and_exact_form_agreement_for_scoring():
    ours = ["github.com/gin-gonic/gin::TestA", "github.com/gin-gonic/gin::TestB", "TestC"]
    gold = ["TestA", "TestC", "TestD"]
    hit_ours, hit_gold = matched(ours, gold)
    assert hit_ours == {"github.com/gin-gonic/gin::TestA", "TestC"}   # precision 2/3
    assert hit_gold == {"TestA", "TestC"}                              # recall 2/3
    assert exact_form_agreement(ours, gold) == pytest.approx(1 / 3)    # only TestC verbatim
    assert exact_form_agreement(ours, []) == 1.0


def test_exact_form_agreement_per_repository():
    by_repo: dict[str, list[float]] = {}
    for inst in INSTANCES:
        ours = [ours_for(inst, g) for g in inst["FAIL_TO_PASS"]]
        by_repo.setdefault(inst["repo"], []).append(exact_form_agreement(ours, inst["FAIL_TO_PASS"]))
    assert all(v == 1.0 for r in ("google/gson", "vuejs/core", "tokio-rs/axum", "jqlang/jq",
                                  "fmtlib/fmt", "axios/axios") for v in by_repo[r])
    assert all(v == 0.0 for r in ("gin-gonic/gin", "briannesbitt/carbon", "javaparser/javaparser")
               for v in by_repo[r])


def test_java_nested_class_matches_its_outer_class_only():
    ours = "com.github.javaparser.ast.NodeTest$PostOrderIteratorTest#rootHasNoChild"
    assert gold_match(ours, "NodeTest")
    assert not gold_match(ours, "Node")
    assert not gold_match("com.x.NodeTestHelper$Inner#a", "NodeTest")
