"""The test session's own Docker leftovers go at its end (`tests.session.remove_session_runs`):
a CLI run on a work directory under pytest's temporary directory labels its images with that
directory's `wd-*` run id, which no `swemint-test/*` name or session tag reveals."""

from __future__ import annotations

import uuid

import pytest

from pipeline.pipeline_config import run_id_for
from tests.session import remove_session_runs, work_dir_run_ids


def test_only_run_ids_of_directories_under_the_base_are_found(tmp_path):
    inner = tmp_path / "test_x0" / "work"
    (inner / "instances").mkdir(parents=True)
    (tmp_path / "test_x0" / ".venv" / "w").mkdir(parents=True)  # pruned: no work directory there
    outside = tmp_path.parent / "elsewhere" / "work"
    wanted = {run_id_for(inner), run_id_for(outside), run_id_for(tmp_path / "test_x0" / ".venv" / "w"),
              "core-main", "bench-cost-new-s1"}
    assert work_dir_run_ids(tmp_path, wanted) == {run_id_for(inner)}


@pytest.mark.docker
def test_images_and_containers_of_this_sessions_runs_go_and_others_stay(docker_client, debian_image, tmp_path):
    base = tmp_path / "basetemp"
    work = base / "test_cli0" / "work"
    work.mkdir(parents=True)
    session = f"cleanup-{uuid.uuid4().hex[:8]}"
    runs = {"work": run_id_for(work), "outside": run_id_for(tmp_path / "outside" / "work"),
            "session": f"test-x-{session}", "other": f"test-x-{session[:-1]}z"}
    repo = f"swemint-test/cleanup-{session}"
    made = {}
    try:
        for name, rid in runs.items():
            c = docker_client.containers.create(debian_image, ["true"], labels={"swemint.run": rid})
            made[name] = c.commit(repository=repo, tag=name).id
            if name != "work":
                c.remove()
            else:
                kept_container = c  # the run's container is left too
        assert docker_client.images.get(made["work"]).labels["swemint.run"] == runs["work"]

        removed = remove_session_runs(docker_client, base, session)

        assert sorted(removed) == sorted([made["work"], made["session"]])
        left = {t.split(":")[-1] for i in docker_client.images.list(name=repo) for t in i.tags}
        assert left == {"outside", "other"}
        assert not docker_client.containers.list(all=True, filters={"id": kept_container.id})
    finally:
        for img in docker_client.images.list(name=repo):
            docker_client.images.remove(img.id, force=True)
        for c in docker_client.containers.list(all=True, filters={"label": "swemint.run"}, ignore_removed=True):
            if session in c.labels.get("swemint.run", "") or c.labels.get("swemint.run") in runs.values():
                c.remove(force=True)
