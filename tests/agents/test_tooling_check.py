"""The tooling check (issue 24, "the fix may not touch what grades it"): a verified fix whose
patch changes build or test tooling gets one more run, the `core` side (base + the patch without
its tooling hunks + test_patch), targeted at its FAIL_TO_PASS; an id that does not pass there
makes the task `invalid_task` (agents.verification `_Sides.core_check`).

A toy Go-like ecosystem on the fake sandbox: which tests pass depends on the side -- "before",
"after" (the whole patch applied, or its snapshot) and "core" (the core patch applied, or its
snapshot) -- as `World` scripts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agents.minter as minter
from agents.mint_config import MintConfig
from agents.models import StepRecord
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_repo
from tests.agents.test_adaptive import PKG, TEST_PATCH, ToyEco, _events
from envpool.fake import FakeSandboxFactory

CODE = "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1 +1 @@\n-package calc // bug\n" \
       "+package calc // fixed\n"
GO_MOD = "diff --git a/go.mod b/go.mod\n--- a/go.mod\n+++ b/go.mod\n@@ -1,2 +1,2 @@\n module example.com/calc\n" \
         "-go 1.20\n+go 1.21\n"
DOTFILE = "diff --git a/.toyrc b/.toyrc\nnew file mode 100644\n--- /dev/null\n+++ b/.toyrc\n@@ -0,0 +1 @@\n" \
          "+force-pass TestAdd\n"


class World:
    """The fake engine: the tests and how they end per side; every test run and build recorded
    as (side, command, sandbox)."""

    def __init__(self, sides: dict[str, dict[str, str]]):
        self.sides = sides
        self.runs: list[tuple[str, str, object]] = []
        self.builds: list[str] = []
        self.factory = f = FakeSandboxFactory(run_id="t")

        def side_of(sb) -> str:
            labels = [k.log_label or "" for k in sb.calls]
            built = sb.spec.image.rsplit(":", 1)[-1]
            for side in ("core", "after"):
                if any(lbl.startswith(f"{side}:") and "patch" in lbl for lbl in labels) or f"-{side}-snapshot" in built:
                    return side
            return "before"

        def tests(cmd, sb):
            side = side_of(sb)
            self.runs.append((side, cmd, sb))
            sb.cpu_seconds = 2.0
            results = dict(self.sides[side])
            if "-run '^(" in cmd:
                wanted = cmd.split("-run '^(", 1)[1].split(")$'", 1)[0].split("|")
                results = {t: a for t, a in results.items() if t in wanted}
            return (1 if "fail" in results.values() else 0, _events(results))

        def build(cmd, sb):
            self.builds.append(side_of(sb))
            sb.cpu_seconds = 5.0
            return (0, "built")

        f.on(r"^fetch-deps", lambda cmd, sb: (0, "ok"))
        f.on(r"build-tests", build)
        f.on(r"go test -json", tests)


TESTS = {f"TestP{i}": "pass" for i in range(6)}
BEFORE = {**TESTS, "TestAdd": "fail"}
AFTER = {**TESTS, "TestAdd": "pass"}


def _mint(tmp_path, monkeypatch, world: World, patch: str, eco=None, **verify):
    git_dir, sha = make_repo(tmp_path, {"calc.go": "package calc // bug\n",
                                        "calc_test.go": "package calc // old test\n",
                                        "go.mod": "module example.com/calc\ngo 1.20\n"})
    inst = make_instance(sha, "go", "2024-01-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc", patch=patch,
                         test_patch=TEST_PATCH)
    force_ecosystem(monkeypatch, eco or ToyEco())
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", verify=verify)
    return minter.mint_instance(inst, git_dir, cfg, factory=world.factory)


def _steps(res) -> list[StepRecord]:
    return [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]


@pytest.mark.parametrize("compile_once", [False, True])
def test_a_fix_whose_fail_to_pass_needs_its_tooling_is_invalid(tmp_path, monkeypatch, compile_once):
    """The code change fixes nothing; a dotfile the toy runner reads makes TestAdd pass. Verified
    before/after, but in the core (no .toyrc) TestAdd fails: invalid_task naming the path and the
    id, attribution task; the core run targeted at the FAIL_TO_PASS, recorded as `core#1`."""
    world = World({"before": BEFORE, "after": AFTER, "core": BEFORE})
    res = _mint(tmp_path, monkeypatch, world, CODE + DOTFILE, compile_once=compile_once)
    assert res.outcome == "invalid_task", res.reason
    assert ".toyrc" in res.reason and f"{PKG}::TestAdd" in res.reason and "tooling" in res.reason
    assert res.FAIL_TO_PASS == []
    core = [(cmd, sb) for side, cmd, sb in world.runs if side == "core"]
    assert len(core) == 1 and "-run '^(TestAdd)$'" in core[0][0]
    assert [r.label for r in res.cost.runs if r.label.startswith("core")] == \
        (["core:build", "core#1"] if compile_once else ["core#1"])
    assert [r.kind for r in res.cost.runs if r.label == "core#1"] == ["targeted"]
    assert res.cost.phase_cpu_s["core"] == 2.0 + (5.0 if compile_once else 0.0)
    assert "core" in res.timings
    if compile_once:
        assert world.builds == ["before", "after", "core"]
    else:  # the core patch applied in the run's sandbox: the code, not the dotfile; test paths reset, then the test_patch
        sb = core[0][1]
        patches = [v.decode() for k, v in sb.files.items() if k.startswith("/tmp/swemint/patches/")]
        assert any("calc.go" in p and ".toyrc" not in p for p in patches)
        assert not any(".toyrc" in p for p in patches) and any("calc_test.go" in p for p in patches)
        labels = [k.log_label or "" for k in sb.calls]
        assert labels.index("core:reset-test-paths") < min(i for i, x in enumerate(labels) if x.startswith("core:test_patch"))
    steps = _steps(res)
    rules = [s.rule for s in steps if s.agent == "verification"]
    assert "core#1" in rules and "core:decided" in rules
    decided = next(s for s in steps if s.rule == "core:decided")
    assert decided.exit_code == 1 and ".toyrc" in decided.note
    rounds = res.rounds
    assert len(rounds) == 1  # final: no other configuration, no rebuild


def test_a_harmless_tooling_hunk_keeps_the_verdict(tmp_path, monkeypatch):
    """A version bump in go.mod beside the real fix: TestAdd passes in the core too; verified,
    the core run recorded (cost and trajectory), the floor without it."""
    world = World({"before": BEFORE, "after": AFTER, "core": AFTER})
    res = _mint(tmp_path, monkeypatch, world, CODE + GO_MOD, compile_once=False)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == [f"{PKG}::TestAdd"] and len(res.PASS_TO_PASS) == 6
    assert [r.label for r in res.cost.runs][-1] == "core#1"
    assert sum(1 for side, _, _ in world.runs if side == "core") == 1
    assert res.cost.phase_cpu_s["core"] == 2.0
    assert res.cost.floor_cpu_s is not None and res.cost.floor_cpu_s == 2.0 + 2.0  # install 0 + before#1 + after#1
    decided = next(s for s in _steps(res) if s.rule == "core:decided")
    assert "go.mod" in decided.note and "verified stands" in decided.note


def test_no_tooling_hunk_no_core_run(tmp_path, monkeypatch):
    world = World({"before": BEFORE, "after": AFTER, "core": BEFORE})
    res = _mint(tmp_path, monkeypatch, world, CODE)
    assert res.outcome == "verified", res.reason
    assert not any(side == "core" for side, _, _ in world.runs) and "core" not in world.builds
    assert not any(r.label.startswith("core") for r in res.cost.runs)
    assert not any(s.rule.startswith("core") for s in _steps(res))


def test_the_check_can_be_turned_off(tmp_path, monkeypatch):
    world = World({"before": BEFORE, "after": AFTER, "core": BEFORE})
    res = _mint(tmp_path, monkeypatch, world, CODE + DOTFILE, compile_once=False, tooling_check=False)
    assert res.outcome == "verified"
    assert not any(side == "core" for side, _, _ in world.runs)
    assert MintConfig().verify.tooling_check is True


def test_a_fix_that_is_only_tooling_is_decided_without_a_run(tmp_path, monkeypatch):
    """Nothing but a dotfile: the core is the before side, where TestAdd fails -- invalid_task,
    no extra run."""
    world = World({"before": BEFORE, "after": AFTER, "core": AFTER})
    res = _mint(tmp_path, monkeypatch, world, DOTFILE, compile_once=False)
    assert res.outcome == "invalid_task" and ".toyrc" in res.reason and "before side" in res.reason
    assert not any(side == "core" for side, _, _ in world.runs)


def test_a_core_side_that_cannot_be_targeted_runs_in_full(tmp_path, monkeypatch):
    world = World({"before": BEFORE, "after": AFTER, "core": {**AFTER, "TestP3": "fail"}})
    res = _mint(tmp_path, monkeypatch, world, CODE + GO_MOD, eco=ToyEco(target=False), compile_once=False)
    assert res.outcome == "verified", res.reason  # only FAIL_TO_PASS ids are asked of the core
    core = [cmd for side, cmd, _ in world.runs if side == "core"]
    assert len(core) == 1 and "-run" not in core[0]
    assert [r.kind for r in res.cost.runs if r.label == "core#1"] == ["full"]


def test_a_core_run_whose_selection_misses_a_target_runs_again_in_full(tmp_path, monkeypatch):
    """The targeted core run reports another test, not TestAdd (a selection the runner read
    otherwise): TestAdd is not observed there, so the core runs again in full (`core#2`), where it
    passes -- verified, not an invalid_task made by the selection."""
    world = World({"before": BEFORE, "after": AFTER, "core": AFTER})
    res = _mint(tmp_path, monkeypatch, world, CODE + GO_MOD, eco=ToyEco(selects="TestP0"), compile_once=False)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == [f"{PKG}::TestAdd"]
    core = [cmd for side, cmd, _ in world.runs if side == "core"]
    assert len(core) == 2 and "-run '^(TestP0)$'" in core[0] and "-run" not in core[1]
    assert [(r.label, r.kind) for r in res.cost.runs if r.label.startswith("core")] == [
        ("core#1", "targeted"), ("core#2", "full")]
    # where the full core run does not pass it either, the verdict is the tooling's
    world = World({"before": BEFORE, "after": AFTER, "core": BEFORE})
    res = _mint(tmp_path / "b", monkeypatch, world, CODE + GO_MOD, eco=ToyEco(selects="TestP0"), compile_once=False)
    assert res.outcome == "invalid_task" and f"{PKG}::TestAdd" in res.reason
    assert sum(1 for side, _, _ in world.runs if side == "core") == 2


def test_the_row_format_is_unchanged(tmp_path, monkeypatch):
    """A verified row with a core run has the fields of one without (the export's columns)."""
    a = _mint(tmp_path / "a", monkeypatch, World({"before": BEFORE, "after": AFTER, "core": AFTER}), CODE + GO_MOD,
              compile_once=False)
    b = _mint(tmp_path / "b", monkeypatch, World({"before": BEFORE, "after": AFTER, "core": AFTER}), CODE,
              compile_once=False)
    assert set(json.loads(a.model_dump_json())) == set(json.loads(b.model_dump_json()))
    assert a.outcome == b.outcome == "verified" and a.FAIL_TO_PASS == b.FAIL_TO_PASS


def test_only_the_tests_of_a_module_the_fix_creates_that_could_not_run_are_excused():
    """The new-module rule of the core check (`_Sides._new_module_tests`): the fix creates module
    `extra` (its pom.xml + `<module>extra</module>`); a FAIL_TO_PASS id of a test file the
    test_patch adds there, absent from the core run, is excused; one that ran and failed there,
    one of another module, any id when the fix creates no module, and any id when the "new" folder
    holds files at base_commit are not."""
    from types import SimpleNamespace

    from agents.verification import _Sides
    from tests.envpool.test_tooling import REG, SRC, _add

    test_patch = _add("extra/src/test/java/com/acme/ExtraTest.java", ["class ExtraTest {}"])
    module = REG + _add("extra/pom.xml", ["<project/>"]) + SRC
    failing = ["com.acme.ExtraTest#twice", "com.acme.ExtraTest#zero", "com.acme.CoreTest#add"]
    run = SimpleNamespace(report=SimpleNamespace(statuses={"com.acme.ExtraTest#zero": "FAILED",
                                                           "com.acme.CoreTest#add": "FAILED"}, collection_errors=[]))
    base = SimpleNamespace(file_set=frozenset({"pom.xml", "core/pom.xml", "core/src/test/java/com/acme/CoreTest.java"}))
    sides = SimpleNamespace(instance=SimpleNamespace(patch=module, test_patch=test_patch), tree=base)
    assert _Sides._new_module_tests(sides, failing, run) == ["com.acme.ExtraTest#twice"]
    assert _Sides._new_module_tests(sides, ["com.acme.CoreTest#other"], run) == []
    # the core's build failed (Maven without the module: the runner lists the targeted ids FAILED under
    # a "[build failed]" unit): the module's ids did not run -- excused; another module's never
    broken = SimpleNamespace(report=SimpleNamespace(statuses=dict.fromkeys(failing, "FAILED"),
                                                    collection_errors=["test sources [build failed]"]))
    assert _Sides._new_module_tests(sides, failing, broken) == ["com.acme.ExtraTest#twice", "com.acme.ExtraTest#zero"]
    assert _Sides._new_module_tests(sides, failing, None) == []
    no_module = SimpleNamespace(instance=SimpleNamespace(patch=REG + SRC, test_patch=test_patch), tree=base)
    assert _Sides._new_module_tests(no_module, failing, run) == []
    # a folder that exists at base_commit (a test folder the fix "registers" beside a new build file): no excuse
    held = SimpleNamespace(file_set=frozenset({"pom.xml", "extra/src/test/java/com/acme/Old.java"}))
    existing = SimpleNamespace(instance=SimpleNamespace(patch=module, test_patch=test_patch), tree=held)
    assert _Sides._new_module_tests(existing, failing, run) == []
