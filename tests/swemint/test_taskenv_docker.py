"""`swemint.TaskEnv` and `swemint.RewardService` on minted demo rows, with Docker: an episode
acts in its own container, its diff is what it changed, and its reward is `swemint eval`'s
grade: the gold patch earns 1, an empty patch 0, and a patch that edits the tests 0."""

from __future__ import annotations

import pytest

import swemint
from pipeline.pipeline_config import load_config
from pipeline.demo import make_demo
from pipeline.driver import run_mint
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]
RUN_ID = f"test-taskenv-{SESSION}"
IDS = ["acme__calcy-7", "acme__textkit-12"]


@pytest.fixture(scope="module")
def rows(tmp_path_factory, python_image, docker_client):
    """Two demo instances minted in-process into their own work directory: their verified rows."""
    root = tmp_path_factory.mktemp("taskenv")
    mirrors, instances = make_demo(root / "demo")
    cfg = load_config(None, [f"mint.run_id={RUN_ID}", f"mint.image_repository={ENV_REPOSITORY}",
                             "mint.memory.enabled=false", "mint.reuse.enabled=false"],
                      workdir=root / "w", instances=instances, mirrors=[mirrors], use_ray=False, ids=IDS)
    report = run_mint(cfg)
    assert {r.instance_id: r.outcome for r in report.results} == dict.fromkeys(IDS, "verified"), \
        [(r.instance_id, r.reason) for r in report.results]
    got = swemint.load_rows(root / "w")
    assert sorted(got) == IDS
    return got  # the images go with the session's repository (tests/conftest.py)


def _episode_containers(docker_client) -> list:
    return docker_client.containers.list(all=True, filters={"label": f"swemint.run={RUN_ID}-env"})


def test_ten_steps_then_gold_earns_1(rows, docker_client):
    row = rows["acme__calcy-7"]
    env = swemint.TaskEnv(row, run_id=f"{RUN_ID}-env")
    with env:
        assert env.problem_statement == row["problem_statement"] and env.problem_statement
        assert len(_episode_containers(docker_client)) == 1  # one container per episode
        assert env.diff() == ""  # the image's own build artefacts (egg-info, ...) are not a change
        assert env.exec("git log --oneline | wc -l").ok
        listing = env.exec("ls").output
        assert "calcy" in listing
        env.exec("python -m pytest -q -p no:cacheprovider tests || true", timeout=300)  # leaves __pycache__
        assert env.diff() == ""  # caches are not the agent's change
        env.write("/tmp/fix.diff", row["patch"])
        assert env.exec("git apply /tmp/fix.diff").ok
        changed = [line[6:] for line in row["patch"].splitlines() if line.startswith("+++ b/")]
        added = [line[1:] for line in row["patch"].splitlines()
                 if line.startswith("+") and not line.startswith("+++") and line[1:].strip()]
        assert changed and added[0] in env.read(changed[0])
        d = env.diff()
        assert all(f"b/{p}" in d for p in changed)
        env.exec("python -c 'import calcy'")
        assert env.steps == 7
        report = env.grade()
        assert report.resolved and report.reward == 1.0 and report.f2p_rate == 1.0, report
    assert _episode_containers(docker_client) == []  # closed


def test_empty_and_test_editing_patches_earn_0(rows):
    row = rows["acme__textkit-12"]
    with swemint.TaskEnv(row, run_id=f"{RUN_ID}-env") as env:
        assert env.reward() == 0.0  # nothing changed: the FAIL_TO_PASS tests still fail
        # an episode that makes the failing tests pass by rewriting them, not by fixing the code
        env.write("/tmp/tests.diff", row["test_patch"])
        assert env.exec("git apply /tmp/tests.diff").ok
        files = sorted({t.split("::")[0] for t in row["FAIL_TO_PASS"]})
        for f in files:
            names = sorted({t.split("::")[-1].split("[")[0] for t in row["FAIL_TO_PASS"] if t.startswith(f + "::")})
            env.write(f, "".join(f"def {n}():\n    pass\n\n" for n in names))
        assert env.exec(f"python -m pytest -q -p no:cacheprovider {' '.join(files)}").ok  # they pass in the episode
        report = env.grade()
        assert report.reward == 0.0 and not report.resolved and report.tests_status["FAIL_TO_PASS"].failure, report
        # a fresh episode starts from the image again
        env.reset()
        assert env.diff() == "" and "tests.diff" not in env.exec("ls /tmp").output


def test_reward_service_grades_a_batch_on_ray(rows):
    jobs = [(rows[i], rows[i]["patch"]) for i in IDS] + [(rows[IDS[0]], "")]
    with swemint.RewardService(workers=2, run_id=f"{RUN_ID}-rewards") as rs:
        assert rs.rewards(jobs) == [1.0, 1.0, 0.0]
