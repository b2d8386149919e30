"""busted's JSON report (`envpool.testrun.polyglot.lua`): the shape busted 2.1 prints (its
``outputHandlers/json.lua``), written here by hand."""

from __future__ import annotations

import json

from envpool.testrun.outcome import TestStatus
from envpool.testrun.registry import PARSERS


def _entry(name: str, src: str = "@./spec/calc_spec.lua", descriptor: str = "it") -> dict:
    trace = {"source": src, "short_src": src.lstrip("@"), "currentline": 9}
    return {"name": name, "trace": trace, "element": {"descriptor": descriptor, "name": name.split()[-1],
                                                      "trace": trace}, "message": "x"}


def test_each_list_gives_its_status_and_ids_carry_the_spec_file():
    report = {"successes": [_entry("calc adds"), _entry("parser reads", "@spec/parser_spec.lua")],
              "failures": [_entry("calc multiplies")], "errors": [_entry("calc divides")],
              "pendings": [_entry("calc later", descriptor="pending")], "duration": 0.01}
    text = "a test printed this\n{not json\n" + json.dumps(report) + "\n"
    got = PARSERS["busted_json"].run(text)
    assert got.statuses == {"spec/calc_spec.lua::calc adds": TestStatus.PASSED,
                            "spec/parser_spec.lua::parser reads": TestStatus.PASSED,
                            "spec/calc_spec.lua::calc multiplies": TestStatus.FAILED,
                            "spec/calc_spec.lua::calc divides": TestStatus.ERROR,
                            "spec/calc_spec.lua::calc later": TestStatus.SKIPPED}
    assert not got.collection_errors


def test_a_spec_file_that_does_not_load_is_a_collection_error_and_no_report_grades_nothing():
    report = {"successes": [], "failures": [], "pendings": [],
              "errors": [_entry("spec/broken_spec.lua", "@spec/broken_spec.lua", descriptor="file")]}
    got = PARSERS["busted_json"].run(json.dumps(report))
    assert got.statuses == {} and got.collection_errors == ["spec/broken_spec.lua"]
    assert PARSERS["busted_json"].run("lua: cannot open spec\n").statuses == {}


def test_the_golden_report_of_swemints_handler(golden):
    """tests/data/polyglot/busted.json: `envpool/toolchains/busted_json.lua`'s report of a spec
    written for it (a pass, a failure, an error, a pending())."""
    got = PARSERS["busted_json"].run(golden("busted.json"))
    assert got.statuses == {"spec/calc_spec.lua::calc adds": TestStatus.PASSED,
                            "spec/calc_spec.lua::calc subtracts": TestStatus.FAILED,
                            "spec/calc_spec.lua::calc divides": TestStatus.ERROR,
                            "spec/calc_spec.lua::calc multiplies later": TestStatus.SKIPPED}
