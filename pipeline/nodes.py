"""The driver's view of the cluster's Docker nodes while a run goes on: nodes that join (or come
back after being lost) have what the run left on their engine swept, and at the end every node
is swept of the run's finished instances.

A node lost mid-run (its raylet and its engine killed) takes its build containers with it; Ray
runs its tasks in flight again on another node (`ray.system_retries`), so the instances are
redone and each ends as one row. What the lost node's engine still holds when it comes back --
the exited containers and the images committed by those interrupted builds, labelled
`swemint.run` / `swemint.instance` -- is removed as soon as the driver sees the node (with its
new Ray node id) join, for every instance that has its row by then, and again at the end of the
run on every node when a node was lost or joined (`stages.sweep_leftovers`; images the pool
references are kept). Instances
still in flight are left alone: one of them may be starting on that very node.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any

from pipeline.pipeline_config import PipelineConfig
from pipeline.stages import sweep_leftovers

log = logging.getLogger("pipeline.driver")

CHECK_EVERY_S = 10.0
"""Seconds between two looks at the cluster's nodes."""


class NodeWatch:
    """Sweeps for the run of `cfg` on an executor that has nodes (`node_ids`, `each_node(...,
    nodes=)`); a no-op on one without them. `store` / `pool`: the driver's result store and
    pool (finished instances, images to keep)."""

    def __init__(self, cfg: PipelineConfig, executor: Any, store: Any, pool: Any, every_s: float = CHECK_EVERY_S):
        self.cfg, self.ex, self.store, self.pool = cfg, executor, store, pool
        self.every_s = every_s
        self.known: set[str] | None = None
        self.last = 0.0
        self.joined: list[str] = []
        self.lost: list[str] = []
        self.swept: Counter[str] = Counter()

    def _ids(self) -> set[str] | None:
        fn = getattr(self.ex, "node_ids", None)
        if fn is None:
            return None
        try:
            return set(fn())
        except Exception as e:  # noqa: BLE001 - the cluster did not answer: look again later
            log.debug("node list unavailable: %s", e)
            return None

    def check(self, now: float | None = None) -> list[str]:
        """Look at the nodes (at most every `every_s` seconds); sweep the ones that joined since
        the last look; returns their ids."""
        now = time.monotonic() if now is None else now
        if now - self.last < self.every_s:
            return []
        self.last = now
        ids = self._ids()
        if ids is None:
            return []
        if self.known is None:
            self.known = ids
            return []
        new, gone = ids - self.known, self.known - ids
        for nid in sorted(gone):
            self.lost.append(nid)
            log.warning("node %s lost: Ray runs its builds in flight again on another node", nid[:12])
        self.known = ids
        if new:
            self.joined += sorted(new)
            log.info("node(s) %s joined: sweeping what this run left on them", ", ".join(n[:12] for n in sorted(new)))
            self._sweep(new)
        return sorted(new)

    def _finished(self) -> list[str]:
        try:
            return [r.instance_id for r in self.store.results()]
        except Exception as e:  # noqa: BLE001 - a sweep is housekeeping
            log.warning("could not list finished instances for a sweep: %s", e)
            return []

    def _sweep(self, nodes: set[str] | None) -> dict[str, int]:
        ids = self._finished()
        if not ids:
            return {}
        keep = [r.image_id for r in self.pool.list() if r.image_id] if self.pool is not None else []
        try:
            got = self.ex.each_node(sweep_leftovers, self.cfg.mint.run_id, ids, keep, nodes=nodes)
        except TypeError:  # an executor without node selection: every node
            got = self.ex.each_node(sweep_leftovers, self.cfg.mint.run_id, ids, keep)
        except Exception as e:  # noqa: BLE001 - housekeeping never stops a run
            log.warning("sweep of run %s failed: %s", self.cfg.mint.run_id, e)
            return {}
        n: Counter[str] = Counter()
        for c in got:
            n.update(c)
        self.swept.update(n)
        if n.get("containers") or n.get("images"):
            log.info("swept %d container(s) and %d image(s) of finished instances of run %s", n["containers"],
                     n["images"], self.cfg.mint.run_id)
        return dict(n)

    def sweep_finished(self) -> dict[str, int]:
        """At the end of a run in which a node was lost or joined: on every node, remove the
        run's leftovers of finished instances ({} and nothing done otherwise)."""
        self.check(now=self.last + self.every_s)
        if not (self.joined or self.lost):
            return {}
        return self._sweep(None)

    def names(self) -> dict[str, str]:
        """Node id -> node name (the engine's `swemint.node`), {} when unknown."""
        fn = getattr(self.ex, "node_names", None)
        if fn is None:
            return {}
        try:
            return fn()
        except Exception as e:  # noqa: BLE001
            log.debug("node names unavailable: %s", e)
            return {}
