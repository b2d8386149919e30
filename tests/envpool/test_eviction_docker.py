"""`swemint pool prune --all` on a real engine: every image labelled with the run goes (an
environment and a dependency layer built on it), another run's image stays, and an image that
is already gone is skipped."""

from __future__ import annotations

import io
import tarfile
import uuid

import pytest

from envpool.eviction import _gone, remove_run_images
from tests.session import ENV_REPOSITORY

pytestmark = [pytest.mark.docker]


def _context(dockerfile: str) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in (("Dockerfile", dockerfile.encode()), ("f", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def _build(client, tag: str, dockerfile: str) -> str:
    client.images.build(fileobj=_context(dockerfile), custom_context=True, tag=tag, rm=True)
    return client.images.get(tag).id  # the tagged image (the build's return can name a step's image)


def test_a_runs_images_go_and_another_runs_stay(docker_client):
    run, other = f"swemint-test-prune-{uuid.uuid4().hex[:8]}", f"swemint-test-other-{uuid.uuid4().hex[:8]}"
    repo = ENV_REPOSITORY  # this session's: removed at its end whatever happens here
    made = []
    try:
        env = _build(docker_client, f"{repo}:{run}-env", f"FROM scratch\nCOPY f /env\nLABEL swemint.run={run}\n")
        made.append(env)
        deps = _build(docker_client, f"{repo}:deps-{run}",
                      f"FROM {repo}:{run}-env\nCOPY f /deps\nLABEL swemint.run={run} swemint.tier=dependencies\n")
        made.append(deps)
        theirs = _build(docker_client, f"{repo}:{other}", f"FROM scratch\nCOPY f /o\nLABEL swemint.run={other}\n")
        made.append(theirs)
        plan = remove_run_images(run, dry_run=True, client=docker_client)
        assert {i["image_id"] for i in plan["removed"]} == {env, deps}
        assert docker_client.images.get(env) and docker_client.images.get(deps)  # a dry run removes nothing
        got = remove_run_images(run, client=docker_client)
        assert {i["image_id"] for i in got["removed"]} == {env, deps} and got["kept"] == []
        ids = {i.id for i in docker_client.images.list(all=True)}
        assert env not in ids and deps not in ids and theirs in ids
        with pytest.raises(Exception) as e:
            docker_client.images.remove(env, force=True)
        assert _gone(e.value)  # what remove_run_images / evict_engine skip when another process was first
    finally:
        for iid in reversed(made):
            try:
                docker_client.images.remove(iid, force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
