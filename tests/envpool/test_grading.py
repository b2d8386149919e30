"""grade() (SWE-bench harness v5's FAIL_TO_PASS / PASS_TO_PASS) and scoring against gold ids."""

from __future__ import annotations

import pytest

from envpool.grading import Grade, gold_matches, grade, in_failed_collector, score_against_gold
from envpool.testrun.status import TestRunReport, TestStatus

P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED
XF, XP = TestStatus.XFAIL, TestStatus.XPASS


def run(statuses: dict[str, TestStatus], collection_errors=(), **kw) -> TestRunReport:
    return TestRunReport(statuses=statuses, collection_errors=list(collection_errors),
                         tests_ran=bool(statuses), source="plugin", **kw)


def test_basic_fail_to_pass_and_pass_to_pass():
    before = run({"t.py::a": F, "t.py::b": P, "t.py::c": E, "t.py::d": P, "t.py::e": S})
    after = run({"t.py::a": P, "t.py::b": P, "t.py::c": P, "t.py::d": F, "t.py::e": P, "t.py::new": P})
    g = grade([before], [after], None)
    assert g == Grade(FAIL_TO_PASS=["t.py::a", "t.py::c", "t.py::e", "t.py::new"],
                      PASS_TO_PASS=["t.py::b"], before_runs=1, after_runs=1)


def test_xfail_is_not_a_pass_and_xpass_is():
    g = grade([run({"t::x": XF, "t::y": XP})], [run({"t::x": XP, "t::y": XP})], None)
    assert g.FAIL_TO_PASS == ["t::x"] and g.PASS_TO_PASS == ["t::y"]


def test_tests_in_a_file_that_failed_to_collect_before_are_not_passing_before():
    before = run({"tests/test_old.py::t": P}, collection_errors=["tests/test_new.py"])
    after = run({"tests/test_old.py::t": P, "tests/test_new.py::t1": P, "tests/test_new.py::K::t2": P})
    g = grade([before], [after], None)
    assert g.FAIL_TO_PASS == ["tests/test_new.py::K::t2", "tests/test_new.py::t1"]
    assert g.PASS_TO_PASS == ["tests/test_old.py::t"]


def test_interrupted_collection_before_makes_every_test_absent_hence_the_runner_continues():
    # Why run_pytest passes --continue-on-collection-errors: when one new test file fails to
    # import and pytest stops ("Interrupted: 1 error during collection"), every other test is
    # absent before and would wrongly become FAIL_TO_PASS instead of PASS_TO_PASS.
    interrupted = TestRunReport(collection_errors=["tests/test_new.py"], exit_code=2)
    continued = run({"tests/test_old.py::t": P}, collection_errors=["tests/test_new.py"])
    after = run({"tests/test_old.py::t": P, "tests/test_new.py::t1": P})
    assert grade([interrupted], [after], None).FAIL_TO_PASS == ["tests/test_new.py::t1", "tests/test_old.py::t"]
    g = grade([continued], [after], None)
    assert g.FAIL_TO_PASS == ["tests/test_new.py::t1"] and g.PASS_TO_PASS == ["tests/test_old.py::t"]


def test_collection_error_scopes_file_class_and_folder():
    assert in_failed_collector("a/t.py::K::f[x]", ["a/t.py"])
    assert in_failed_collector("a/t.py::K::f", ["a/t.py::K"])
    assert not in_failed_collector("a/t.py::K2::f", ["a/t.py::K"])
    assert in_failed_collector("a/sub/t.py::f", ["a/sub/"])
    assert not in_failed_collector("a/t.py2::f", ["a/t.py"])


def test_a_passing_status_under_a_failed_collector_still_counts_as_not_passing():
    before = run({"t.py::K::f": P}, collection_errors=["t.py::K"])
    assert grade([before], [run({"t.py::K::f": P})], None).FAIL_TO_PASS == ["t.py::K::f"]


def test_run_where_zero_tests_parsed_is_never_all_passed():
    empty = TestRunReport(tests_ran=False, exit_code=2)
    g = grade([run({"t::a": P})], [empty], None)
    assert g.FAIL_TO_PASS == [] and g.PASS_TO_PASS == []


def test_flaky_tests_across_reruns_are_excluded_from_both_lists():
    before = [run({"t::a": F, "t::b": P}), run({"t::a": F, "t::b": F})]
    after = [run({"t::a": P, "t::b": P, "t::c": P}), run({"t::a": P, "t::b": P, "t::c": F}),
             run({"t::a": P, "t::b": P, "t::c": P})]
    g = grade(before, after, None)
    assert g.flaky == ["t::b", "t::c"]
    assert g.FAIL_TO_PASS == ["t::a"] and g.PASS_TO_PASS == []
    assert (g.before_runs, g.after_runs) == (2, 3)


def test_test_absent_in_one_rerun_is_flaky():
    after = [run({"t::a": P, "t::b": P}), run({"t::a": P})]
    assert grade([run({"t::a": P})], after, None).flaky == ["t::b"]


def test_a_test_its_binary_never_reached_is_not_observed_there():
    """prometheus-15142's after#3: the package's test binary died midway (Go:
    ``<pkg> [stopped early: panic]``), so 516 of its 1,599 tests were never reported. They were
    flagged flaky (absent = not passing in one after run); a test its binary never reached says
    nothing. The test that was running when it died did fail there; another unit's absent test
    still counts; a unit without the mark still reads absence as not passing."""
    before = [run({"p::TestOld": P, "p::TestNew": F, "p::TestCrash": P, "q::TestQ": P})] * 2
    whole = run({"p::TestOld": P, "p::TestNew": P, "p::TestCrash": P, "q::TestQ": P})
    died = run({"p::TestOld": P, "p::TestCrash": F, "q::TestQ": P}, ["p [stopped early: panic]"])
    g = grade(before, [whole, whole, died], None)
    assert g.FAIL_TO_PASS == ["p::TestNew"] and g.flaky == ["p::TestCrash"]
    assert g.PASS_TO_PASS == ["p::TestOld", "q::TestQ"]
    # another unit's absent test is still observed (not passing): flaky; so is one without the mark
    other = run({"p::TestOld": P, "p::TestNew": P, "p::TestCrash": F}, ["p [stopped early: panic]"])
    assert "q::TestQ" in grade(before, [whole, other], None).flaky
    unmarked = run({"p::TestOld": P, "p::TestCrash": F})
    assert "p::TestNew" in grade(before, [whole, unmarked], None).flaky
    # Catch2's label is the same kind of stop
    c = run({"u::a": P}, ["u [Catch2 run stopped early]"])
    assert grade([run({"u::a": P, "u::b": P})], [run({"u::a": P, "u::b": P}), c], None).flaky == []


def test_a_before_run_that_stopped_early_leaves_its_unreached_tests_to_the_other_before_run():
    """A test before#1's binary never reached is graded by before#2 alone (it passed there:
    PASS_TO_PASS, not flaky)."""
    b1 = run({"p::TestA": F}, ["p [stopped early: panic]"])
    b2 = run({"p::TestA": F, "p::TestB": P})
    g = grade([b1, b2], [run({"p::TestA": P, "p::TestB": P})], None)
    assert g.FAIL_TO_PASS == ["p::TestA"] and g.PASS_TO_PASS == ["p::TestB"] and g.flaky == []


def test_failed_and_errored_across_reruns_is_not_flaky():
    g = grade([run({"t::a": F}), run({"t::a": E})], [run({"t::a": P})], None)
    assert g.FAIL_TO_PASS == ["t::a"] and g.flaky == []


def test_expected_tests_restrict_the_lists_by_id_or_file():
    before = run({"a.py::x": F, "b.py::y": P, "c.py::z": F})
    after = run({"a.py::x": P, "b.py::y": P, "c.py::z": P})
    g = grade([before], [after], {"a.py", "b.py::y"})
    assert g.FAIL_TO_PASS == ["a.py::x"] and g.PASS_TO_PASS == ["b.py::y"]


def test_no_before_runs_means_everything_passing_after_is_fail_to_pass():
    assert grade([], [run({"t::a": P, "t::b": F})], None).FAIL_TO_PASS == ["t::a"]


def test_ids_with_special_characters_are_kept_verbatim():
    ids = ["t.py::f[a b]", "t.py::f[a - b]", "t.py::f[a::b]", "t.py::f[\\xe9]", "t.py::f[x]]"]
    g = grade([run({i: P for i in ids})], [run({i: P for i in ids})], None)
    assert g.PASS_TO_PASS == sorted(ids)


# -- gold -------------------------------------------------------------------------------------

def test_gold_ids_cut_at_first_space_match_as_prefix():
    ours = "lib/matplotlib/tests/test_rcparams.py::test_legend_colors[same facecolor]"
    assert gold_matches(ours, "lib/matplotlib/tests/test_rcparams.py::test_legend_colors[same")
    assert gold_matches(ours, ours)
    assert not gold_matches(ours, "lib/matplotlib/tests/test_rcparams.py::test_legend_colors[sa")
    assert not gold_matches("t.py::f[ab]", "t.py::f[a")


def test_score_against_gold_reports_recall_precision_and_p2p_agreement():
    gold_f2p = ["t.py::f[a", "t.py::g"]  # an old parser cut `t.py::f[a b]`
    gold_p2p = ["t.py::h", "t.py::k"]
    s = score_against_gold(["t.py::f[a b]", "t.py::g", "t.py::extra"], ["t.py::h"], gold_f2p, gold_p2p)
    assert s["f2p_recall"] == 1.0 and s["f2p_precision"] == pytest.approx(2 / 3)
    assert s["f2p_exact"] is False and s["f2p_extra"] == ["t.py::extra"]
    assert s["p2p_recall"] == 0.5 and s["p2p_precision"] == 1.0 and s["p2p_missing"] == ["t.py::k"]


def test_score_with_empty_lists_is_one():
    s = score_against_gold([], [], [], [])
    assert s["f2p_recall"] == s["f2p_precision"] == s["p2p_recall"] == 1.0 and s["f2p_exact"]


def test_score_on_real_truncated_gold_ids_of_matplotlib_23299():
    # PASS_TO_PASS of SWE-bench's matplotlib__matplotlib-23299 as an old parser wrote it
    mod = "lib/matplotlib/tests/test_rcparams.py::"
    gold = [mod + "test_legend_colors[same", mod + "test_legend_colors[inherited",
            mod + "test_legend_colors[different", mod + "test_validator_valid[validate_bool-t-True]"]
    ours = [mod + "test_legend_colors[same facecolor]", mod + "test_legend_colors[inherited facecolor]",
            mod + "test_legend_colors[different facecolor]", mod + "test_validator_valid[validate_bool-t-True]"]
    s = score_against_gold([], ours, [], gold)
    assert s["p2p_recall"] == 1.0 and s["p2p_precision"] == 1.0
    s = score_against_gold([], ours[1:], [], gold)
    assert s["p2p_missing"] == [mod + "test_legend_colors[same"]


def test_score_against_bare_gold_names_uses_the_unique_last_part():
    """SWE-bench gives sympy's ids as bare names; ours are pytest node ids."""
    from envpool.grading import score_against_gold
    s = score_against_gold(["sympy/a/tests/test_x.py::test_new"],
                           ["sympy/a/tests/test_x.py::test_old", "sympy/b/test_y.py::test_dup",
                            "sympy/c/test_z.py::test_dup"],
                           ["test_new"], ["test_old", "test_dup"])
    assert s["f2p_recall"] == 1.0 and s["f2p_precision"] == 1.0
    assert s["p2p_missing"] == ["test_dup"]  # ambiguous: two of ours share the name


def test_absent_scope_lists_only_touched_tests_of_a_package_that_did_not_build_before():
    """Go: the new TestNew uses the fix's API, so the whole package fails to build before
    (every test absent, the package a collection error); after the fix all pass. Only the
    touched TestNew is FAIL_TO_PASS; TestOld, which merely could not run, is in neither list.
    A test that ran and failed before is FAIL_TO_PASS whatever the scope."""
    before = [TestRunReport(statuses={"m::TestFlaky": TestStatus.FAILED}, collection_errors=["m2"])]
    after = [TestRunReport(statuses={"m2::TestNew": TestStatus.PASSED, "m2::TestNew/sub": TestStatus.PASSED,
                                     "m2::TestOld": TestStatus.PASSED, "m::TestFlaky": TestStatus.PASSED})]
    g = grade(before, after, absent_scope={"TestNew"})
    assert g.FAIL_TO_PASS == ["m2::TestNew", "m2::TestNew/sub", "m::TestFlaky"] and g.PASS_TO_PASS == []
    assert "m2::TestOld" in grade(before, after).FAIL_TO_PASS


def test_test_name_of_a_catch2_id_is_its_test_case():
    """A CTest test's Catch2 ids (`envpool.testrun.polyglot.catch2_xml`): the test case, which the
    test_patch names (`agents.verification.aborted_before_scope`)."""
    from envpool.grading import test_name

    assert test_name("spdlog-utests::pattern formatter > full level") == "pattern formatter"
    assert test_name("spdlog-utests::fmt::join / ranges > empty") == "fmt::join / ranges"
    assert test_name("spdlog-utests::to_file_1") == "to_file_1"
    # other ids keep their rule
    assert test_name("tests/t.py::test_x[a > b]") == "test_x[a > b]"
    assert test_name("src/a.test.ts > Foo::bar > works") == "bar > works"
    assert test_name("pkg::TestX/sub") == "TestX" and test_name("a::b::tests::c") == "c"


def test_an_ava_file_covers_the_tests_titled_by_its_prefix():
    """AVA titles ``<file prefix> › <title>`` (ava lib/reporters/prefix-title.js): base cut,
    .spec/.test/test- removed, extension dropped, __tests__ left out."""
    from envpool.grading import ava_prefixes

    assert ava_prefixes("test/chalk.js") == {"test › chalk", "chalk"}
    assert "a › b" in ava_prefixes("test/a/__tests__/b.spec.ts")
    assert "x" in ava_prefixes("test/test-x.mjs")
    assert in_failed_collector("chalk › works", ["test/chalk.js"])
    assert in_failed_collector("test › chalk › works", ["test/chalk.js"])
    assert not in_failed_collector("chalky › works", ["test/chalk.js"])
    assert not in_failed_collector("visible › works", ["test/chalk.js"])
    # not an AVA id: the plain collector rule only
    assert not in_failed_collector("chalk::works", ["test/chalk.js"])
    # a collection error that is a message, not a file, covers no AVA test
    assert not in_failed_collector("hang › quick", ["ava: timed out with 2 test(s) pending in test/hang.js"])


def test_the_test_name_of_a_junit_id_is_its_method():
    from envpool.grading import test_name

    assert test_name("com.google.gson.FieldNamingTest#testUpper") == "testUpper"
    assert test_name("a.B#c[1]") == "c" and test_name("a.B#nested > x") == "nested"
    assert test_name("Foo#bar does x") == "Foo#bar does x"  # an RSpec title, not a JUnit id


def test_test_name_of_a_go_subtest_holding_a_double_colon_is_its_top_level_test():
    """Rule G: a Go subtest named by an IPv6 literal (`TestGateway/::1`) read as test `1` by the
    last-`::` split, which made it FAIL_TO_PASS of a row whose touched tests it is not
    (ollama-17919 on main); Python and Catch2 ids keep their reading."""
    from envpool.grading import test_name

    assert test_name("github.com/acme/proxy::TestGatewayAllowsLoopbackHosts/::1") == "TestGatewayAllowsLoopbackHosts"
    assert test_name("example.com/calc::TestAdd/neg") == "TestAdd"
    assert test_name("tests/t.py::TestA::test_b") == "test_b"
    assert test_name("tests/t.py::TestA") == "TestA"
    assert test_name("spdlog-utests::to_file_1") == "to_file_1"


def test_a_test_no_before_run_observed_is_in_neither_list():
    """prometheus-15142: before#1's package ran out of its binary's -timeout while TestOOO had run
    3 s (no verdict: not reported), before#2's binary panicked before reaching it; it passed
    after. Nothing was learnt before: not FAIL_TO_PASS. With no before run at all, absence still
    reads as not passing; a test one before run observed failing is FAIL_TO_PASS."""
    b1 = run({"p::TestA": P}, ["p [stopped early: test timed out]"])
    b2 = run({"p::TestA": P, "p::TestGold": F}, ["p [stopped early: panic]"])
    after = run({"p::TestA": P, "p::TestGold": P, "p::TestOOO": P})
    g = grade([b1, b2], [after, after], None)
    assert g.FAIL_TO_PASS == ["p::TestGold"] and g.PASS_TO_PASS == ["p::TestA"] and g.flaky == []
    assert "p::TestOOO" in grade([], [after], None).FAIL_TO_PASS
    assert "p::TestOOO" in grade([b1, run({"p::TestA": P, "p::TestOOO": F})], [after], None).FAIL_TO_PASS


def test_a_test_whose_unit_died_loading_in_every_before_run_is_still_fail_to_pass():
    """A Go package whose test binary panics in ``init`` before (the test_patch's new file calls
    the unfixed API at package level) reports no test at all: its tests did not load -- as a
    ``[build failed]`` package or a file that failed to collect, the new test is FAIL_TO_PASS
    (the `absent_scope` rule applies), unlike a test a binary stopped midway never reached."""
    b = run({}, ["p [stopped early: panic]"])
    after = run({"p::TestOld": P, "p::TestNew": P})
    assert grade([b, b], [after, after], None, {"TestNew"}).FAIL_TO_PASS == ["p::TestNew"]
    assert grade([b], [after], None).FAIL_TO_PASS == ["p::TestNew", "p::TestOld"]
    midway = run({"p::TestOld": P}, ["p [stopped early: panic]"])
    assert grade([midway], [after], None, {"TestNew"}).FAIL_TO_PASS == []
