"""Layer-build containers of a killed builder are swept by the next build (envpool.imagestore); a
container that vanishes while a sweep lists them stops no sweep."""

import os
from datetime import datetime, timedelta, timezone

from envpool.imagestore import _sweep_dead_builds


class _C:
    def __init__(self, run, age_s=0):
        self.labels = {"swemint.run": run}
        when = datetime.now(timezone.utc) - timedelta(seconds=age_s)
        self.attrs = {"Created": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        self.removed = False

    def remove(self, force=False):
        self.removed = True


class _Client:
    def __init__(self, cs):
        self.containers = self
        self.cs = cs

    def list(self, all=False, filters=None, ignore_removed=False):
        return self.cs


def test_dead_owner_swept_live_owner_and_other_runs_kept():
    dead_pid = 2**22 + 7  # above pid_max's default: no such process
    live = _C(f"image-build-{os.getpid()}")
    dead = _C(f"image-build-{dead_pid}")
    other = _C("bench-x")
    old_style_new = _C("image-build", age_s=60)
    old_style_old = _C("image-build", age_s=5 * 3600)
    n = _sweep_dead_builds(_Client([live, dead, other, old_style_new, old_style_old]))
    assert n == 2
    assert dead.removed and old_style_old.removed
    assert not (live.removed or other.removed or old_style_new.removed)


class _VanishingApi:
    """The engine API under docker-py's own `ContainerCollection`: container `gone` is listed,
    then removed by someone else before its inspect (a shared engine under load)."""

    def __init__(self):
        self.removed = []

    def containers(self, **kwargs):
        return [{"Id": "gone"}, {"Id": "kept"}]

    def inspect_container(self, cid):
        import docker.errors

        if cid == "gone":
            raise docker.errors.NotFound(f"No such container: {cid}")
        return {"Id": cid, "Name": "/x", "Config": {"Labels": {"swemint.run": "run-1", "swemint.instance": "a-1"}}}

    def remove_container(self, cid, **kwargs):
        self.removed.append(cid)


def test_a_container_removed_between_list_and_inspect_stops_no_sweep():
    from docker.models.containers import ContainerCollection

    from envpool.docker_sandbox import DockerSandboxFactory

    api = _VanishingApi()
    client = type("Client", (), {})()
    client.api = api
    client.containers = ContainerCollection(client=client)
    assert DockerSandboxFactory("run-1", client=client).sweep() == 1 and api.removed == ["kept"]
    api.inspect_container = lambda cid: (_VanishingApi.inspect_container(api, cid) if cid == "gone" else
                                         {"Id": cid, "Config": {"Labels": {"swemint.run": f"image-build-{2**22 + 7}"}}})
    assert _sweep_dead_builds(client) == 1 and api.removed == ["kept", "kept"]
