"""Review rv86 (regression of 079b913, `learn.rule_repairs`): a diagnosis rule's repair that binds
a package (missing header frobnic.h -> apt libfrobnic-dev, from Debian's file index) taught a
lesson of the repository, which installed the package before planning in the repository's next
instance (a same-repository lesson is proactive at 1/1). Since a rule's repair "teaches no
lesson", every instance of the repository fails that build step first and repairs it again.
Fixed by a lesson bound to its rule and repository (`Provenance.rule`; test_rule_bound_lesson.py:
it serves that repository only and stops when its rule is dropped)."""

from __future__ import annotations

import json

from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import proactive
from agents.memory.repo_context import RepoContext
from agents.models import StepRecord

OUT = "src/x.c:3:10: fatal error: frobnic.h: No such file or directory\ncompilation terminated."


def test_a_rules_package_binding_is_installed_up_front_in_the_repositorys_next_instance():
    ctx = RepoContext(ecosystem="c", toolchain="12", era=2022, repo="a/b", build_systems=["make"], files=["Makefile"],
                      commands=["make"])
    traj = [StepRecord(agent="memory", rule="context", note=ctx.model_dump_json()),
            StepRecord(agent="execution", rule="recipe:c:0", command="make", exit_code=1, output_excerpt=OUT),
            StepRecord(agent="execution", rule="diagnosis:missing-header", command="fix", exit_code=0,
                       note="repair: " + json.dumps([{"kind": "apt", "packages": ["libfrobnic-dev"]}])),
            StepRecord(agent="execution", rule="recipe:c:0", command="make", exit_code=0)]
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(traj, "c", "a__b-1", repo="a/b")
    up_front = [h.experience for h in mem.retrieve(ctx, k=10) if proactive(h, 0.66)]
    assert any(a.kind == "apt" and "libfrobnic-dev" in a.packages for e in up_front for a in e.actions), \
        "a/b's next instance no longer installs the package the rule found before planning (it was at 0d067fa)"
