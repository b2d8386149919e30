"""The plan stage and its seam: the Repository Analysis agent's profile of the tree (one
vocabulary of languages), version at base_commit, the typed hand-over to the build stage, the
minter using that profile instead of analysing again; language names canonical at the source."""

from __future__ import annotations

from pathlib import Path

import pytest

import agents.planner
from agents.mint_config import MintConfig
from agents.flow import mint_instance
from agents.ecosystems import languages
from agents.models import Instance, InstanceResult, canonical_language
from envpool.fake import FakeSandboxFactory
from pipeline.sources.source_rows import make_instance_row
from pipeline.stages import MintStage, PlanStage, WorkItem, plan_instance
from tests.pipeline.flow_support import git


def _roomy():
    """A MintConfig whose low-disk guard is off: the guard measures the host's free space, not
    these fake minters (tests/conftest.py does the same for configs loaded from files)."""
    from agents.mint_config import MintConfig

    return MintConfig(limits={"min_free_disk_bytes": 0})


@pytest.mark.parametrize("given,want", [("C++", "cpp"), ("TypeScript", "typescript"), ("Go", "go"), ("C", "c"),
                                        ("JavaScript", "javascript"), ("Python", "python"), ("Golang", "go"),
                                        ("", None), (None, None)])
def test_language_names_are_canonical(given, want):
    assert canonical_language(given) == want


def test_a_source_row_says_cpp_never_cxx():
    from datetime import datetime, timezone

    row = make_instance_row(repo="acme/x", suffix=1, base_commit="c" * 40, patch="p", test_patch="t",
                            problem_statement="s", hints_text="", created_at=datetime.now(timezone.utc),
                            language="C++", source="github")
    assert row["language"] == "cpp" and "cpp" in languages() and "c#" not in languages()


def repo(tmp_path: Path, files: dict[str, str], tag: str | None = None) -> tuple[Path, str]:
    work = tmp_path / "w"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base", date="2024-01-01T00:00:00Z")
    if tag:
        git(work, "tag", tag)
    return work / ".git", git(work, "rev-parse", "HEAD").strip()


def inst(commit: str, language: str | None = None) -> Instance:
    return Instance(instance_id="acme__x-1", repo="acme/x", base_commit=commit, patch="diff --git a/a b/a\n",
                    test_patch="diff --git a/tests/t b/tests/t\n--- a/tests/t\n+++ b/tests/t\n", language=language)


@pytest.mark.parametrize("files,hint,want", [
    ({"package.json": "{}", "tsconfig.json": "{}", "src/a.ts": ""}, None, ("node", "typescript")),
    ({"package.json": "{}", "src/a.js": ""}, None, ("node", "javascript")),
    ({"go.mod": "module x\n\ngo 1.21\n", "a.go": "package x\n"}, None, ("go", "go")),
    ({"CMakeLists.txt": "project(x)\n", "src/a.cpp": "", "src/b.cc": "", "src/c.c": ""}, None, ("cfamily", "cpp")),
    ({"CMakeLists.txt": "project(x)\n", "src/a.cpp": ""}, "C", ("cfamily", "c")),  # the source's word wins
    ({"pyproject.toml": "[project]\nname='x'\nversion='2.3.1'\n"}, "Shell", ("python", "python")),
    ({"pyproject.toml": "[project]\nname='x'\nversion='2.3.1'\n"}, None, ("python", "python")),
])
def test_plan_detects_ecosystem_and_language(tmp_path, files, hint, want):
    git_dir, commit = repo(tmp_path, files)
    plan = plan_instance(inst(commit, hint), git_dir, MintConfig())
    assert (plan.ecosystem, plan.language) == want
    assert plan.test_files == ["tests/t"] and plan.commit_time is not None


def test_plan_derives_the_version_at_base_commit(tmp_path):
    git_dir, commit = repo(tmp_path, {"go.mod": "module x\n", "a.go": "package x\n"}, tag="v3.7.2")
    assert plan_instance(inst(commit), git_dir, MintConfig()).version == "3.7"


def test_plan_stage_turns_a_missing_commit_into_an_input_row(tmp_path):
    git_dir, _ = repo(tmp_path, {"a.py": ""})
    got = PlanStage(MintConfig()).process(WorkItem(inst("0" * 40), git_dir))
    assert isinstance(got, InstanceResult) and got.outcome == "infra_error" and got.reason.startswith("input:")


def test_build_stage_hands_the_plan_over(tmp_path):
    git_dir, commit = repo(tmp_path, {"CMakeLists.txt": "project(x)\n", "src/a.cpp": ""})
    plan = plan_instance(inst(commit), git_dir, MintConfig()).model_copy(update={"version": "1.2"})
    seen = {}

    def old_style(instance, repo_path, config):  # a mint function without the profile keyword
        seen["old"] = instance.language
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified")

    def new_style(instance, repo_path, config, profile=None):  # agents.flow.mint_instance's shape
        seen["new"] = profile
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified", version="9.9")

    item = WorkItem(inst(commit), git_dir, plan=plan)
    res = MintStage(_roomy(), mint_fn=old_style).process(item)
    assert seen["old"] == "cpp" and res.version == "1.2"  # the row gets the plan's version
    res = MintStage(_roomy(), mint_fn=new_style).process(item)
    assert seen["new"] is plan.profile and res.version == "9.9"  # the minter's own version is kept
    assert item.instance.language is None  # the stored input row is not changed by the stage


def test_the_minter_uses_the_plan_stage_profile_instead_of_analysing_again(tmp_path, monkeypatch):
    git_dir, commit = repo(tmp_path, {"go.mod": "module x\n\ngo 1.21\n", "a.go": "package x\n"})
    plan = plan_instance(inst(commit, "Shell"), git_dir, MintConfig())
    assert plan.language == "go" and plan.profile.commit == commit
    calls = []
    real = agents.planner.analyze
    monkeypatch.setattr(agents.planner, "analyze",
                        lambda tree, instance: calls.append(tree.commit) or real(tree, instance))
    cfg = MintConfig(workdir=tmp_path / "work")
    planned = inst(commit, plan.language)
    res = mint_instance(planned, git_dir, cfg, factory=FakeSandboxFactory(), profile=plan.profile)
    assert calls == [] and res.language == "go"
    stale = plan.profile.model_copy(update={"commit": "0" * 40})  # another commit's profile is not used
    mint_instance(planned, git_dir, cfg, factory=FakeSandboxFactory(), profile=stale)
    assert calls == [commit]
