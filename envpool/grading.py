"""Grading: FAIL_TO_PASS / PASS_TO_PASS from before and after test runs, and scoring against gold.

Pure functions over `TestRunReport`s. The definitions are SWE-bench harness v5's
(`swebench/harness/grading.py`): before = base_commit + test_patch, after = before + patch;
FAIL_TO_PASS = tests that do not pass before (failed, errored, skipped, or absent because the
test_patch adds them or their file failed to import) and pass after; PASS_TO_PASS = tests that
pass before and after. "Pass" is `passed_like` (PASSED, XPASS). Reruns on one side (SWE-bench-Live
reruns the after side 3 times) expose flaky tests, which are excluded from both lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from envpool.testrun.status import TestRunReport, passed_like


class Grade(BaseModel):
    """FAIL_TO_PASS and PASS_TO_PASS of one instance (sorted test ids, runner's own form).

    `flaky`: ids whose pass/no-pass outcome differs between runs of the same side (excluded
    from both lists). `before_runs` / `after_runs`: how many runs each side had.
    """

    model_config = ConfigDict(extra="forbid")
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)
    before_runs: int = 0
    after_runs: int = 0


def in_failed_collector(test_id: str, collection_errors: Iterable[str]) -> bool:
    """True when `test_id` lies under a collector that failed to collect.

    A collector id is a file (`tests/test_x.py`: its tests), a class (`tests/test_x.py::TestA`)
    or a folder (`tests/sub`: every test below it); for an AVA id (``file › title``) a file
    whose `ava_prefixes` start the id (``test/chalk.js`` covers ``chalk › visible``).
    """
    ava = AVA_SEP in test_id and "::" not in test_id
    for c in collection_errors:
        c = c.rstrip("/")
        if c and (test_id == c or test_id.startswith(c + "::") or test_id.startswith(c + "/")):
            return True
        if ava and any(test_id.startswith(p + AVA_SEP) for p in ava_prefixes(c)):
            return True
    return False


AVA_SEP = " › "
"""Between an AVA test's file prefix and its title (AVA's `prefix-title.js`)."""

_AVA_EXT = re.compile(r"\.[cm]?[jt]sx?$")


def ava_prefixes(path: str) -> set[str]:
    """The title prefixes AVA may give the tests of test file `path` (relative, `/`-separated).

    AVA's reporters title a test ``<prefix> › <title>`` where the prefix is the file's path with
    the common base of the run's files cut from its start, ``.spec``/``.test`` and every ``test-``
    removed, the extension dropped and the ``__tests__`` parts left out, joined by `` › ``
    (ava `lib/reporters/prefix-title.js`). The base depends on the other files of the run, so
    this gives the prefix for every leading directory as base: ``test/chalk.js`` ->
    ``{"test › chalk", "chalk"}``. A file AVA failed to load is known by its path only; this
    maps it to the ids its tests have once it loads. Anything but a path with a JavaScript or
    TypeScript extension and no whitespace gives the empty set."""
    if not _AVA_EXT.search(path) or any(ch.isspace() for ch in path):
        return set()  # a message (an abort, "No tests found in ..."), not a test file's path
    parts = path.strip("/").split("/")
    out: set[str] = set()
    for k in range(len(parts)):
        rest = "/".join(parts[k:])
        rest = _AVA_EXT.sub("", rest.replace(".spec", "", 1).replace(".test", "", 1).replace("test-", ""))
        segs = [s for s in rest.split("/") if s and s != "__tests__"]
        if segs:
            out.add(AVA_SEP.join(segs))
    return out


STOPPED_EARLY = re.compile(r"^(?P<unit>\S.*?) \[(?:[\w.+-]+ run )?stopped early(?:: [^\]]*)?\]$")
"""A collection-error label of a unit whose run stopped midway -- its test binary panicked,
exited or was killed, so the tests after the stop were never reported: Go's
``<pkg> [stopped early: panic]`` (`envpool.testrun.polyglot.golang`), a CTest test's
``<ctest test> [Catch2 run stopped early]`` (`envpool.testrun.polyglot.catch2_xml`). Group
``unit``: the prefix of the unit's ids (``<unit>::...``)."""


def stopped_units(collection_errors: Iterable[str]) -> list[str]:
    """The units of `collection_errors` that stopped early (`STOPPED_EARLY`), in order."""
    return [m.group("unit") for c in collection_errors if (m := STOPPED_EARLY.match(c.strip()))]


def in_stopped_unit(test_id: str, collection_errors: Iterable[str]) -> bool:
    """Whether `test_id` belongs to a unit that stopped early (its id is ``<unit>::...``)."""
    return any(test_id.startswith(u + "::") for u in stopped_units(collection_errors))


def unloaded_units(run: TestRunReport) -> list[str]:
    """The units of a full run (`selected` unset) that stopped early before reporting any test of
    theirs: the binary died loading (a Go package's ``init`` or ``TestMain`` panicked or hung) --
    like a file that failed to load, its tests are not passing there (`grade`), unlike a unit
    that stopped midway (a test it never reached is not observed)."""
    if run.selected is not None:
        return []
    return [u for u in stopped_units(run.collection_errors)
            if not any(t.startswith(u + "::") for t in run.statuses)]


def passes_in(run: TestRunReport, test_id: str) -> bool:
    """Whether `test_id` passed in `run`: status PASSED/XPASS and not under a collection error.

    Absent, FAILED, ERROR, SKIPPED and XFAIL all count as not passing.
    """
    if in_failed_collector(test_id, run.collection_errors):
        return False
    return passed_like(run.statuses.get(test_id))


def observed(run: TestRunReport, test_id: str) -> bool:
    """Whether `run` says anything about `test_id`: for a run of the whole configuration always,
    but for an id it does not report in a unit that stopped early (`in_stopped_unit`: the binary
    died before reaching it -- absent, not failing; a test reported before the stop is observed);
    for a targeted rerun (`selected` set) only when the id was targeted and the run reports it or
    it lies under one of the run's collection errors."""
    if run.selected is None:
        return test_id in run.statuses or not in_stopped_unit(test_id, run.collection_errors)
    if test_id not in run.selected:
        return False
    return test_id in run.statuses or in_failed_collector(test_id, run.collection_errors)


def _expected(test_id: str, expected: set[str]) -> bool:
    return test_id in expected or test_id.split("::", 1)[0] in expected


_JAVA_ID = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[\w$]+)+#([A-Za-z_$][\w$]*)")
"""A JUnit id ``pkg.Class#method[...]`` (`envpool.testrun.polyglot.java.java_id`): its method."""

CASE_SEP = " > "
"""Between a Catch2 test case and its section (`envpool.testrun.polyglot.catch2_xml.SEP`)."""


_GO_ID = re.compile(r"([^:\s]+)::((?:Test|Example|Fuzz|Benchmark)\w*)(/.*)?", re.S)
"""A Go test id: package path, `::`, the top-level test, its subtests after a `/` (which may hold
anything, `::` included: an IPv6 literal ``/::1``; rule G)."""


def test_name(test_id: str) -> str:
    """The top-level test name of an id: the last `::` part up to its first `/` (Go's
    ``pkg::TestX/sub`` -> ``TestX``; ``tests/t.py::TestA::test_b`` -> ``test_b``); an AVA id
    ``file › title`` is its title (titles may hold ``/``); a JUnit id ``pkg.Class#method[1]``
    its method (``method``); a CTest test's Catch2 section id
    ``<ctest test>::<test case> > <section>`` is its test case (which may hold ``::`` and ``/``:
    ``spdlog-utests::fmt::join / ranges > empty`` -> ``fmt::join / ranges``). A Catch2 test case
    without sections, ``<ctest test>::<test case>``, reads as any ``a::b`` id: its test case when
    that holds no ``::`` or ``/``, else a part of it (still contained in the line that names it)."""
    if AVA_SEP in test_id and "::" not in test_id:
        return test_id.rsplit(AVA_SEP, 1)[-1]
    m = _JAVA_ID.match(test_id)
    if m:
        return m.group(1)
    g = _GO_ID.fullmatch(test_id)
    if g and not g.group(1).endswith(".py"):  # Go's pkg::TestX/sub whose subtest holds `::` (`/::1`)
        return g.group(2)
    head, sep, rest = test_id.partition("::")
    if sep and CASE_SEP in rest and CASE_SEP not in head:  # not a jest/ruby `a > b` path with `::` in a title
        case = rest.split(CASE_SEP, 1)[0]
        if case and "[" not in case:  # not a pytest parameter (`test_x[a > b]`)
            return case
    return test_id.rsplit("::", 1)[-1].split("/", 1)[0]


def grade(before: list[TestRunReport], after: list[TestRunReport],
          expected_tests: set[str] | None = None, absent_scope: set[str] | None = None) -> Grade:
    """Derive FAIL_TO_PASS and PASS_TO_PASS as SWE-bench harness v5 defines them.

    Args:
        before: runs on base_commit + test_patch (one or more reruns; may be empty, then every
            test counts as absent before).
        after: runs on base_commit + test_patch + patch (one or more reruns).
        expected_tests: when given, only ids in it -- or whose file (the part before the first
            `::`) is in it -- are listed (e.g. the tests of the files the test_patch touches).
        absent_scope: when given, a test absent from every before run (not merely failing:
            its package did not build, e.g. a Go package whose new test uses the fix's API) is
            FAIL_TO_PASS only when its `test_name` is in it (the tests the test_patch adds or
            changes); other such tests are in neither list -- nothing was learnt about them.

    Returns a `Grade`: FAIL_TO_PASS = not passing in every before run (failed, errored,
    skipped, absent, or in a file that failed to collect) and passing in every after run;
    PASS_TO_PASS = passing in every before and every after run; `flaky` = ids whose outcome
    differs across the runs of one side (dropped from both lists). Ids come from the after
    runs' statuses (a test must have run after to be listed). A targeted rerun (`selected` set)
    counts only for the ids it observed (`observed`), and so does a run whose unit stopped early
    (a test its binary never reached is neither failing there nor flaky); a test that no before
    run observed (each stopped early before a verdict on it: never reached, or cut by the Go
    binary's own ``-timeout`` while it had run less than the per-test limit) is in neither list --
    its absence there is no failure (prometheus-15142: such a test was a wrong FAIL_TO_PASS),
    unless a before run's unit holding it stopped before reporting any test (`unloaded_units`:
    its binary died loading, as a file that failed to load or a unit that did not build; then
    `absent_scope` applies as to any absent test). Never raises.
    """
    candidates: set[str] = set()
    for run in after:
        candidates.update(run.statuses)
    if expected_tests is not None:
        candidates = {t for t in candidates if _expected(t, expected_tests)}
    f2p, p2p, flaky = [], [], []
    unloaded = [u for r in before for u in unloaded_units(r)]
    for test_id in sorted(candidates):
        pre = [passes_in(r, test_id) for r in before if observed(r, test_id)]
        post = [passes_in(r, test_id) for r in after if observed(r, test_id)]
        if len(set(pre)) > 1 or len(set(post)) > 1:
            flaky.append(test_id)
            continue
        if not post or not post[0]:
            continue
        if before and not pre and not any(test_id.startswith(u + "::") for u in unloaded):
            continue  # every before run stopped before a verdict on it: nothing learnt
        if pre and pre[0]:
            p2p.append(test_id)
        elif absent_scope is not None and test_name(test_id) not in absent_scope and not any(
                test_id in r.statuses for r in before if observed(r, test_id)):
            continue
        else:
            f2p.append(test_id)
    return Grade(FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, flaky=flaky,
                 before_runs=len(before), after_runs=len(after))


def gold_matches(ours: str, gold: str) -> bool:
    """Whether our test id `ours` is the gold id `gold`.

    Equal ids match; so does a gold id cut at the first space by an old SWE-bench log parser
    (`test_x[a b]` recorded as `test_x[a`), which the harness matches as a prefix.
    """
    return ours == gold or (" " in ours and " " not in gold and ours.split(" ", 1)[0] == gold)


def _matched(items: Iterable[str], others: Iterable[str]) -> list[str]:
    """Items that match some id of `others` by `gold_matches`, in either direction (O(n+m))."""
    others = list(others)
    exact = set(others)
    cut_others = {o.split(" ", 1)[0] for o in others if " " in o}
    spaceless = {o for o in others if " " not in o}
    out = []
    for i in items:
        if i in exact or (" " not in i and i in cut_others) or (
                " " in i and i.split(" ", 1)[0] in spaceless):
            out.append(i)
    return out


def _bare_names(of: list[str], op: list[str]) -> tuple[list[str], list[str]]:
    """Gold lists of bare test names (SWE-bench's sympy, run by its own runner: `test_sparse`):
    our `path::test` ids become their last `::` part where that name is unique among ours."""
    names = [i.rsplit("::", 1)[-1] for i in of + op]
    unique = {n for n in names if names.count(n) == 1}

    def bare(ids: list[str]) -> list[str]:
        return sorted({(i.rsplit("::", 1)[-1] if i.rsplit("::", 1)[-1] in unique else i) for i in ids})
    return bare(of), bare(op)


def _ratio(n: int, d: int) -> float:
    return 1.0 if d == 0 else n / d


def score_against_gold(ours_f2p: Iterable[str], ours_p2p: Iterable[str],
                       gold_f2p: Iterable[str], gold_p2p: Iterable[str]) -> dict:
    """Compare our lists with a gold instance's (ids matched by `gold_matches`).

    Returns a dict: `f2p_recall` (share of gold F2P we found), `f2p_precision` (share of ours
    that gold lists), `f2p_exact` (both 1.0), `p2p_recall` (share of gold P2P we also list as
    P2P), `p2p_precision`, and the lists `f2p_missing`, `f2p_extra`, `p2p_missing`,
    `p2p_extra`. A ratio over an empty list is 1.0 (nothing to find / nothing wrong). When no
    gold id has a `::` (bare names, as SWE-bench gives sympy's), our ids are compared by their
    last `::` part where that is unique among ours.
    """
    of, op, gf, gp = (sorted(set(x)) for x in (ours_f2p, ours_p2p, gold_f2p, gold_p2p))
    if (gf or gp) and not any("::" in g for g in gf + gp):
        of, op = _bare_names(of, op)
    gf_found = _matched(gf, of)
    of_ok = _matched(of, gf)
    gp_found = _matched(gp, op)
    op_ok = _matched(op, gp)
    f2p_recall, f2p_precision = _ratio(len(gf_found), len(gf)), _ratio(len(of_ok), len(of))
    return {
        "f2p_recall": f2p_recall,
        "f2p_precision": f2p_precision,
        "f2p_exact": f2p_recall == 1.0 and f2p_precision == 1.0,
        "p2p_recall": _ratio(len(gp_found), len(gp)),
        "p2p_precision": _ratio(len(op_ok), len(op)),
        "f2p_missing": sorted(set(gf) - set(gf_found)),
        "f2p_extra": sorted(set(of) - set(of_ok)),
        "p2p_missing": sorted(set(gp) - set(gp_found)),
        "p2p_extra": sorted(set(op) - set(op_ok)),
    }
