"""Go parsers, pinned by real `go test` output (Go 1.26; tests/data/polyglot/regenerate.sh).

The module has parallel subtests named ``case (a.b) one``, ``v1.2 x``, ``fails here`` and ``a/b``
that log while running, duplicate subtest names, a skipped test, a test printing a fake
``--- PASS`` line and a fake package line, a package that fails to build next to a sub-package
that builds, and (separately) a package killed by ``-timeout`` and one whose test panics.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap

import pytest

from envpool.grading import observed, passes_in, stopped_units
from envpool.testrun.polyglot.golang import (go_run_regex, parse_go_test_json, parse_go_test_v,
                                             quote_meta, split_go_id)
from envpool.testrun.status import TestRunReport, TestStatus

P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED
CALC, BROKEN = "example.com/poly/calc::", "example.com/poly/broken::"
INNER = "example.com/poly/broken/inner::"
EXPECTED = {
    INNER + "TestOne": P,
    CALC + "TestAdd": P,
    CALC + "TestParallel": F,
    CALC + "TestParallel/case_(a.b)_one": P,
    CALC + "TestParallel/v1.2_x": P,
    CALC + "TestParallel/fails_here": F,
    CALC + "TestParallel/a/b": P,
    CALC + "TestNested": P,
    CALC + "TestNested/outer": P,
    CALC + "TestNested/outer/inner_x": P,
    CALC + "TestNested/outer/inner_x#01": P,
    CALC + "TestSkipped": S,
    CALC + "TestPrintsFake": F,
}
KNOWN = [BROKEN + "TestOld", BROKEN + "TestNew", INNER + "TestOne", INNER + "TestGone"]


def test_go_json_gives_every_test_and_subtest_with_gos_names(golden):
    rep = parse_go_test_json(golden("go_test.json"))
    assert rep.statuses == EXPECTED
    assert rep.tests_ran and rep.source == "json"
    assert parse_go_test_json.check(golden("go_test.json")) == []


def test_go_json_fake_pass_line_printed_by_a_test_is_not_a_result(golden):
    rep = parse_go_test_json(golden("go_test.json"))
    assert not any("Forged" in t or "forged" in t for t in rep.statuses)


@pytest.mark.parametrize("name", ["go_test.json", "go_test_build_failed_old.json"])
def test_package_that_fails_to_build_fails_its_known_tests_only(golden, name):
    rep = parse_go_test_json(golden(name), known_tests=KNOWN)
    assert rep.collection_errors == ["example.com/poly/broken [build failed]"]
    assert rep.statuses[BROKEN + "TestOld"] is F and rep.statuses[BROKEN + "TestNew"] is F
    assert rep.statuses[INNER + "TestOne"] is P          # the sub-package built and ran
    assert INNER + "TestGone" not in rep.statuses        # not in a failed package: just absent


def test_build_failure_label_does_not_hide_subpackage_tests_in_grading(golden):
    # regression: a bare package path in collection_errors would mark every test under
    # `broken/...` as not passing (grading treats collectors as path prefixes)
    rep = parse_go_test_json(golden("go_test.json"))
    assert passes_in(rep, INNER + "TestOne")


def test_build_failure_alone_is_not_tests_ran():
    raw = ('{"Action":"start","Package":"x/y"}\n'
           '{"Action":"output","Package":"x/y","Output":"FAIL\\tx/y [build failed]\\n"}\n'
           '{"Action":"fail","Package":"x/y","Elapsed":0}\n')
    rep = parse_go_test_json(raw, known_tests=["x/y::TestA"])
    assert rep.statuses == {"x/y::TestA": F} and not rep.tests_ran


def test_test_running_when_the_binary_timed_out_is_failed(golden):
    """The golden ran with -timeout=1s: TestSlow, listed running 1s, had run a per-test limit of
    1 s (FAILED); at the default limit (120 s) it is no verdict (not reported)."""
    rep = parse_go_test_json(golden("go_timeout.json"), per_test_timeout=1)
    assert rep.statuses == {"example.com/poly/slow::TestQuick": P, "example.com/poly/slow::TestSlow": F}
    rep = parse_go_test_json(golden("go_timeout.json"))
    assert rep.statuses == {"example.com/poly/slow::TestQuick": P}


CRASH = "example.com/poly/crash::"


@pytest.mark.parametrize("name,parser", [("go_panic.json", parse_go_test_json), ("go_panic_v.log", parse_go_test_v)])
def test_a_panic_mid_package_is_a_package_that_stopped_early(golden, name, parser):
    """TestBoom/sub panics: Go fails TestBoom and the package, TestAfter never runs, and the
    binary's final PASS/FAIL line is missing. The parser says the package stopped early (a label
    naming no test id); TestAfter, known from another run, stays absent (it did not fail: it did
    not run), and the run is trusted -- grading reads it (`envpool.grading.observed`)."""
    raw = golden(name)
    rep = parser(raw, known_tests=[CRASH + "TestAfter"])
    assert rep.collection_errors == ["example.com/poly/crash [stopped early: panic]"]
    assert rep.statuses == {CRASH + "TestBefore": P, CRASH + "TestBoom": F, CRASH + "TestBoom/sub": F}
    assert rep.tests_ran and parser.check(raw) == []
    assert stopped_units(rep.collection_errors) == ["example.com/poly/crash"]
    assert observed(rep, CRASH + "TestBefore") and not observed(rep, CRASH + "TestAfter")
    assert passes_in(rep, CRASH + "TestBefore")  # the label hides no test that ran


def test_the_binarys_own_timeout_stops_the_package_early(golden):
    assert parse_go_test_json(golden("go_timeout.json")).collection_errors == [
        "example.com/poly/slow [stopped early: test timed out]"]


def test_failing_tests_that_end_normally_are_no_stop(golden):
    """calc has failing tests but its binary ends with its FAIL line: not stopped early."""
    assert parse_go_test_json(golden("go_test.json")).collection_errors == ["example.com/poly/broken [build failed]"]
    raw = ('{"Action":"start","Package":"p"}\n{"Action":"run","Package":"p","Test":"TestA"}\n'
           '{"Action":"fail","Package":"p","Test":"TestA"}\n{"Action":"output","Package":"p","Output":"FAIL\\n"}\n'
           '{"Action":"output","Package":"p","Output":"FAIL\\tp\\t0.01s\\n"}\n{"Action":"fail","Package":"p"}\n')
    assert parse_go_test_json(raw).collection_errors == []


@pytest.mark.parametrize("lines,cause", [
    (['{"Action":"output","Package":"p","Output":"exit status 2\\n"}'], "exit status 2"),
    (['{"Action":"output","Package":"p","Test":"TestA","Output":"fatal error: concurrent map writes\\n"}'],
     "fatal error"),
    (['{"Action":"output","Package":"p","Output":"signal: killed\\n"}'], "signal: killed"),
    ([], "no final PASS/FAIL line"),
])
def test_older_gos_package_level_causes(lines, cause):
    """Go before 1.20 (no framing) prints the panic and ``exit status 2`` as package output; a
    killed binary ``signal: killed``; with none of them the cause is the missing final line."""
    raw = "\n".join(['{"Action":"run","Package":"p","Test":"TestA"}', *lines,
                     '{"Action":"output","Package":"p","Output":"FAIL\\tp\\t0.01s\\n"}',
                     '{"Action":"fail","Package":"p"}']) + "\n"
    rep = parse_go_test_json(raw)
    assert rep.collection_errors == [f"p [stopped early: {cause}]"] and rep.statuses == {"p::TestA": F}


def test_go_json_stream_cut_short_is_an_anomaly(golden):
    lines = golden("go_test.json").decode().splitlines()
    cut = "\n".join(ln for ln in lines if not (
        '"Package":"example.com/poly/calc"' in ln and '"Test"' not in ln and '"Action":"fail"' in ln))
    assert any("calc started but never finished" in a for a in parse_go_test_json.check(cut))
    assert not parse_go_test_json(cut).tests_ran


def test_go_json_skips_non_json_lines_and_undecodable_bytes():
    raw = (b"go: downloading example.com/dep v1.0.0\n\xff\xfe garbage\n"
           b'{"Action":"start","Package":"p"}\n{"Action":"run","Package":"p","Test":"TestA"}\n'
           b'{"Action":"pass","Package":"p","Test":"TestA"}\n{"Action":"pass","Package":"p"}\n')
    assert parse_go_test_json(raw).statuses == {"p::TestA": P}


def test_no_events_is_not_a_pass():
    rep = parse_go_test_json("")
    assert rep.statuses == {} and not rep.tests_ran


# -- go test -v --------------------------------------------------------------------------------

def _without_forger(log: str) -> str:
    return "\n".join(ln for ln in log.splitlines() if "orged" not in ln)


def test_go_v_interleaved_parallel_subtests_give_the_json_statuses(golden):
    log = _without_forger(golden("go_test_v.log").decode())
    rep = parse_go_test_v(log, known_tests=KNOWN)
    expected = dict(EXPECTED, **{BROKEN + "TestOld": F, BROKEN + "TestNew": F})
    assert rep.statuses == expected
    assert rep.collection_errors == ["example.com/poly/broken [build failed]"]
    assert parse_go_test_v.check(log) == [] and rep.tests_ran


def test_go_v_fake_package_line_from_a_running_test_is_an_anomaly(golden):
    raw = golden("go_test_v.log")
    assert any("example.com/poly/forged" in a for a in parse_go_test_v.check(raw))
    assert not parse_go_test_v(raw).tests_ran


def test_go_v_result_glued_after_test_output_counts_and_unstarted_names_do_not():
    log = textwrap.dedent("""\
        === RUN   TestA
        no newline here--- PASS: TestA (0.00s)
        === RUN   TestB
        --- PASS: TestForged (0.00s)
        --- FAIL: TestB (0.01s)
        FAIL
        FAIL\texample.com/m\t0.02s
        """)
    assert parse_go_test_v(log).statuses == {"example.com/m::TestA": P, "example.com/m::TestB": F}


def test_go_v_running_test_without_result_before_fail_line_is_failed():
    log = "=== RUN   TestHang\npanic: deadlock\nFAIL\texample.com/m\t1.01s\n"
    assert parse_go_test_v(log).statuses == {"example.com/m::TestHang": F}
    # the binary's -timeout: FAILED only when `running tests:` lists it at the per-test limit
    log = "=== RUN   TestHang\npanic: test timed out after 1s\nFAIL\texample.com/m\t1.01s\n"
    assert parse_go_test_v(log).statuses == {}
    listed = log.replace("1s\n", "1s\n\trunning tests:\n\t\tTestHang (1s)\n\n", 1)
    assert parse_go_test_v(listed, per_test_timeout=1).statuses == {"example.com/m::TestHang": F}


# -- -run patterns -----------------------------------------------------------------------------

def test_quote_meta_escapes_what_go_escapes():
    assert quote_meta("case_(a.b)_one") == r"case_\(a\.b\)_one"
    assert quote_meta(r"x[1]+y*z?|{2}^$\ #-") == r"x\[1\]\+y\*z\?\|\{2\}\^\$\\ #-"


@pytest.mark.parametrize("test_id, pattern", [
    (CALC + "TestParallel/case_(a.b)_one", r"^TestParallel$/^case_\(a\.b\)_one$"),
    (CALC + "TestParallel/v1.2_x", r"^TestParallel$/^v1\.2_x$"),
    ("TestParallel/a/b", r"^TestParallel$/^a$/^b$"),
    (CALC + "TestNested/outer/inner_x#01", r"^TestNested$/^outer$/^inner_x#01$"),
    ("TestAdd", r"^TestAdd$"),
])
def test_run_regex_anchors_and_quotes_every_level(test_id, pattern):
    assert go_run_regex(test_id) == pattern


def test_split_go_id():
    assert split_go_id(CALC + "TestParallel/a/b") == ("example.com/poly/calc", "TestParallel/a/b")
    assert split_go_id("TestX/sub") == ("", "TestX/sub")


def test_run_regex_golden_selected_exactly_the_subtest(golden):
    # regenerate.sh ran `go test -json -run '^TestParallel$/^case_\(a\.b\)_one$' ./calc`
    test_id = CALC + "TestParallel/case_(a.b)_one"
    assert go_run_regex(test_id) == r"^TestParallel$/^case_\(a\.b\)_one$"
    ran = parse_go_test_json(golden("go_run_selected.json")).statuses
    assert ran == {test_id: P, CALC + "TestParallel": P}


GO_MODULE_TEST = '''package m

import "testing"

func TestP(t *testing.T) {
	for _, n := range []string{"case (a.b) one", "case (a.b) one more", "a/b", "a", "v1.2 x", "v1x2 x"} {
		t.Run(n, func(t *testing.T) {})
	}
	t.Run("dup", func(t *testing.T) {})
	t.Run("dup", func(t *testing.T) {})
}
'''


@pytest.mark.slow  # ~1 s with a warm Go build cache, ~10 s cold
@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain on this host")
def test_run_regex_selects_exactly_one_subtest_with_a_real_go(tmp_path):
    (tmp_path / "go.mod").write_text("module example.com/m\n\ngo 1.21\n")
    (tmp_path / "m_test.go").write_text(GO_MODULE_TEST)
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", GOPROXY="off")

    def run(pattern: str) -> set[str]:
        out = subprocess.run(["go", "test", "-json", "-run", pattern, "."], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120).stdout
        return {f"{e['Package']}::{e['Test']}" for e in map(json.loads, out.splitlines())
                if e.get("Action") == "pass" and e.get("Test")}

    everything = run(".")
    assert "example.com/m::TestP/case_(a.b)_one" in everything and len(everything) == 9
    for test_id in ["example.com/m::TestP/case_(a.b)_one", "example.com/m::TestP/a/b",
                    "example.com/m::TestP/v1.2_x", "example.com/m::TestP/dup#01"]:
        # Go also runs every test whose name is a level-prefix of the pattern: the parent, and
        # for the subtest named "a/b" the sibling named "a" (Go cannot tell them apart)
        levels = test_id.split("/")
        prefixes = {"/".join(levels[:k]) for k in range(1, len(levels) + 1)}
        assert run(go_run_regex(test_id)) == everything & prefixes, test_id
    assert run(go_run_regex("example.com/m::TestP/a/b")) == {
        "example.com/m::TestP", "example.com/m::TestP/a", "example.com/m::TestP/a/b"}


MORE = "example.com/poly/"


@pytest.mark.parametrize("name,parser", [("go_panic_more.json", parse_go_test_json),
                                         ("go_panic_more_v.log", parse_go_test_v)])
def test_a_parallel_test_paused_when_the_binary_died_never_ran(golden, name, parser):
    """crashpar: TestPar called t.Parallel and waits for the sequential tests; TestNew panics, so
    TestPar never continues. It did not run: not reported (was FAILED -- with a passing after run
    it became FAIL_TO_PASS though the test_patch never named it). TestSeq/sub continued and
    passed; TestNew, running, failed."""
    rep = parser(golden(name))
    par = {t.split("::", 1)[1]: s for t, s in rep.statuses.items() if t.startswith(MORE + "crashpar::")}
    assert par == {"TestSeq": P, "TestSeq/sub": P, "TestNew": F}
    assert MORE + "crashpar [stopped early: panic]" in rep.collection_errors
    assert not observed(rep, MORE + "crashpar::TestPar") and not observed(rep, MORE + "crashpar::TestAfter")


@pytest.mark.parametrize("name,parser", [("go_panic_more.json", parse_go_test_json),
                                         ("go_panic_more_v.log", parse_go_test_v)])
def test_a_pass_line_before_m_run_or_in_a_log_does_not_hide_a_stop(golden, name, parser):
    """crashmain: TestMain prints a bare PASS before m.Run (test2json reads it as the final line:
    no framing yet) and TestLogs logs ``result:\\nPASS`` (an indented ``PASS`` line in -v); then
    TestBoom panics and TestAfter never runs. The package still stopped early."""
    rep = parser(golden(name))
    assert MORE + "crashmain [stopped early: panic]" in rep.collection_errors
    assert not observed(rep, MORE + "crashmain::TestAfter")


@pytest.mark.parametrize("name,parser", [("go_panic_more.json", parse_go_test_json),
                                         ("go_panic_more_v.log", parse_go_test_v)])
def test_a_binary_that_died_before_any_test_stopped_early(golden, name, parser):
    """crashinit: a package-level initializer panics, no test runs: the package stopped early
    (its tests were never reached, as under a ``TestMain`` that exits before ``m.Run``)."""
    rep = parser(golden(name), known_tests=[MORE + "crashinit::TestA"])
    assert MORE + "crashinit [stopped early: panic]" in rep.collection_errors
    assert MORE + "crashinit::TestA" not in rep.statuses
    assert not observed(rep, MORE + "crashinit::TestA")


def test_a_new_test_panicking_before_the_fix_makes_no_paused_parallel_test_fail_to_pass(golden):
    """Grading end to end: the test_patch adds TestNew, whose nil-map write panics before the fix;
    after it every test passes. FAIL_TO_PASS is TestNew alone -- TestPar (paused) and TestAfter
    (after the panic) were never reached before, and the test_patch does not name them."""
    from agents.verification import aborted_before_scope, judge

    patch = ("diff --git a/crashpar/crashpar_test.go b/crashpar/crashpar_test.go\n"
             "--- a/crashpar/crashpar_test.go\n+++ b/crashpar/crashpar_test.go\n"
             "@@ -7,2 +7,7 @@ func TestSeq(t *testing.T) {\n \n"
             "+func TestNew(t *testing.T) {\n+\tvar m map[string]int\n+\tm[\"x\"] = 1\n+}\n+\n"
             " func TestAfter(t *testing.T) {}\n")
    pkg = MORE + "crashpar::"
    before = [parse_go_test_json(golden("go_panic_more.json"))] * 2
    after = [TestRunReport(
        statuses={pkg + t: P for t in ("TestPar", "TestSeq", "TestSeq/sub", "TestNew", "TestAfter")},
        tests_ran=True)] * 3
    scope = aborted_before_scope(patch, before, after)
    assert scope is not None and "TestNew" in scope and "TestPar" not in scope
    outcome, _, g = judge(before, after, absent_scope=scope)
    assert outcome == "verified" and g.FAIL_TO_PASS == [pkg + "TestNew"]
    assert g.PASS_TO_PASS == [pkg + "TestSeq", pkg + "TestSeq/sub"] and g.flaky == []


# -- the binary's -timeout fired (a limit for the whole binary) ----------------------------------

TSDB = "example.com/poly/tsdb"


def _timeout_json(duration: str) -> str:
    """`go test -json` (Go >= 1.21 shape, as go_timeout.json) of a package whose binary's
    -timeout (8m0s) fired while TestOOO had run `duration`; TestQuick passed; TestLater paused."""
    def ev(action: str, test: str | None = None, output: str | None = None) -> str:
        e = {"Action": action, "Package": TSDB}
        if test:
            e["Test"] = test
        if output is not None:
            e["Output"] = output
        return json.dumps(e)
    lines = [ev("start"), ev("run", "TestQuick"), ev("output", "TestQuick", "=== RUN   TestQuick\n"),
             ev("output", "TestQuick", "--- PASS: TestQuick (0.00s)\n"), ev("pass", "TestQuick"),
             ev("run", "TestLater"), ev("output", "TestLater", "=== RUN   TestLater\n"),
             ev("output", "TestLater", "=== PAUSE TestLater\n"), ev("pause", "TestLater"),
             ev("run", "TestOOO"), ev("output", "TestOOO", "=== RUN   TestOOO\n"),
             ev("output", "TestOOO", "panic: test timed out after 8m0s\n"),
             ev("output", "TestOOO", "\trunning tests:\n"),
             ev("output", "TestOOO", f"\t\tTestOOO ({duration})\n"),
             ev("output", "TestOOO", "\n"),
             ev("output", "TestOOO", "goroutine 17 [running]:\n"),
             ev("output", "TestOOO", "testing.(*M).startAlarm.func1()\n"),
             ev("output", "TestOOO", "\t/usr/local/go/src/testing/testing.go:2802 +0x354\n"),
             ev("output", None, f"FAIL\t{TSDB}\t480.012s\n"), ev("fail")]
    return "\n".join(lines) + "\n"


def _timeout_v(duration: str) -> str:
    """The same run as `_timeout_json`, in `go test -v` console form."""
    return textwrap.dedent(f"""\
        === RUN   TestQuick
        --- PASS: TestQuick (0.00s)
        === RUN   TestLater
        === PAUSE TestLater
        === RUN   TestOOO
        panic: test timed out after 8m0s
        \trunning tests:
        \t\tTestOOO ({duration})

        goroutine 17 [running]:
        testing.(*M).startAlarm.func1()
        \t/usr/local/go/src/testing/testing.go:2802 +0x354
        FAIL\t{TSDB}\t480.012s
        FAIL
        """)


TIMEOUT_STREAMS = pytest.mark.parametrize("stream,parser", [(_timeout_json, parse_go_test_json),
                                                            (_timeout_v, parse_go_test_v)])


@TIMEOUT_STREAMS
def test_a_test_running_3s_when_the_binarys_timeout_fired_is_not_observed(stream, parser):
    """prometheus-15142: ./tsdb's binary ran out of its 8m0s -timeout on a loaded host while
    TestOOONativeHistogramFlag had run 3 s. That is no verdict on the test (the package ran out of
    time): not FAILED, not observed; the package still stopped early."""
    rep = parser(stream("3s"), known_tests=[f"{TSDB}::TestOOO"])
    assert rep.statuses == {f"{TSDB}::TestQuick": P}
    assert rep.collection_errors == [f"{TSDB} [stopped early: test timed out]"]
    assert rep.tests_ran and parser.check(stream("3s")) == []
    assert not observed(rep, f"{TSDB}::TestOOO") and observed(rep, f"{TSDB}::TestQuick")


@TIMEOUT_STREAMS
@pytest.mark.parametrize("duration", ["2m10s", "2m0s", "1h0m1s"])
def test_a_test_running_the_per_test_limit_when_the_binarys_timeout_fired_failed(stream, parser, duration):
    """A test listed running >= the per-test limit (120 s by default) hung: FAILED (a deadlock
    fixed by the patch is the classic FAIL_TO_PASS). The paused test still never ran."""
    rep = parser(stream(duration))
    assert rep.statuses == {f"{TSDB}::TestQuick": P, f"{TSDB}::TestOOO": F}
    assert rep.collection_errors == [f"{TSDB} [stopped early: test timed out]"]


@TIMEOUT_STREAMS
def test_the_per_test_limit_is_the_runs(stream, parser):
    """`per_test_timeout` (the run's SWEMINT_TEST_TIMEOUT) sets the line; the default is limits'."""
    assert parser(stream("3s"), per_test_timeout=3).statuses[f"{TSDB}::TestOOO"] is F
    assert f"{TSDB}::TestOOO" not in parser(stream("2m10s"), per_test_timeout=600).statuses
    from envpool.testrun import limits
    from envpool.testrun.polyglot import golang
    assert golang.DEFAULT_PER_TEST == limits.DEFAULT_PER_TEST


def test_a_timeout_without_a_running_list_gives_no_verdict():
    """Go before 1.21 printed no ``running tests:`` block: no duration, no verdict."""
    raw = "\n".join(ln for ln in _timeout_json("2m10s").splitlines() if "TestOOO (" not in ln)
    assert parse_go_test_json(raw).statuses == {f"{TSDB}::TestQuick": P}


def test_run_report_passes_the_runs_per_test_limit():
    from envpool.evaluation import run_report
    from envpool.fake import FakeSandbox
    from envpool.sandbox import SandboxSpec

    sb = FakeSandbox(SandboxSpec(image="img", run_id="t"))
    sb.files["/tmp/go.json"] = _timeout_json("3s").encode()
    got = run_report(sb, "go test -json ./...", "go_test_json", report_path="/tmp/go.json",
                     env={"SWEMINT_TEST_TIMEOUT": "2"})
    assert got.report.statuses[f"{TSDB}::TestOOO"] is F
    got = run_report(sb, "go test -json ./...", "go_test_json", report_path="/tmp/go.json",
                     env={"SWEMINT_TEST_TIMEOUT": "120"})
    assert f"{TSDB}::TestOOO" not in got.report.statuses


@TIMEOUT_STREAMS
def test_a_test_the_binarys_timeout_cut_at_3s_cannot_become_fail_to_pass(stream, parser):
    """prometheus-15142's row: before#1's tsdb binary timed out while TestOOO had run 3 s,
    before#2's panicked before reaching it, the after runs passed it. It was FAIL_TO_PASS (the
    gold is another test); now neither before run observed it, so it is no FAIL_TO_PASS. A
    test that hung (130 s) before and passes after still is."""
    from envpool.grading import grade

    panicked = parse_go_test_json("\n".join([
        json.dumps({"Action": "run", "Package": TSDB, "Test": "TestQuick"}),
        json.dumps({"Action": "pass", "Package": TSDB, "Test": "TestQuick"}),
        json.dumps({"Action": "run", "Package": TSDB, "Test": "TestGold"}),
        json.dumps({"Action": "output", "Package": TSDB, "Test": "TestGold", "Output": "panic: boom\n"}),
        json.dumps({"Action": "fail", "Package": TSDB, "Test": "TestGold"}),
        json.dumps({"Action": "output", "Package": TSDB, "Output": f"FAIL\t{TSDB}\t1.0s\n"}),
        json.dumps({"Action": "fail", "Package": TSDB})]) + "\n")
    after = TestRunReport(statuses={f"{TSDB}::{t}": P for t in ("TestQuick", "TestLater", "TestOOO", "TestGold")},
                          tests_ran=True, source="json")
    g = grade([parser(stream("3s")), panicked], [after, after, after], None)
    assert f"{TSDB}::TestOOO" not in g.FAIL_TO_PASS and f"{TSDB}::TestOOO" not in g.flaky
    assert g.FAIL_TO_PASS == [f"{TSDB}::TestGold"]
    g = grade([parser(stream("2m10s")), panicked], [after, after, after], None)
    assert f"{TSDB}::TestOOO" in g.FAIL_TO_PASS


def _timed_json(run_at: float, fired_at: float) -> str:
    """Go < 1.21 `go test -json` (no ``running tests:`` list) with event times: TestQuick passed,
    TestHang ran from `run_at` s until the binary's -timeout fired at `fired_at` s."""
    def ev(at: float, action: str, test: str | None = None, output: str | None = None) -> str:
        e = {"Time": f"2026-11-29T20:{int(at // 60):02d}:{at % 60:012.9f}Z", "Action": action, "Package": TSDB}
        if test:
            e["Test"] = test
        if output is not None:
            e["Output"] = output
        return json.dumps(e)
    lines = [ev(0, "start"), ev(0, "run", "TestQuick"), ev(0.5, "pass", "TestQuick"),
             ev(run_at, "run", "TestHang"), ev(run_at, "output", "TestHang", "=== RUN   TestHang\n"),
             ev(fired_at, "output", "TestHang", "panic: test timed out after 8m0s\n"),
             ev(fired_at, "output", "TestHang", "\n"), ev(fired_at, "output", "TestHang", "goroutine 17 [running]:\n"),
             ev(fired_at, "output", None, f"FAIL\t{TSDB}\t480.012s\n"), ev(fired_at, "fail")]
    return "\n".join(lines) + "\n"


def test_go_before_1_21_a_test_hung_past_the_limit_by_the_event_times_failed():
    """Go 1.19 (swemint's pick for `go 1.16`..`go 1.19` modules) prints no ``running tests:``
    list: a deadlock test hung 479 s when the binary's -timeout fired is the classic FAIL_TO_PASS;
    the -json events' Time says so. One that had run 10 s is no verdict."""
    assert parse_go_test_json(_timed_json(1, 480)).statuses == {f"{TSDB}::TestQuick": P, f"{TSDB}::TestHang": F}
    assert parse_go_test_json(_timed_json(470, 480)).statuses == {f"{TSDB}::TestQuick": P}
    assert parse_go_test_json(_timed_json(1, 480), per_test_timeout=600).statuses == {f"{TSDB}::TestQuick": P}


def test_a_parent_test_whose_running_subtest_is_young_is_no_verdict():
    """A table test running 7 minutes through quick subtests when the binary's -timeout fired,
    its current subtest 3 s in: the package ran out of time (a wrong FAIL_TO_PASS otherwise, as
    prometheus-15142's top-level test). A subtest listed past the limit hung: both FAILED."""
    def log(sub: str) -> str:
        return ("=== RUN   TestTable\n=== RUN   TestTable/case_(9)\n"
                "panic: test timed out after 8m0s\n\trunning tests:\n"
                f"\t\tTestTable (7m0s)\n\t\tTestTable/case_(9) ({sub})\n\n"
                "goroutine 1 [running]:\nFAIL\texample.com/m\t480.0s\n")
    assert parse_go_test_v(log("3s")).statuses == {}
    assert parse_go_test_v(log("6m50s")).statuses == {"example.com/m::TestTable": F,
                                                      "example.com/m::TestTable/case_(9)": F}
