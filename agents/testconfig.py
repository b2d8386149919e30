"""Test Configuration agent: T, the test command, its selection, its parser and its report, ranked.

Rules: the plan's own configuration (the touched tests), then the alternatives its ecosystem
offers (`Plan.test_alternatives`: the touched tests' folders, whole packages, ...), in order; a
configuration that selects nothing where its runner needs a selection (pytest) is skipped. LLM
(`hybrid`, when every rule configuration found nothing; `llm`, first): the model proposes an
`LLMTestSpec` validated by that pydantic model, the parser by the registry.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents.ecosystems.base import PYTEST_PARSER, Plan, TestSpec, is_pytest
from agents.models import Instance


def known_parser(name: str) -> str:
    """`name` when it is a parser a plan can name (`PYTEST_PARSER`, or a parser of
    `envpool.testrun.registry.PARSERS` that is not pytest's; the older `pytest_plugin` is read as
    `PYTEST_PARSER`); ValueError listing them otherwise."""
    from envpool.testrun import parsers as pytest_parsers
    from envpool.testrun.registry import PARSERS

    if is_pytest(name):
        return PYTEST_PARSER
    plannable = sorted(set(PARSERS) - set(pytest_parsers.PARSERS))
    if name not in plannable:
        raise ValueError(f"unknown parser {name!r}; one of {[PYTEST_PARSER, *plannable]}")
    return name


def configurations(plan: Plan) -> list[TestSpec]:
    """The rule configurations of `plan`, best first, without duplicates and without empty
    pytest selections (pytest with no path would run the whole suite)."""
    out: list[TestSpec] = []
    for spec in [plan.test_spec(), *plan.test_alternatives]:
        if is_pytest(spec.parser) and not spec.test_files:
            continue
        if any(s.test_command == spec.test_command and s.test_files == spec.test_files for s in out):
            continue
        out.append(spec)
    return out


class LLMTestSpec(BaseModel):
    """A test configuration the LLM proposes: `test_files` (pytest runs them when the parser is
    `pytest_channel`), else `test_command` (bash in /testbed, offline) and `parser` / `report_path`."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    test_files: list[str] = Field(default_factory=list)
    test_command: str = ""
    parser: str
    report_path: str | None = None
    reason: str = ""

    _parser = field_validator("parser")(classmethod(lambda cls, v: known_parser(v)))


TEST_PROMPT = (
    "You configure how swemint runs the tests a test patch touches, in a Docker image where the "
    "repository is installed at /testbed and the network is off. The rules' configurations found no "
    "test. Answer with the test files (for pytest, parser pytest_channel: pytest runs them with its "
    "own command) or a bash test command and the parser reading its output.")


def llm_configuration(helper, instance: Instance, plan: Plan, tried: list[TestSpec], files: list[str], traj,
                      why: str) -> TestSpec | None:
    """Ask the LLM for a test configuration (module docstring); None without a model or a valid
    answer (a trajectory step either way when asked)."""
    if helper is None or helper.llm is None:
        return None
    task = (f"Repository {instance.repo}, ecosystem {plan.ecosystem} ({plan.toolchain}).\nWhy: {why}\n"
            f"Configurations tried: {[t.model_dump() for t in tried]}\n"
            f"The test patch touches: {files}\nTest patch (head):\n{instance.test_patch[:3000]}")
    from agents.repair import experience_block

    task += experience_block(helper, why, instance.language or plan.ecosystem)
    spec = helper.consult(TEST_PROMPT, task, LLMTestSpec, "testconfig", "llm:test-config", traj)
    if spec is None or (is_pytest(spec.parser) and not spec.test_files) or \
            (not is_pytest(spec.parser) and not spec.test_command):
        return None
    return TestSpec(name="llm", test_command=spec.test_command, parser=spec.parser, report_path=spec.report_path,
                    test_files=list(spec.test_files))
