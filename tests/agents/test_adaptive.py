"""Verification that spends CPU where the answer is (issue 26): the adaptive schedule, targeted
reruns, compile-once snapshots and the row's cost, with a toy ecosystem and the fake sandbox.

The toy ecosystem writes `go test -json`-shaped reports; a targeted run is recognised by the
`-run` of its command (the hook the toy implements, as Go's does), the snapshot build by
`build-tests`. Which tests pass depends on the side (the patch applied, or the snapshot built
from it) and on a script of per-run overrides (a flaky test)."""

from __future__ import annotations

import json

import pytest

import agents.minter as minter
from agents import adaptive
from agents.mint_config import MintConfig
from agents.ecosystems.base import Ecosystem, PolyPlan, TestSpec
from envpool.fake import FakeSandboxFactory
from envpool.testrun.status import TestRunReport, TestStatus
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_repo

PATCH = "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1 +1 @@\n-package calc // bug\n" \
        "+package calc // fixed\n"
TEST_PATCH = "diff --git a/calc_test.go b/calc_test.go\n--- a/calc_test.go\n+++ b/calc_test.go\n@@ -1 +1 @@\n" \
             "-package calc // old test\n+package calc // new test\n"
PKG = "example.com/calc"


def _events(results: dict[str, str], crash: str | None = None) -> str:
    """`go test -json` events of one run of PKG, shaped as Go writes them: each test's run and
    end, the binary's final ``PASS``/``FAIL`` line, the package's end. `crash`: the test whose
    panic kills the binary -- it fails, the tests after it never run, no final line."""
    lines, end = [], "fail" if "fail" in results.values() or crash else "pass"
    for test, action in results.items():
        lines.append({"Action": "run", "Package": PKG, "Test": test})
        if test == crash:
            lines.append({"Action": "output", "Package": PKG, "Test": test, "Output": "panic: boom [recovered]\n"})
            lines.append({"Action": "fail", "Package": PKG, "Test": test, "Elapsed": 0.01})
            break
        lines.append({"Action": action, "Package": PKG, "Test": test, "Elapsed": 0.01})
    else:
        lines.append({"Action": "output", "Package": PKG, "Output": end.upper() + "\n"})
    lines.append({"Action": "output", "Package": PKG, "Output": f"{'ok  ' if end == 'pass' else 'FAIL'}\t{PKG}\t0.02s\n"})
    lines.append({"Action": end, "Package": PKG, "Elapsed": 0.02})
    return "\n".join(json.dumps(x) for x in lines) + "\n"


class ToyEco(Ecosystem):
    """A Go-like ecosystem with the issue-26 hooks: `targeted_plan` (``-run '^(A|B)$'``) and
    `build_command` (``build-tests``)."""

    name = "toy"
    languages = ("go",)

    def __init__(self, build: bool = True, target: bool = True, selects: str | None = None):
        self.with_build, self.target, self.selects = build, target, selects

    def detect(self, tree, language):
        return 10

    def plan(self, tree, instance, touched, images, request=None):
        return PolyPlan(ecosystem="toy", toolchain="toy 1.0", image="toy:1", setup_commands=["fetch-deps"],
                        test_command="go test -json ./...", parser="go_test_json", test_files=["calc_test.go"])

    def repair(self, plan, command, output, tried):
        return None

    def targeted_plan(self, plan, ids):
        if not self.target:
            return None
        names = self.selects or "|".join(sorted(i.split("::", 1)[1] for i in ids))  # `selects`: a wrong selection
        return plan.with_test(TestSpec(name="targeted", test_command=f"go test -json -run '^({names})$' ./...",
                                       parser=plan.parser))

    def build_command(self, plan):
        return "build-tests" if self.with_build else None

    def snapshot_env(self, plan):
        return {"TOY_BUILT": "1"}


class World:
    """The fake engine: per side, the tests and how they end; `flips` overrides (side, run
    number) -> {test: action}; every test run and build is recorded with its sandbox."""

    def __init__(self, before: dict[str, str], after: dict[str, str], flips=None, cpu: float = 2.0,
                 crashes=None):
        self.before, self.after, self.flips = before, after, flips or {}
        self.crashes = crashes or {}  # (side, run number) -> the test whose panic kills the binary
        self.runs: list[tuple[str, str, object]] = []  # (side, command, sandbox)
        self.builds: list[tuple[str, object]] = []
        self.factory = f = FakeSandboxFactory(run_id="t")
        self.cpu = cpu

        def side_of(sb) -> str:
            patched = any("after_patch" in c or "after:patch" in (k.log_label or "") for c, k in
                          zip(sb.commands, sb.calls))
            built = sb.spec.image.rsplit(":", 1)[-1]
            return "after" if patched or "-after-snapshot" in built else "before"

        def tests(cmd, sb):
            side = side_of(sb)
            n = sum(1 for s, _, _ in self.runs if s == side) + 1
            self.runs.append((side, cmd, sb))
            sb.cpu_seconds = self.cpu
            results = dict(self.before if side == "before" else self.after)
            results.update(self.flips.get((side, n), {}))
            results = {t: a for t, a in results.items() if a != "absent"}  # "absent": the run lacks it
            if "-run '^(" in cmd:
                wanted = cmd.split("-run '^(", 1)[1].split(")$'", 1)[0].split("|")
                results = {t: a for t, a in results.items() if t in wanted}
            crash = self.crashes.get((side, n))
            return (1 if "fail" in results.values() or crash else 0, _events(results, crash))

        def build(cmd, sb):
            self.builds.append((side_of(sb), sb))
            sb.cpu_seconds = 5.0
            return (0, "built")

        def deps(cmd, sb):
            sb.cpu_seconds = 10.0
            return (0, "ok")

        f.on(r"^fetch-deps", deps)
        f.on(r"build-tests", build)
        f.on(r"go test -json", tests)


@pytest.fixture
def instance(tmp_path):
    git_dir, sha = make_repo(tmp_path, {"calc.go": "package calc // bug\n",
                                        "calc_test.go": "package calc // old test\n"})
    inst = make_instance(sha, "go", "2024-01-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc", patch=PATCH,
                         test_patch=TEST_PATCH)
    return inst, git_dir


def _mint(tmp_path, instance, monkeypatch, world: World, eco: ToyEco, **verify):
    inst, git_dir = instance
    force_ecosystem(monkeypatch, eco)
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", verify=verify)
    return minter.mint_instance(inst, git_dir, cfg, factory=world.factory)


def test_no_candidate_decides_after_two_runs(tmp_path, instance, monkeypatch):
    """Nothing fails before and passes after: `no_fail_to_pass` after before#1 and after#1."""
    world = World({"TestAdd": "pass", "TestOld": "pass"}, {"TestAdd": "pass", "TestOld": "pass"})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False)
    assert res.outcome == "no_fail_to_pass", res.reason
    assert [s for s, _, _ in world.runs] == ["before", "after"]
    assert [r.label for r in res.cost.runs] == ["before#1", "after#1"]
    assert all("TOY_BUILT" not in (c.env or {}) for _, _, sb in world.runs for c in sb.calls)  # no snapshot
    # the fixed policy runs all five whatever they show
    world = World({"TestAdd": "pass"}, {"TestAdd": "pass"})
    res = _mint(tmp_path / "f", instance, monkeypatch, world, ToyEco(), compile_once=False, policy="fixed")
    assert res.outcome == "no_fail_to_pass" and [s for s, _, _ in world.runs] == ["before"] * 2 + ["after"] * 3


def test_reruns_target_the_candidates_and_keep_one_full_after_run(tmp_path, instance, monkeypatch):
    """Without `full_before_rerun`: before#2 and after#2 targeted, after#3 full (1 + 2 full runs)."""
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False, full_before_rerun=False)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == [f"{PKG}::TestAdd"] and len(res.PASS_TO_PASS) == 6 and res.flaky_tests == []
    kinds = [(r.label, r.kind) for r in res.cost.runs]
    assert kinds == [("before#1", "full"), ("after#1", "full"), ("before#2", "targeted"), ("after#2", "targeted"),
                     ("after#3", "full")]
    assert all("-run '^(TestAdd)$'" in cmd for _, cmd, _ in world.runs[2:4])
    assert "-run" not in world.runs[4][1]
    assert set(res.timings) >= {"before", "after", "reruns"}


def _full_runs(res) -> dict[str, int]:
    out = {"before": 0, "after": 0}
    for r in res.cost.runs:
        if r.kind == "full":
            out[r.label.split("#", 1)[0]] += 1
    return out


def test_full_before_rerun_runs_before2_in_full_and_still_targets_after2(tmp_path, instance, monkeypatch):
    """The default (`verify.full_before_rerun`): before#2 full (it covers the candidate's before
    confirmation), after#2 targeted, after#3 full -- full runs before + after 2 + 2, as
    docs/cost.md says (fixed: 2 + 3; without the key: 1 + 2)."""
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False)
    assert MintConfig().verify.full_before_rerun is True
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == [f"{PKG}::TestAdd"] and len(res.PASS_TO_PASS) == 6 and res.flaky_tests == []
    assert [(r.label, r.kind) for r in res.cost.runs] == [
        ("before#1", "full"), ("after#1", "full"), ("before#2", "full"), ("after#2", "targeted"), ("after#3", "full")]
    assert "-run" not in world.runs[2][1] and "-run '^(TestAdd)$'" in world.runs[3][1]
    assert _full_runs(res) == {"before": 2, "after": 2}
    assert res.cost.policy["verify.full_before_rerun"] is True
    for kw, want in (({"full_before_rerun": False}, {"before": 1, "after": 2}),
                     ({"policy": "fixed"}, {"before": 2, "after": 3})):
        world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"})
        res = _mint(tmp_path / next(iter(kw)), instance, monkeypatch, world, ToyEco(), compile_once=False, **kw)
        assert res.outcome == "verified" and _full_runs(res) == want, kw


def test_a_passing_to_passing_test_that_flakes_only_in_before2_is_caught_with_full_before_rerun(
        tmp_path, instance, monkeypatch):
    """TestP2 passes everywhere but in before#2: the full before#2 sees it fail (flaky, not
    PASS_TO_PASS) as the fixed policy's does; a targeted before#2 never runs it."""
    tests = {f"TestP{i}": "pass" for i in range(6)}
    flips = {("before", 2): {"TestP2": "fail"}}
    for name, kw, caught in (("remedy", {}, True), ("fixed", {"policy": "fixed"}, True),
                             ("targeted", {"full_before_rerun": False}, False)):
        world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"}, flips=flips)
        res = _mint(tmp_path / name, instance, monkeypatch, world, ToyEco(), compile_once=False, **kw)
        assert res.outcome == "verified" and res.FAIL_TO_PASS == [f"{PKG}::TestAdd"], (name, res.reason)
        assert (res.flaky_tests == [f"{PKG}::TestP2"]) is caught, name
        assert (f"{PKG}::TestP2" in res.PASS_TO_PASS) is not caught, name


def test_full_before_rerun_still_confirms_the_candidate_before(tmp_path, instance, monkeypatch):
    """The candidate passes in before#2 (a flaky candidate): the full before#2 observes it as the
    targeted one did -- flaky, no FAIL_TO_PASS."""
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"}, flips={("before", 2): {"TestAdd": "pass"}})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False)
    assert res.flaky_tests == [f"{PKG}::TestAdd"] and res.FAIL_TO_PASS == [] and res.outcome == "no_fail_to_pass"


def test_no_candidate_still_decides_after_two_runs_with_full_before_rerun(tmp_path, instance, monkeypatch):
    world = World({"TestAdd": "pass", "TestOld": "pass"}, {"TestAdd": "pass", "TestOld": "pass"})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False, full_before_rerun=True)
    assert res.outcome == "no_fail_to_pass", res.reason
    assert [r.label for r in res.cost.runs] == ["before#1", "after#1"]


def test_targeted_reruns_still_catch_a_flaky_candidate(tmp_path, instance, monkeypatch):
    """TestAdd passes after in after#1 but fails in the targeted after#2: flaky, in no list --
    as the fixed policy's full after#2 finds it."""
    tests = {f"TestP{i}": "pass" for i in range(6)}
    base = ({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"})
    for policy in ("adaptive", "fixed"):
        world = World(*base, flips={("after", 2): {"TestAdd": "fail"}})
        res = _mint(tmp_path / policy, instance, monkeypatch, world, ToyEco(), compile_once=False, policy=policy)
        assert res.flaky_tests == [f"{PKG}::TestAdd"], policy
        assert res.outcome == "no_fail_to_pass" and res.FAIL_TO_PASS == [], policy


def test_a_wrong_selection_changes_no_list(tmp_path, instance, monkeypatch):
    """A targeted rerun whose selection misses its target (an ecosystem's ``-Dtest`` that a
    runner version reads otherwise) and runs another test, failing: the target is absent there
    and the other test not targeted, so that run observes neither (`envpool.grading.observed`)
    and the lists are the full runs' -- no rerun in full, the target seen once less."""
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"},
                  flips={("before", 2): {"TestP0": "fail"}, ("after", 2): {"TestP0": "fail"}})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(selects="TestP0"), compile_once=False,
                full_before_rerun=False)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == [f"{PKG}::TestAdd"] and f"{PKG}::TestP0" in res.PASS_TO_PASS
    assert len(res.PASS_TO_PASS) == 6 and res.flaky_tests == []
    assert [(r.label, r.kind, r.tests) for r in res.cost.runs] == [
        ("before#1", "full", 7), ("after#1", "full", 7), ("before#2", "targeted", 1), ("after#2", "targeted", 1),
        ("after#3", "full", 7)]


def test_a_passing_to_passing_test_that_flakes_after_is_caught_by_the_full_after_run(tmp_path, instance, monkeypatch):
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"}, flips={("after", 3): {"TestP2": "fail"}})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False)
    assert res.outcome == "verified" and res.flaky_tests == [f"{PKG}::TestP2"]
    assert f"{PKG}::TestP2" not in res.PASS_TO_PASS


def test_compile_once_builds_each_side_once_and_runs_from_its_snapshot(tmp_path, instance, monkeypatch):
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco())
    assert res.outcome == "verified" and res.FAIL_TO_PASS == [f"{PKG}::TestAdd"]
    assert [side for side, _ in world.builds] == ["before", "after"]
    for side, sb in world.builds:  # the build sandbox: the side's patches, the build, no test run
        assert not any("go test" in c for c in sb.commands)
        assert len(sb.commits) == 1 and sb.commits[0].labels["swemint.snapshot"] == side
    snaps = {sb.commits[0].ref for _, sb in world.builds}
    for side, _, sb in world.runs:  # every run: a fresh container of its side's snapshot, no patch applied
        assert sb.spec.image in snaps and f"-{side}-snapshot" in sb.spec.image
        assert not any("git apply" in c or "patch" in (k.log_label or "") for c, k in zip(sb.commands, sb.calls))
    assert len({id(sb) for _, _, sb in world.runs}) == len(world.runs) == 5
    for _, _, sb in world.runs:  # the ecosystem's snapshot_env in every run from a snapshot
        assert [c.env.get("TOY_BUILT") for c in sb.calls if "go test" in c.command] == ["1"]
    for _, sb in world.builds:  # not in the build
        assert all("TOY_BUILT" not in (c.env or {}) for c in sb.calls)
    builds = [r for r in res.cost.runs if r.kind == "build"]
    assert [r.label for r in builds] == ["before:build", "after:build"]


def test_the_row_records_cpu_by_phase_and_the_floor(tmp_path, instance, monkeypatch):
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"}, cpu=2.0)
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco())
    c = res.cost
    assert c.phase_cpu_s["setup"] == 10.0  # the build container's fake cgroup
    assert c.phase_cpu_s["before"] == 5.0 + 2.0 and c.phase_cpu_s["after"] == 5.0 + 2.0
    assert c.phase_cpu_s["reruns"] == 3 * 2.0
    assert c.container_cpu_s == 10.0 + 14.0 + 6.0
    assert c.floor_cpu_s == 10.0 + 7.0 + 7.0  # install + first before and after runs with their builds
    assert c.policy["verify.policy"] == "adaptive" and c.policy["verify.compile_once"] is True
    assert c.cores >= 1 and c.load_start is not None and c.cpu_s >= c.container_cpu_s


def test_the_schedule_functions():
    b = TestRunReport(statuses={"a": TestStatus.FAILED, "b": TestStatus.PASSED, "c": TestStatus.PASSED},
                      tests_ran=True)
    a = TestRunReport(statuses={"a": TestStatus.PASSED, "b": TestStatus.FAILED, "c": TestStatus.PASSED,
                                "n": TestStatus.PASSED}, tests_ran=True)
    cands, differ = adaptive.candidates(b, a)
    assert cands == ["a", "n"] and differ == ["a", "b", "n"]
    assert adaptive.targets_of(cands, differ, a) is None  # 3 of 4 tests: a full rerun is as cheap
    big = TestRunReport(statuses={f"t{i}": TestStatus.PASSED for i in range(20)} | dict(a.statuses), tests_ran=True)
    assert adaptive.targets_of(cands, differ, big) == ["a", "b", "n"]
    assert adaptive.reruns(2, 3, ["a"]) == [("before", ["a"]), ("after", ["a"]), ("after", None)]
    assert adaptive.reruns(1, 2, ["a"]) == [("after", None)]
    assert adaptive.reruns(2, 3, ["a"], full_before_rerun=True) == [("before", None), ("after", ["a"]), ("after", None)]
    assert adaptive.reruns(3, 3, ["a"], full_before_rerun=True)[:2] == [("before", None), ("before", ["a"])]
    assert adaptive.reruns(1, 3, ["a"], full_before_rerun=True) == [("after", ["a"]), ("after", None)]
    assert adaptive.fixed(2, 3) == [("before", None)] * 2 + [("after", None)] * 3


def test_the_snapshot_build_goes_on_while_it_prints_as_a_setup_step_does(tmp_path, instance, monkeypatch):
    """A side's snapshot build gets the setup steps' progress-scaled limit (S11's StepProgress):
    past the run limit it goes on while it prints, up to `setup_step_ceiling` -- a header the patch
    changes can rebuild a large C++ library on the after side for longer than one run's limit."""
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco())
    assert res.outcome == "verified"
    for side, sb in world.builds:
        build = [c for c in sb.calls if (c.log_label or "") == f"{side}:build"]
        assert len(build) == 1 and build[0].progress is not None, side
        assert build[0].progress.ceiling >= build[0].timeout


def _cut_short_world(**kw) -> World:
    """prometheus-15142's shape: TestAdd fails before and passes after; the package's other tests
    pass on both sides."""
    tests = {"TestP0": "pass", "TestCrash": "pass", "TestAdd": "pass", **{f"TestP{i}": "pass" for i in range(1, 6)}}
    return World({**tests, "TestAdd": "fail"}, tests, **kw)


def test_an_after1_whose_binary_panicked_is_not_decided_at_once(tmp_path, instance, monkeypatch):
    """after#1's test binary dies in TestCrash (a panic: Go fails the package, the tests after it
    are never reported, no final PASS/FAIL line): TestAdd, the FAIL_TO_PASS test, is absent from
    it, so after#1 shows no candidate. Before: `no_fail_to_pass` after two runs. Now the package
    stopped early: the remaining runs go ahead in full, and the instance is verified -- the tests
    after#1 never reached are neither failing nor flaky there."""
    world = _cut_short_world(crashes={("after", 1): "TestCrash"})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False)
    assert res.outcome == "verified", res.reason
    assert [s for s, _, _ in world.runs] == ["before", "after", "before", "after", "after"]
    assert all("-run" not in cmd for _, cmd, _ in world.runs)  # every rerun in full
    assert res.FAIL_TO_PASS == [f"{PKG}::TestAdd"]
    assert res.flaky_tests == [f"{PKG}::TestCrash"]  # it failed in after#1 and passed in the other two
    assert len(res.PASS_TO_PASS) == 6  # TestP0..5, although after#1 did not reach TestP1..5
    steps = [json.loads(line) for line in open(res.trajectory_path)]
    cut = [s for s in steps if s["rule"] == "adaptive:cut-short"]
    assert cut and "after#1 was cut short" in cut[0]["note"] and f"{PKG} [" not in cut[0]["note"]
    assert not any(s["rule"] == "adaptive:decided" for s in steps)


def test_an_after1_lacking_most_tests_without_a_mark_is_not_decided_at_once(tmp_path, instance, monkeypatch):
    """after#1 ends normally but reports 2 of before#1's 8 tests (a report cut some other way, no
    unit marked as stopped): clearly truncated relative to before#1, so no decision after two
    runs either -- the remaining runs in full, graded as `fixed` grades them (an unmarked absence
    is not passing: TestAdd is flaky, as under `fixed`, not silently `no_fail_to_pass` after two)."""
    gone = {t: "absent" for t in ["TestAdd"] + [f"TestP{i}" for i in range(1, 6)]}
    world = _cut_short_world(flips={("after", 1): gone})
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False)
    assert [s for s, _, _ in world.runs] == ["before", "after", "before", "after", "after"]
    assert all("-run" not in cmd for _, cmd, _ in world.runs)
    assert f"{PKG}::TestAdd" in res.flaky_tests
    fixed = _cut_short_world(flips={("after", 1): gone})
    ref = _mint(tmp_path / "f", instance, monkeypatch, fixed, ToyEco(), compile_once=False, policy="fixed")
    assert (res.outcome, res.FAIL_TO_PASS, res.PASS_TO_PASS, res.flaky_tests) == \
        (ref.outcome, ref.FAIL_TO_PASS, ref.PASS_TO_PASS, ref.flaky_tests)


def test_a_complete_after1_with_no_candidate_is_still_decided_at_once(tmp_path, instance, monkeypatch):
    """The guard costs nothing where both first runs are whole: a failing test is no stop."""
    tests = {"TestP0": "pass", "TestBad": "fail"}
    world = World(tests, tests)
    res = _mint(tmp_path, instance, monkeypatch, world, ToyEco(), compile_once=False)
    assert res.outcome == "no_fail_to_pass" and [s for s, _, _ in world.runs] == ["before", "after"]


def test_cut_short():
    P = TestStatus.PASSED
    other = TestRunReport(statuses={f"p::T{i}": P for i in range(20)} | {"q::TestGone": P}, tests_ran=True)
    whole = TestRunReport(statuses=dict(other.statuses), tests_ran=True)
    assert adaptive.cut_short(whole, other) is None
    stopped = TestRunReport(statuses=dict(other.statuses), collection_errors=["p [stopped early: panic]"])
    assert "stopped early: p" in adaptive.cut_short(stopped, other)
    catch2 = TestRunReport(statuses={"u::a": P}, collection_errors=["u [Catch2 run stopped early]"])
    assert adaptive.cut_short(catch2, other) is not None
    one_less = TestRunReport(statuses={t: P for t in other.statuses if t != "q::TestGone"})
    assert adaptive.cut_short(one_less, other) is None  # 1 of 21: under TRUNCATED_SHARE
    half = TestRunReport(statuses={f"p::T{i}": P for i in range(10)})
    assert "lacking 11 of the other side's 21" in adaptive.cut_short(half, other)
    # a unit that failed to build, a file that failed to load, a test the patches remove: explained
    assert adaptive.cut_short(TestRunReport(statuses={"q::TestGone": P}, collection_errors=["p [build failed]"]),
                              other) is None
    assert adaptive.cut_short(TestRunReport(statuses={"q::TestGone": P}, collection_errors=["p"]), other) is None
    names = {f"T{i}" for i in range(10, 20)}
    assert adaptive.cut_short(half, other, names) is None  # 1 of 21 unexplained
