"""Layer-build containers of a killed builder are swept by the next build (envpool.imagestore)."""

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

    def list(self, all=False, filters=None):
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
