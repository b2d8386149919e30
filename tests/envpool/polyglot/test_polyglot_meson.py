"""S35: ``meson test``'s JSON log (`envpool.testrun.polyglot.meson`): meson's own ids (newer and
older releases' forms), every result it writes, the stub swemint's Meson helper runs for a program
that did not build, and the log read after console output (a row's stored command ``cat``s it)."""

from __future__ import annotations

import json

from envpool.testrun.registry import get_parser
from envpool.testrun.status import TestStatus

parse = get_parser("meson_testlog")


def test_golden_log_gives_meson_ids_and_every_result(golden):
    # written by meson 1.12 for a project of this test suite's own (tests/data/polyglot/meson_testlog.json)
    rep = parse(golden("meson_testlog.json"))
    assert rep.statuses == {
        "unit - calc:add": TestStatus.PASSED,
        "calc:mul": TestStatus.FAILED,
        "unit+slow - calc:skipme": TestStatus.SKIPPED,
        "edge - calc:xfail": TestStatus.XFAIL,
        "edge - calc:xpass": TestStatus.FAILED,   # UNEXPECTEDPASS fails meson test
        "edge - calc:hard error": TestStatus.ERROR,
        "edge - calc:hang": TestStatus.FAILED,    # TIMEOUT
    }
    assert rep.tests_ran and rep.source == "json" and rep.collection_errors == []
    assert parse.check(golden("meson_testlog.json")) == []


def test_console_before_the_log_and_the_stub_of_a_program_that_did_not_build():
    lines = [
        "swemint-meson-tests: targets owning the touched files: test_add",
        "1/1 calc:mul FAIL 0.01s exit status 1",
        "{not json at all",
        json.dumps({"name": "calc:mul", "result": "OK", "returncode": 0}),
        json.dumps({"name": "calc:unit / add", "result": "FAIL", "returncode": 1,
                    "stdout": "swemint-meson-tests: unbuilt test_add\n", "command": ["/opt/build/t"]}),
        json.dumps({"name": "calc:running", "result": "RUNNING"}),   # never written by meson: no result
        json.dumps({"other": "object"}),
    ]
    rep = parse("\n".join(lines))
    assert rep.statuses == {"calc:mul": TestStatus.PASSED, "calc:unit / add": TestStatus.FAILED}
    assert rep.collection_errors == ["calc:unit / add [build failed]"]
    assert rep.tests_ran


def test_a_cut_record_is_an_anomaly_and_no_record_is_no_run():
    cut = json.dumps({"name": "calc:a", "result": "OK"}) + "\n" + '{"name": "calc:b", "stdout": "aaa'
    rep = parse(cut)
    assert rep.statuses == {"calc:a": TestStatus.PASSED} and not rep.tests_ran
    assert any("not JSON" in a for a in parse.check(cut))
    empty = parse("Meson test encountered an error:\n\nThe test program '/opt/build/t' does not exist.\n")
    assert empty.statuses == {} and not empty.tests_ran
