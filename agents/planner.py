"""The planning half of the loop: which candidate plan, with which request, and what a diagnosis
or a missing test configuration changes (MEnvAgent's feedback into planning).

`Planner` holds the instance's profile, its ranked candidates, the current `PlanRequest`, plan and
test configurations. `make_plan` plans the current candidate (the next one when it cannot be
planned; the LLM's plan under `hybrid` when none can; under `llm` the model sees the rules' plan
and the memory's context retrieval for it, `agents.memory.before.context_before_llm_plan`, and
may replace it); `replan` plans again with a new request and keeps the old plan when that
fails; `on_setup_failure` turns Execution's diagnosis into another toolchain, the next candidate
route or an LLM plan. `agents.flow.Loop` runs the rounds on top of it.
"""

from __future__ import annotations

import time

from agents.analysis import RepoProfile, analyze
from agents.context import MintRun
from agents.diagnosis import version_of
from agents.ecosystems import by_name
from agents.ecosystems.base import Plan, PlanRequest, TestSpec
from agents.memory.before import candidate_of, context_before_llm_plan
from agents.memory.experience import MoveAction
from agents.memory.replay import ShapeLog, request_data
from agents.models import StepRecord
from agents.setup import describe, llm_plan, plan_candidate
from agents.testconfig import configurations, llm_configuration
from envpool.errors import EnvBuildError


class Planner:
    """Planning state and decisions of one instance (module docstring)."""

    def __init__(self, run: MintRun, profile: RepoProfile | None = None):
        self.run = run
        self.cfg = run.config
        self.given = profile  # the analysis a plan stage already made (None: analyse here)
        self.profile: RepoProfile | None = None
        self.cands: list = []
        self.ci = 0
        self.request = PlanRequest()
        self.plan: Plan | None = None
        self.eco = None
        self.tests: list[TestSpec] = []
        self.ti = 0
        self.done: set[str] = set()
        self.llm_planned = False
        self.moves_tried: set[str] = set()
        self.pending_move = None  # the agents.moves.Move that shapes the next round
        self.services: list | None = None  # the servers the CI provides for the tests (read once)
        self.round_no = 0  # the round under way (0 before the first)
        self.shapes = ShapeLog()  # the changes that shaped the rounds (the lesson of a row verified late)

    def shape(self, move: str, evidence: str = "", **data) -> None:
        """Record that the current plan's next round is shaped by `move` (`MoveAction`'s fields in
        `data`): the memory's lesson of a row that verifies in round >= 2 (`agents.memory.replay`)."""
        try:
            action = MoveAction(move=move, evidence=evidence[:300], **data)
        except ValueError:
            return
        self.shapes.shape(self.round_no + 1, candidate_of(self.plan), action)

    def analyse(self) -> None:
        """The profile: the one given (made by a plan stage for this commit), else `analyze`."""
        t = time.monotonic()
        run = self.run
        given = self.given
        fresh = given is None or given.commit != run.tree.commit
        self.profile = analyze(run.tree, run.instance) if fresh else given
        run.language = run.res.language = self.profile.language
        self.cands = self.profile.available()
        run.traj(StepRecord(agent="analysis", rule="profile", note=self.profile.model_dump_json()[:4000]))
        run.res.timings["checkout+analysis"] = round(time.monotonic() - t, 2)

    def make_plan(self, why: str = "") -> None:
        """The plan of the current candidate with the current request; on EnvBuildError the next
        candidate, then (hybrid/llm) the LLM's plan; raises EnvBuildError when nothing plans.
        Under `llm` (once per instance) the memory's context retrieval runs for the rules' plan
        and the LLM is then asked for its plan, which replaces the rules' when usable."""
        run = self.run
        t = time.monotonic()
        errors: list[str] = []
        while self.ci < len(self.cands):
            cand = self.cands[self.ci]
            eco = by_name(cand.ecosystem)
            try:
                plan = plan_candidate(eco, cand.route, run.tree, run.instance, run.touched, self.cfg.images,
                                      self.request, self.profile.language)
            except EnvBuildError as e:
                errors.append(f"{cand.label}: {e.message}")
                run.traj(StepRecord(agent="setup", rule=f"plan:{cand.label}", note=f"no plan: {e.message}"[:2000]))
                if self.request.toolchain and not self.request.route:
                    raise  # the constraint, not the route, has no plan
                self.ci += 1
                continue
            self._use(eco, plan)
            if self.cfg.policy == "llm" and not self.llm_planned:
                self.llm_planned = True
                # the context retrieval first: the planning prompt carries the project's entries
                context_before_llm_plan(run, self.profile, self.plan, self.eco)
                better = llm_plan(run.helper, run.tree, run.instance, run.touched, self.cfg.images, self.profile,
                                  run.traj, rules_plan=plan, why="policy llm: the LLM leads")
                if better is not None:
                    self._use(by_name(better.ecosystem), better)
            self._timing(t)
            return
        if not self.llm_planned and self._llm_plan(why or "; ".join(errors) or self.profile.no_route
                                                    or "no candidate plan"):
            self._timing(t)
            return
        raise EnvBuildError(why or "; ".join(errors) or self.profile.no_route or "no candidate plan",
                            instance_id=run.iid, log_path=run.log_path)

    def _llm_plan(self, why: str) -> bool:
        """Replace the plan by the LLM's (hybrid / llm); False without a model or a usable plan."""
        run = self.run
        if run.helper is None or run.helper.llm is None:
            return False
        self.llm_planned = True
        plan = llm_plan(run.helper, run.tree, run.instance, run.touched, self.cfg.images, self.profile, run.traj,
                        why=why)
        if plan is None or not configurations(plan):
            return False
        self._use(by_name(plan.ecosystem), plan)
        return True

    def _timing(self, t: float) -> None:
        timings = self.run.res.timings
        timings["checkout+analysis"] = round(timings.get("checkout+analysis", 0.0) + time.monotonic() - t, 2)

    def _services(self, plan: Plan) -> Plan:
        """`plan` providing the servers the CI provides for the tests (`mint.ci_services`;
        `agents.ecosystems.service_provision.with_services`); read from the CI once, recorded
        as a trajectory step `services` and in the result's `services`."""
        from agents.ecosystems.ci_services import service_needs
        from agents.ecosystems.service_provision import with_services

        if not self.cfg.ci_services:
            return plan
        if self.services is None:
            self.services = service_needs(self.run.tree)
            if self.services:
                self.run.traj(StepRecord(agent="setup", rule="services",
                                         note="the CI provides for the tests: " +
                                              "; ".join(n.label() for n in self.services)
                                              + " -- installed at setup, started before each test run"))
        self.run.res.services = [n.label() for n in self.services]
        return with_services(plan, self.services)

    def _use(self, eco, plan: Plan) -> None:
        plan = self._services(plan)
        self.eco, self.plan = eco, plan
        self.tests = configurations(plan)
        self.ti = 0
        res = self.run.res
        res.interpreter, res.substitutions = plan.toolchain, list(plan.substitutions)
        res.substitutes_tried = list(plan.state.get("substitutes_tried") or [])
        res.parser, res.test_files = plan.parser, list(plan.test_files)
        self.run.traj(StepRecord(agent="setup", rule=f"plan:{plan.ecosystem}:{plan.build}", note=describe(plan)))
        (self.run.idir / "plan.json").write_text(plan.model_dump_json(indent=2, exclude={"state"}))

    def replan(self, request: PlanRequest, why: str) -> bool:
        """Plan again with `request`; False (the old plan kept) when that cannot be planned."""
        old = (self.request, self.plan, self.eco, self.tests, self.ti)
        self.request = request
        try:
            self.make_plan()
        except EnvBuildError as e:
            self.run.traj(StepRecord(agent="flow", rule="replan", note=f"no plan for {why}: {e.message}"[:2000]))
            self.request, self.plan, self.eco, self.tests, self.ti = old
            return False
        return True

    # -- back to planning ---------------------------------------------------------------------
    def toolchain_bound(self, constraint: str | None, rule: str = "") -> str:
        """The plan's toolchain-bound note (`Plan.state["toolchain_bound"]`, set by an ecosystem
        whose toolchain is the newest installable one standing in for a newer request: a Rust
        pin past Debian's newest) when a diagnosis or attribution of one of the rules that name
        the toolchain's own version (`Plan.state["toolchain_bound_rules"]`: Rust's
        `rust-requires-newer`, `rust-unstable-feature`; not a -sys crate's gcc, the memory's or
        the LLM's guess) asks for a newer toolchain (`constraint` ``>=X`` / ``>X``): no plan on a
        newer one exists, so the loop ends there with the note (naming the pin and the
        substitute) in the reason; "" otherwise."""
        state = self.plan.state if self.plan is not None else {}
        bound = state.get("toolchain_bound") or ""
        if not bound or not (constraint or "").startswith(">") or rule not in state.get("toolchain_bound_rules", ()):
            return ""
        return bound

    def on_setup_failure(self, outcome) -> str | None:
        """The next step after Execution gave up: the same plan with the Debian packages a
        `missing_system` diagnosis needs installed first (Debian's file index answers its needs:
        ecosystems with their own builder, e.g. Python's, reach them here), a plan on another
        toolchain, the next candidate route, or (hybrid) the LLM's plan; None when nothing is left.
        Raises `agents.debindex.IndexUnavailable` (outcome `infra_error`) when the diagnosis's
        needs wait on an index the mirror kept from being built: no move can help that build."""
        d = outcome.diagnosis
        if d is not None and d.kind == "missing_system" and (d.needs or d.packages):
            from agents.debindex import index_for
            from agents.execution import resolve_packages

            index = index_for(self.run, self.plan.image) if self.cfg.repair.debian_index else None
            new = [p for p in resolve_packages(index, d, strict=True) if p not in self.request.apt]
            key = f"apt:{','.join(new)}"
            if new and key not in self.done:
                self.done.add(key)
                req = self.request.model_copy(update={"apt": list(self.request.apt) + new,
                                                      "reasons": list(self.request.reasons) + [d.detail[:200]]})
                if self.replan(req, d.detail):
                    self.shape("apt", d.detail, request={"apt": new})
                    return f"replan: apt {' '.join(new)} ({d.rule})"
        if d is not None and d.kind.startswith("toolchain") and d.toolchain:
            key = f"toolchain:{d.toolchain}"
            if key not in self.done:
                self.done.add(key)
                req = self._toolchain_request(d.toolchain, d.detail)
                if self.replan(req, d.detail):
                    self.shape("toolchain", d.detail, request={"toolchain": d.toolchain})
                    return f"replan: {d.toolchain} ({d.rule})"
        if self.ci + 1 < len(self.cands):
            saved = (self.ci, self.request, self.plan, self.eco, self.tests, self.ti)
            self.ci += 1
            try:
                self.make_plan(why=outcome.reason)
            except EnvBuildError:
                return None
            if self.tests:
                return f"next candidate: {self.cands[self.ci].label}"
            # S28: a next candidate that selects no test of the test patch cannot verify the row:
            # the failed candidate's own moves come first (its CI's options, packages)
            self.run.traj(StepRecord(agent="flow", rule="give-way", note=(
                f"{self.cands[self.ci].label} selects no test of the test patch: not built; the moves of "
                f"{self.cands[saved[0]].label}, whose build failed, instead")))
            self.ci, self.request, self.plan, self.eco, self.tests, self.ti = saved
        moved = self.setup_move(outcome)
        if moved:
            return moved
        if not self.llm_planned and self.run.helper is not None and self.run.helper.llm is not None:
            self.ci = len(self.cands)
            try:
                self.make_plan(why=f"setup failed: {outcome.reason}")
                return "llm plan"
            except EnvBuildError:
                return None
        return None

    def next_candidate(self, why: str) -> str | None:
        """S29: after a round that ran no test and has no next move, the next candidate that selects
        a test of the test patch (ollama-17853: the Go packages build only for other platforms, the
        root's CMake build ran nothing, the Node project owning the touched .ts test came third):
        planned, ``next candidate: <label>``; None (the current plan kept) when no candidate is
        left that plans and selects a test."""
        saved = (self.ci, self.request, self.plan, self.eco, self.tests, self.ti)
        while self.ci + 1 < len(self.cands):
            self.ci += 1
            self.request = PlanRequest()
            try:
                self.make_plan(why=why)
            except EnvBuildError:
                break
            if self.tests:
                self.run.traj(StepRecord(agent="flow", rule="next-candidate", note=(
                    f"{self.cands[saved[0]].label} ran no test ({why[:200]}): {self.cands[self.ci].label} next")))
                return f"next candidate: {self.cands[self.ci].label}"
        self.ci, self.request, self.plan, self.eco, self.tests, self.ti = saved
        return None

    def setup_move(self, outcome) -> str | None:
        """The cheapest untried rebuild move (`agents.moves`) the ecosystem offers for a build that
        failed, once the diagnosis and the other candidate routes are used up: its request merged
        into the current one and planned (`replan: move <kind>`), or None. The move shapes the
        next round (`pending_move`)."""
        from agents.moves import MoveContext, candidates, merged_request

        run = self.run
        failed = next((s for s in reversed(getattr(run.traj, "steps", [])) if s.exit_code not in (0, None)), None)
        output = "\n".join(x for x in (failed.output_excerpt if failed else "", outcome.reason or "") if x)
        ctx = MoveContext(tree=run.tree, instance=run.instance, plan=self.plan, touched=list(run.touched),
                          why=f"setup failed: {(outcome.reason or '')[:200]}", outcome="env_failed",
                          reason=outcome.reason or "", output=output)
        for move in candidates(self.eco, ctx, self.moves_tried):
            self.moves_tried.add(move.ident())
            if move.request is None:  # a retest needs an environment
                continue
            if self.replan(merged_request(self.request, move.request, f"move {move.kind}: {move.evidence}"),
                           move.evidence):
                self.pending_move = move
                self.shape(move.kind, move.evidence, request=request_data(move.request))
                run.traj(StepRecord(agent="flow", rule="move", note=f"{ctx.why} -> {move.kind} ({move.serves}): "
                                                                     f"{move.evidence}"[:2000]))
                return f"replan: move {move.kind}"
        return None

    def _toolchain_request(self, constraint: str, why: str) -> PlanRequest:
        used = version_of(self.plan.toolchain)
        return self.request.model_copy(update={"toolchain": constraint,
                                               "avoid": list(self.request.avoid) + ([used] if used else []),
                                               "reasons": list(self.request.reasons) + [why[:200]]})

    def llm_tests(self, why: str) -> TestSpec | None:
        run = self.run
        return llm_configuration(run.helper, run.instance, self.plan, self.tests, run.touched, run.traj, why)
