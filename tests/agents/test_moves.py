"""The loop's generic next moves (agents.moves, issue 25 item 1) with the fake sandbox: a round
that gives nothing to grade gets the ecosystem's moves, retests before rebuilds; the round a move
shapes records the move and its evidence, and a `move:<kind>` step says whether it worked."""

from __future__ import annotations

from agents.ecosystems.base import Ecosystem, Plan, PlanRequest, TestSpec
from agents.minter import mint_instance
from agents.models import StepRecord
from agents.moves import Move, MoveContext, merged_request, never_ran, stalled
from agents.verification import Attribution, Verdict
from envpool.fake import FakeSandboxFactory
from tests.agents.ecosystems.conftest import force_ecosystem
from tests.agents.test_loop import config, events, instance_on, patched, steps


class Moving(Ecosystem):
    """A Go-like ecosystem whose plan honours a `flags` option and which offers the moves given."""

    name = "go"
    languages = ("go",)

    def __init__(self, moves=(), added=()):
        self.moves = list(moves)
        self.added = list(added)
        self.contexts: list[MoveContext] = []
        self.requests: list[PlanRequest] = []

    def detect(self, tree, language):
        return 10

    def plan(self, tree, instance, touched, images, request=None):
        req = request or PlanRequest()
        self.requests.append(req)
        flags = " ".join(req.options.get("flags", []))
        return Plan(ecosystem="go", toolchain="go 1.19", image="toy:1.19", setup_commands=[f"configure {flags}".strip()],
                    test_command="go test -json ./...", parser="go_test_json", test_files=["calc_test.go"])

    def repair(self, plan, command, output, tried):
        return None

    def next_moves(self, ctx: MoveContext) -> list[Move]:
        self.contexts.append(ctx)
        return list(self.moves)

    def added_tests(self, test_patch: str) -> list[str]:
        return list(self.added)


def flow_steps(res, prefix: str) -> list[StepRecord]:
    return [s for s in steps(res) if s.agent == "flow" and s.rule.startswith(prefix)]


def test_a_round_that_ran_no_test_gets_a_retest_move_that_verifies_round_2(tmp_path, monkeypatch):
    unit = TestSpec(name="units", test_command="run-units", parser="go_test_json", test_files=["calc_test.go"])
    eco = Moving([Move(kind="status_units", serves="no per-test report", evidence="Makefile: test-calc runs calc",
                       test=unit)])
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"run-units", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb) else (1, events({"TestAdd": "fail"})))
    f.on(r"go test -json", (0, "no report at all\n"))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and [r.test for r in res.rounds] == ["touched", "units"]
    assert res.rounds[0].outcome == "tests_not_run" and res.rounds[0].feedback == "retest: move status_units"
    assert res.rounds[0].move == "" and res.rounds[1].move == "status_units"
    assert res.rounds[1].evidence == "Makefile: test-calc runs calc"
    assert eco.contexts[0].why.startswith("no test ran") and eco.contexts[0].tried[0].name == "touched"
    done = flow_steps(res, "move:")
    assert [(s.rule, s.exit_code) for s in done] == [("move:status_units", 0)]
    assert sum(1 for s in f.specs if s.network == "bridge") == 1  # a retest: no second build
    assert "run-units" in res.test_command


def test_retests_come_before_rebuilds_and_a_rebuild_move_merges_its_request(tmp_path, monkeypatch):
    whole = TestSpec(name="suite", test_command="go test -json -count=1 ./...", parser="go_test_json",
                     test_files=["calc_test.go"])
    eco = Moving([Move(kind="test_option", serves="tests behind a project option",
                       evidence="configure: turn WITH_TESTS ON", request=PlanRequest(options={"flags": ["-DWITH_TESTS=ON"]})),
                  Move(kind="whole_suite", serves="no finer selection", evidence="nothing owns calc_test.go", test=whole)])
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")

    def configure(cmd, sb):
        sb.put_file("/opt/tests-on", b"1" if "WITH_TESTS=ON" in cmd else b"0")
        return 0, "configured"

    def tests(cmd, sb):
        if sb.files.get("/opt/tests-on") != b"1":
            return 0, events({})
        return (0, events({"TestAdd": "pass"})) if patched(sb) else (1, events({"TestAdd": "fail"}))

    f.on(r"^configure", configure)
    f.on(r"go test -json", tests)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert [r.move for r in res.rounds] == ["", "whole_suite", "test_option"]
    assert [r.feedback for r in res.rounds[:2]] == ["retest: move whole_suite", "replan: move test_option"]
    assert res.rounds[2].evidence == "configure: turn WITH_TESTS ON"
    assert eco.requests[-1].options == {"flags": ["-DWITH_TESTS=ON"]}
    assert any("move test_option" in r for r in eco.requests[-1].reasons)
    assert [(s.rule, s.exit_code) for s in flow_steps(res, "move:")] == [("move:whole_suite", 1),
                                                                           ("move:test_option", 0)]
    assert sum(1 for s in f.specs if s.network == "bridge") == 2


def test_a_test_the_test_patch_adds_that_never_ran_calls_for_a_move(tmp_path, monkeypatch):
    """Tests discovered at build time: the old test passes on both sides, the added one is in no
    run (registered before the test_patch); the attribution alone would be final (`task`)."""
    again = TestSpec(name="rediscover", test_command="go test -json -run . ./...", parser="go_test_json",
                     test_files=["calc_test.go"])
    eco = Moving([Move(kind="rediscover", serves="tests discovered at build time",
                       evidence="TestAdd is added by the test_patch and no run reached it", test=again)],
                 added=["TestAdd"])
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json -run \.", lambda cmd, sb: (0, events({"TestAdd": "pass", "TestOld": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail", "TestOld": "pass"})))
    f.on(r"go test -json", (0, events({"TestOld": "pass"})))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert res.rounds[0].outcome == "no_fail_to_pass" and res.rounds[0].attribution.startswith("task")
    assert res.rounds[1].move == "rediscover" and res.FAIL_TO_PASS == ["example.com/calc::TestAdd"]
    assert eco.contexts[0].why == "tests the test_patch adds never ran: TestAdd"


def test_with_no_move_left_the_verdict_is_final_and_the_failed_move_is_recorded(tmp_path, monkeypatch):
    unit = TestSpec(name="units", test_command="run-units", parser="go_test_json", test_files=["calc_test.go"])
    eco = Moving([Move(kind="status_units", serves="no per-test report", evidence="e", test=unit)])
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json|run-units", (0, "nothing\n"))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "tests_not_run"
    assert len(res.rounds) == 2 and res.rounds[1].feedback == ""
    assert [(s.rule, s.exit_code) for s in flow_steps(res, "move:")] == [("move:status_units", 1)]


def test_an_ecosystem_without_the_hook_has_no_move(tmp_path, monkeypatch):
    from tests.agents.test_loop import Toy

    force_ecosystem(monkeypatch, Toy())
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", (0, "nothing\n"))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "tests_not_run" and len(res.rounds) == 1


def verdict(outcome: str, rule: str = "", kind: str = "task", f2p=(), p2p=(), tail: str = "") -> Verdict:
    return Verdict(outcome=outcome, reason="r", FAIL_TO_PASS=list(f2p), PASS_TO_PASS=list(p2p), output_tail=tail,
                   attribution=Attribution(kind=kind, rule=rule, detail="d"))


def test_stalled_says_why_a_round_gave_nothing_to_grade():
    eco = Moving(added=["Calc.Adds"])
    assert stalled(verdict("tests_not_run", "no-tests", "test_config"), Moving(), "x").startswith("no test ran")
    assert stalled(verdict("tests_not_run", "tampered"), Moving(), "x") == ""
    assert stalled(verdict("no_fail_to_pass", "no-touched-tests", "test_config"), Moving(), "x").startswith("d (")
    assert stalled(verdict("no_fail_to_pass", "passes-before", p2p=["t::Calc.Old"]), eco, "x") == \
        "tests the test_patch adds never ran: Calc.Adds"
    assert stalled(verdict("no_fail_to_pass", "passes-before", p2p=["t::Calc.Adds"]), eco, "x") == ""
    assert stalled(verdict("no_fail_to_pass", "fails-after", tail="[  FAILED  ] Calc.Adds (0 ms)"), eco, "x") == ""
    assert stalled(verdict("verified", kind="verified"), eco, "x") == ""
    assert never_ran(Moving(), "x", [], "") == []


def test_merged_request_extends_lists_and_options_and_keeps_the_rest():
    cur = PlanRequest(apt=["a"], options={"flags": ["-DX=ON"], "k": 1}, toolchain=">=1", reasons=["memory"])
    got = merged_request(cur, PlanRequest(apt=["a", "b"], options={"flags": ["-DX=ON", "-DY=ON"], "j": 2},
                                          test_args=["-Dz"]), "move test_option: e")
    assert got.apt == ["a", "b"] and got.options == {"flags": ["-DX=ON", "-DY=ON"], "k": 1, "j": 2}
    assert got.toolchain == ">=1" and got.test_args == ["-Dz"] and got.reasons == ["memory", "move test_option: e"]
    assert cur.apt == ["a"]  # the current request is not changed


def test_a_move_step_is_no_attempt_chain_of_the_experience_memory(tmp_path, monkeypatch):
    """The memory's learning reads executed steps; a move's step is scored by its round and must
    not become a negative lesson about the verdict's reason."""
    from agents.memory.learn import attempt_chains

    unit = TestSpec(name="units", test_command="run-units", parser="go_test_json", test_files=["calc_test.go"])
    force_ecosystem(monkeypatch, Moving([Move(kind="status_units", serves="s", evidence="e", test=unit)]))
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json|run-units", (0, "nothing\n"))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    moves = flow_steps(res, "move:")
    assert moves and moves[0].note == "e | run-units" and not moves[0].command
    assert not any(a.step.rule.startswith("move:") for chain in attempt_chains(steps(res)) for a in chain)
