"""`ava_tap`: AVA's TAP reporter, on output recorded from ava 6.4.1 (`npx ava --tap`)."""

from __future__ import annotations

from envpool.testrun.registry import PARSERS

P = PARSERS["ava_tap"]

MULTI = """TAP version 13
ok 1 - a › skipped one # SKIP
not ok 2 - a › later # TODO
ok 3 - a › adds
not ok 4 - a › fails
  ---
    name: AssertionError
    assertion: t.is()
    message: ''
  ...
not ok 5 - Error: Cannot find module './nonexistent'
  ---
    name: Error
  ...
not ok 6 - test/c.js exited with a non-zero exit code: 1
ok 7 - b › other file

1..5
# tests 4
# pass 2
# skip 1
# fail 4
"""

ONE = """TAP version 13
ok 1 - skipped one # SKIP
not ok 2 - later # TODO
ok 3 - adds
not ok 4 - fails
  ---
  ...

1..3
# tests 3
# pass 1
# skip 1
# fail 3
"""


def test_statuses_unit_errors_and_the_count_check():
    r = P(MULTI)
    assert {k: v.value for k, v in r.statuses.items()} == {
        "a › skipped one": "SKIPPED", "a › adds": "PASSED", "a › fails": "FAILED", "b › other file": "PASSED"}
    assert r.collection_errors == ["uncaught: Error: Cannot find module './nonexistent'", "test/c.js"]
    assert P.check(MULTI) == [] and r.tests_ran
    assert {k: v.value for k, v in P(ONE).statuses.items()} == {"skipped one": "SKIPPED", "adds": "PASSED",
                                                                "fails": "FAILED"}  # one file: bare titles


def test_a_stream_cut_short_or_a_wrong_count_is_an_anomaly():
    cut = MULTI.split("\n1..5")[0]
    assert any("no closing plan" in a for a in P.check(cut))
    assert P.check(ONE.replace("# tests 3", "# tests 9")) == ["ava tests: the runner reports 9, 3 parsed"]
    assert P.check("") == []  # nothing ran: no report, not a forged one


LOAD_ERROR = """TAP version 13
not ok 1 - file:///testbed/test/chalk.js:2
import chalk, {Chalk, chalkStderr} from '../source/index.js';
               ^^^^^
SyntaxError: The requested module '../source/index.js' does not provide an export named 'Chalk'
  ---
    name: SyntaxError
    message: >-
      The requested module '../source/index.js' does not provide an export named
      'Chalk'
    at: ''
  ...
not ok 2 - test/chalk.js exited with a non-zero exit code: 1
not ok 3 - No tests found in test/_fixture.js, make sure to import "ava" at the top of your test file
ok 4 - visible › works

1..1
# tests 1
# pass 1
# fail 3
"""


def test_an_error_while_a_file_loads_is_a_unit_error_not_a_test():
    """chalk-432 (ava 6): the test file imports what the fix adds, so it throws while loading;
    AVA titles that failure by its location and counts it in `# fail`, not in `# tests`. It was
    parsed as a test, so the count check failed and the run was not graded."""
    res = P.run(LOAD_ERROR)
    assert not res.anomalies, res.anomalies
    rep = res.report()
    assert list(rep.statuses) == ["visible › works"]
    assert "test/chalk.js" in rep.collection_errors and "test/_fixture.js" in rep.collection_errors
