"""Environment Setup agent: the base image B and the setup script P of a candidate plan.

Rules: the candidate's ecosystem plans (`Ecosystem.plan` with the loop's `PlanRequest`), then the
request's generic parts are applied the same way for every ecosystem (Debian packages and `pre`
commands before the ecosystem's setup, `post` commands after it, environment variables).

LLM (`hybrid` when no candidate can be built -- an unknown layout; `llm` always, the rules' plan
in the prompt): the model proposes an `LLMPlanSpec` (ecosystem, toolchain, setup commands, test
command, parser), validated by that pydantic model and by the registry (a known ecosystem and
parser); the ecosystem turns it into a Plan on its own toolchain image (`plan_from_spec`).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents.ecosystems import by_name, ecosystems
from agents.ecosystems.base import Plan, PlanRequest
from agents.ecosystems.debian import apt_install
from agents.gitrepo import GitTree
from agents.testconfig import known_parser
from agents.models import Instance, StepRecord
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig


def apply_request(plan: Plan, request: PlanRequest) -> Plan:
    """`plan` with the request's Debian packages and `pre` commands before its setup commands,
    `post` commands after them, and its environment variables (a new Plan)."""
    if request.empty():
        return plan
    head = ([apt_install(request.apt)] if request.apt else []) + list(request.pre)
    return plan.model_copy(update={
        "setup_commands": head + [c for c in plan.setup_commands if c not in head],
        "post_commands": list(plan.post_commands) + [c for c in request.post if c not in plan.post_commands],
        "env": {**plan.env, **request.env},
        "notes": list(plan.notes) + [f"request: {r}" for r in request.reasons]}, deep=True)


def plan_candidate(eco, route: str, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
                   request: PlanRequest, language: str | None) -> Plan:
    """The plan of `eco` on build `route` for `instance`, with `request` applied. Raises
    EnvBuildError (from the ecosystem) when no plan can work here."""
    req = request.model_copy(update={"route": request.route or route})
    plan = apply_request(eco.plan(tree, instance, touched, images, req), request)
    return plan.model_copy(update={"build": plan.build or route, "language": plan.language or language or ""})


class LLMPlanSpec(BaseModel):
    """A plan the LLM proposes (structured output of the Environment Setup agent).

    `ecosystem`: a registered name (`python`, `node`, `go`, `rust`, `java`, `cfamily`, `php`,
    `ruby`) whose toolchain image is used; `toolchain`: a version or constraint for it;
    `setup_commands`: bash run in /testbed with network (dependencies, build);
    `test_command`: bash that runs the touched tests offline (empty for python: pytest runs
    `test_files`); `parser`: the report parser's name; `report_path`: a file the command writes
    (None: its console output is parsed); `test_files`: what the tests are.
    """

    model_config = ConfigDict(extra="forbid")
    ecosystem: str
    toolchain: str | None = None
    setup_commands: list[str] = Field(default_factory=list)
    test_command: str = ""
    parser: str
    report_path: str | None = None
    test_files: list[str] = Field(default_factory=list)
    reason: str = ""

    @field_validator("ecosystem")
    @classmethod
    def _known(cls, v: str) -> str:
        if by_name(v) is None:
            raise ValueError(f"unknown ecosystem {v!r}; one of {[e.name for e in ecosystems()]}")
        return v

    _parser = field_validator("parser")(classmethod(lambda cls, v: known_parser(v)))


PLAN_PROMPT = (
    "You plan the test environment of a repository for swemint, which mints SWE-bench-style tasks. "
    "The repository is checked out at /testbed in a Debian container with the chosen ecosystem's "
    "toolchain. Setup commands run with network access to the package registries only; the test "
    "command then runs with no network at all, once on the base commit plus the test patch and once "
    "more with the fix applied. Choose the ecosystem whose toolchain image to use, the setup commands, "
    "a test command that runs the tests the test patch touches, and the parser that reads its output. "
    "Parsers: pytest_channel (python only: pytest runs test_files itself, leave test_command empty), "
    "automake_log (lines `PASS: name` / `FAIL: name`), go_test_json, cargo_test, jest_json, mocha_json, "
    "java_junit, phpunit_junit, rspec_json, minitest_log, ctest_junit, gtest_log, and the others named "
    "in the schema's description.")


def _listing(tree: GitTree, n: int = 150) -> str:
    files = tree.files
    return "\n".join(files[:n]) + (f"\n... ({len(files) - n} more files)" if len(files) > n else "")


def llm_plan(helper, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig, profile,
             traj, rules_plan: Plan | None = None, why: str = "") -> Plan | None:
    """Ask the LLM for a plan (module docstring); None without a model, when the answer is
    invalid, or when its ecosystem cannot plan it (each a trajectory step with the reason)."""
    if helper is None or helper.llm is None:
        return None
    task = (f"Repository {instance.repo} at {instance.base_commit[:12]}, language "
            f"{profile.language or 'unknown'}.\nWhy the rules need you: {why or 'policy llm'}\n"
            f"Manifests: {profile.manifests}; build systems: {profile.build_systems}; runners: {profile.runners}; "
            f"CI toolchains: {profile.toolchain_hints}\nFiles:\n{_listing(tree)}\n\n"
            f"The test patch touches: {touched}\n\nTest patch (head):\n{instance.test_patch[:3000]}\n"
            + (f"\nThe rules' plan (accept it or improve it):\n{rules_plan.model_dump_json(exclude={'state'})[:3000]}\n"
               if rules_plan is not None else ""))
    from agents.repair import experience_block

    task += experience_block(helper, why, profile.language or "")
    spec = helper.consult(PLAN_PROMPT, task, LLMPlanSpec, "analysis", "llm:plan", traj)
    if spec is None:
        return None
    eco = by_name(spec.ecosystem)
    try:
        if eco is None:
            raise EnvBuildError(f"the LLM named no ecosystem swemint has: {spec.ecosystem!r}",
                                instance_id=instance.instance_id)
        plan = eco.plan_from_spec(spec, tree, instance, images)
    except EnvBuildError as e:
        traj(StepRecord(agent="analysis", rule="llm:plan", note=f"the LLM plan cannot be built: {e.message}"))
        return None
    return plan.model_copy(update={"language": profile.language or "", "build": "llm"})


def describe(plan: Plan) -> str:
    """The plan as one trajectory note (state left out, cut at 4000 characters)."""
    return json.dumps(plan.model_dump(exclude={"state"}), default=str)[:4000]
