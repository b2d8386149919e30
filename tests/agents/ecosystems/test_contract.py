"""The ecosystem contract (`agents.ecosystems.base.Ecosystem`): every registered ecosystem is one,
its declared capabilities are true of it, the agents ask for no hook by name, and what the agents
used to keep in language tables (who installs, who takes runner arguments, which tool constrains
which plan, the memory's vocabulary) now follows from the declarations."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import agents.ecosystems as registry
from agents.ecosystems.base import Ecosystem, Plan, PlanRequest
from agents.execution import executable
from agents.memory import experience as mm
from agents.memory.experience import InstallAction, PinAction, ToolchainAction, UvLiftAction
from envpool.testrun.registry import PARSERS

ROOT = Path(__file__).resolve().parents[3]


def test_every_registered_ecosystem_declares_the_contract():
    ecos = registry.ecosystems()
    assert [e.name for e in ecos] == ["python", "node", "go", "rust", "java", "cfamily", "php", "ruby", "lua"]
    for eco in ecos:
        assert isinstance(eco, Ecosystem) and eco.languages and eco.tools and eco.test_path_rules, eco.name
        assert set(eco.parsers) <= set(PARSERS), (eco.name, set(eco.parsers) - set(PARSERS))
        module = importlib.import_module(eco.toolchain_module)
        assert any(hasattr(module, f) for f in ("ensure_image", "ensure_python_image", "layer_image")), eco.name
        # an installer is declared exactly where install_command answers
        assert (eco.installer is not None) == (eco.install_command(["x"]) is not None), eco.name


def test_the_defaults_are_the_generic_behaviour(tmp_path):
    class Bare(Ecosystem):
        name = "bare"

    eco = Bare()
    plan = Plan(ecosystem="bare", toolchain="bare 1", image="i", parser="go_test_json", test_command="t",
                report_path="/tmp/r.json", env={"A": "1"})
    assert eco.languages == ("bare",) and eco.tools == ("bare",) and eco.test_path_rules == ("bare",)
    assert [r.name for r in eco.routes(None, None)] == ["bare"]
    assert eco.language_of(None) == "bare" and eco.package_version(None) is None
    assert eco.install_command(["x"]) is None and eco.request_action(PlanRequest(), PinAction(requirement="x<2")) is None
    assert eco.stored_test_command(plan, "t") == "export A=1; t; cat /tmp/r.json"
    assert eco.aborted_exit_codes(plan) == frozenset() and eco.targeted_plan(plan, ["a"]) is None
    assert eco.next_moves(None) == [] and eco.added_tests("diff") == [] and eco.context_facts(plan) is None
    from envpool.errors import EnvBuildError
    with pytest.raises(EnvBuildError, match="bare cannot build a toolchain"):
        eco.toolchain(None, None)


def test_pin_and_install_go_through_the_installer_before_planning():
    node, python = registry.by_name("node"), registry.by_name("python")
    req = PlanRequest()
    assert node.request_action(req, InstallAction(packages=["left-pad"])) == "install left-pad"
    assert req.post == ["npm install --no-save --no-audit --no-fund left-pad"]
    req = PlanRequest()
    assert python.request_action(req, PinAction(requirement="markupsafe<2.1")) == "pin markupsafe<2.1"
    assert req.options == {"install": ["markupsafe<2.1"]} and req.post == []


@pytest.mark.parametrize("language,action,ok", [
    ("python", mm.TestArgAction(arg="-p no:cacheprovider"), True),
    ("go", mm.TestArgAction(arg="-tags=x"), True),
    ("javascript", mm.TestArgAction(arg="--runInBand"), False),
    ("ruby", InstallAction(packages=["rake"]), False),
    ("typescript", InstallAction(packages=["x"]), True),
    ("c", ToolchainAction(tool="gcc", version="12"), True),
    ("go", ToolchainAction(tool="gcc", version="12"), False),
    ("python", UvLiftAction(package="numpy"), True),
    ("rust", UvLiftAction(package="numpy"), False),
])
def test_who_executes_an_action_follows_the_declarations(language, action, ok):
    assert executable(language, action) is ok


def test_the_agents_ask_no_ecosystem_for_a_hook_by_name():
    """No module outside the ecosystems calls `hook(...)` or `getattr(eco, ...)`; every hook is a
    method of the contract."""
    found = []
    for path in sorted((ROOT / "agents").rglob("*.py")) + sorted((ROOT / "pipeline").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hook", "getattr",
                                                                                                   "hasattr"):
                first = node.args[0] if node.args else None
                name = first.id if isinstance(first, ast.Name) else \
                    first.attr if isinstance(first, ast.Attribute) else ""
                if node.func.id == "hook" or name == "eco":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_which_pooled_environment_fits_follows_the_declarations():
    """`agents.envpatch.fits`: languages one ecosystem serves together fit each other; another
    toolchain misfits unless the ecosystem adapts environments itself (Python's EnvPatch)."""
    from agents.envpatch import fits
    from agents.models import EnvRecord

    def cand(language, interpreter):
        return EnvRecord(instance_id="o__r-1", repo="o/r", base_commit="0" * 40, language=language,
                         interpreter=interpreter, image_tag="t", test_command="t", parser="p")

    def plan(eco, language, toolchain):
        return Plan(ecosystem=eco, language=language, toolchain=toolchain, image="i", parser="p")

    assert fits(cand("javascript", "node 18"), plan("node", "typescript", "node 18"), "o/r") == ""
    assert fits(cand("go", "go 1.19"), plan("node", "typescript", "node 18"), "o/r").startswith("language ")
    assert fits(cand("go", "go 1.19"), plan("go", "go", "go 1.21"), "o/r").startswith("toolchain ")
    assert fits(cand("python", "3.9"), plan("python", "python", "3.11"), "o/r") == ""


def test_rule_entries_name_the_language_the_ecosystem_declares(monkeypatch):
    """The knowledge store's rule entries (`agents.memory.knowledge`) take their language from the
    registration as written, also when a test narrows `ecosystems()` to one double."""
    from agents.memory.knowledge import memory_ecosystem

    monkeypatch.setattr(registry, "ecosystems", lambda: [])
    assert [memory_ecosystem(n) for n in ("node", "cfamily", "java_maven", "go", "any")] == \
        ["javascript", "c", "java", "go", "any"]
