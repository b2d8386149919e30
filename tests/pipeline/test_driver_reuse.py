"""The driver's side of reuse and memory: candidates from the pool on each WorkItem (other
instances of the repository, best first), the reverify path unchanged, and learning from each
finished instance's trajectory into WORKDIR/memory (the driver is the memory's single writer)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agents.memory.experience_store import ExperienceStore
from agents.models import EnvRecord, Instance, InstanceResult, StepRecord
from envpool.pool import EnvPool
from pipeline.pipeline_config import load_config
from pipeline.demo import make_demo
from pipeline.driver import run_mint


@pytest.fixture(scope="module")
def demo_input(tmp_path_factory):
    return make_demo(tmp_path_factory.mktemp("demo"))


def calcy(demo_input) -> Instance:
    rows = [json.loads(x) for x in demo_input.instances.read_text().splitlines()]
    return Instance(**next(r for r in rows if r["repo"] == "acme/calcy"))


def record(iid: str, repo: str, version: str | None, year: int) -> EnvRecord:
    return EnvRecord(instance_id=iid, repo=repo, version=version, base_commit="0" * 40,
                     commit_time=datetime(year, 1, 1, tzinfo=timezone.utc), image_tag=f"t:{iid}", interpreter="3.11")


class Recorder:
    def __init__(self):
        self.calls: dict[str, dict] = {}

    def __call__(self, instance, repo_path, config, **kw):
        self.calls[instance.instance_id] = kw
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass",
                              timings={"total": 1.0})


def test_items_carry_pool_candidates_of_other_instances_best_first(tmp_path, demo_input):
    inst = calcy(demo_input)
    work = tmp_path / "w"
    pool = EnvPool(work / "pool.duckdb")
    pool.add(record("acme__calcy-1", "acme/calcy", "9.9", 2001))   # older commit, other version
    pool.add(record("acme__calcy-2", "acme/calcy", "9.9", 2090))   # newer commit
    pool.add(record("acme__calcy-3", "acme/calcy", inst.version, 1999))  # same version
    pool.add(record("acme__other-1", "acme/other", inst.version, 2090))  # another repository
    cfg = load_config(None, [], workdir=work, instances=demo_input.instances, mirrors=[demo_input.mirrors],
                      use_ray=False, ids=[inst.instance_id])
    fn = Recorder()
    run_mint(cfg, mint_fn=fn)
    got = [c.instance_id for c in fn.calls[inst.instance_id]["candidates"]]
    assert got == ["acme__calcy-3", "acme__calcy-2"]  # max_candidates=2: same version, then nearest newer


def test_a_lone_instance_is_offered_no_environment_of_another_repository(tmp_path, demo_input):
    """No other instance of the repository is pooled: the environment of another repository of
    the same language declaring the same dependencies is not offered (its instance tier holds what
    that repository's build wrote; repositories share only the dependency tier, issue 24)."""
    from agents.analysis import declared_dependencies
    from agents.gitrepo import GitTree
    from pipeline.repos import RepoResolver

    inst = calcy(demo_input)
    work = tmp_path / "w"
    cfg = load_config(None, [], workdir=work, instances=demo_input.instances, mirrors=[demo_input.mirrors],
                      use_ray=False, ids=[inst.instance_id])
    repo_path = RepoResolver(cfg.mirrors, cfg.repos, cache_dir=work / "repos").prepare(inst.repo, inst.base_commit,
                                                                                        inst.instance_id)
    deps = declared_dependencies(GitTree(repo_path, inst.base_commit))
    pool = EnvPool(work / "pool.duckdb")
    pool.add(record("acme__other-1", "acme/other", None, 2001).model_copy(
        update={"language": "python", "dependencies": "\n".join(deps + ["extra"])}))
    pool.add(record("acme__unrelated-1", "acme/unrelated", None, 2001).model_copy(
        update={"language": "python", "dependencies": "nothing-shared"}))
    fn = Recorder()
    run_mint(cfg, mint_fn=fn)
    got = [c.instance_id for c in fn.calls[inst.instance_id].get("candidates", [])]
    assert deps == ["attrs"] and got == []

    off = load_config(None, ["mint.reuse.enabled=false"], workdir=tmp_path / "w2", instances=demo_input.instances,
                      mirrors=[demo_input.mirrors], use_ray=False, ids=[inst.instance_id])
    EnvPool(off.pool_path).add(record("acme__calcy-3", "acme/calcy", inst.version, 1999))
    fn = Recorder()
    run_mint(off, mint_fn=fn)
    assert "candidates" not in fn.calls[inst.instance_id]


def test_reverify_passes_the_own_environment_and_no_candidates(tmp_path, demo_input):
    inst = calcy(demo_input)
    work = tmp_path / "w"
    cfg = load_config(None, [], workdir=work, instances=demo_input.instances, mirrors=[demo_input.mirrors],
                      use_ray=False, ids=[inst.instance_id])

    def verified(instance, repo_path, config, **kw):
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified",
                              timings={"total": 1.0},
                              env=record(instance.instance_id, instance.repo, instance.version, 2020))

    EnvPool(cfg.pool_path).add(record("acme__calcy-3", "acme/calcy", inst.version, 1999))
    run_mint(cfg, mint_fn=verified)
    cfg.reverify = True
    fn = Recorder()
    run_mint(cfg, mint_fn=fn)
    kw = fn.calls[inst.instance_id]
    assert kw["env"].instance_id == inst.instance_id and "candidates" not in kw


def test_driver_learns_from_each_finished_trajectory(tmp_path, demo_input):
    inst = calcy(demo_input)
    work = tmp_path / "w"
    cfg = load_config(None, [], workdir=work, instances=demo_input.instances, mirrors=[demo_input.mirrors],
                      use_ray=False, ids=[inst.instance_id])

    def with_trajectory(instance, repo_path, config, **kw):
        path = Path(config.workdir) / "instances" / instance.instance_id / "trajectory.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        err = "ModuleNotFoundError: No module named 'zzfrobnicate'\nERROR collecting tests/test_x.py"
        steps = [StepRecord(agent="execution", rule="probe:collect", command="pytest --collect-only", exit_code=2,
                            output_excerpt=err, note="repair: install zzfrobnicate-dist"),
                 StepRecord(agent="execution", rule="probe:collect", command="pytest --collect-only", exit_code=0,
                            output_excerpt="1 test collected")]
        path.write_text("".join(s.model_dump_json() + "\n" for s in steps))
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass",
                              trajectory_path=str(path), timings={"total": 1.0})

    run_mint(cfg, mint_fn=with_trajectory)
    with ExperienceStore(cfg.mint.memory_path(), read_only=True) as store:
        learned = [e for e in store.all("python") if e.provenance.source == "learned"]
        assert len(store) > 100  # the seed set was loaded on the first write
    assert any(inst.instance_id in e.provenance.instance_ids and not e.negative for e in learned)
