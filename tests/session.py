"""One tag per test session, so suites run at the same time on one Docker engine (two worktrees,
a helper and CI) never share a run id or an image tag.

Docker-backed tests put `SESSION` into their run ids (`swemint.run` labels: a minter's resume sweep
removes its own run id's containers) and use `ENV_REPOSITORY` for the images they commit;
`tests/conftest.py` removes that repository's images when the session ends, and with
`remove_session_runs` the containers and images of this session's runs under any name (a CLI run
on a work directory under the session's temporary directory labels its `wd-*` run id).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path

SESSION = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
ENV_REPOSITORY = f"swemint-test/env-{SESSION}"

_NOT_WORK_DIRS = frozenset({".git", "node_modules", "site-packages", "__pycache__", ".venv"})
"""Directory names whose trees hold no work directory of a test (pruned from the walk)."""


def work_dir_run_ids(basetemp: Path, wanted: Iterable[str]) -> set[str]:
    """The run ids among `wanted` that are `pipeline.pipeline_config.run_id_for(d)` of a directory
    `d` under `basetemp` (itself included): the default run ids of the work directories this
    session's tests minted in. Walks `basetemp` without following symlinks; stops early once all
    of `wanted` are found."""
    from pipeline.pipeline_config import run_id_for

    wanted = {w for w in wanted if w.startswith("wd-")}
    found: set[str] = set()
    if not wanted:
        return found
    for dirpath, dirnames, _ in os.walk(basetemp):
        rid = run_id_for(Path(dirpath))
        if rid in wanted:
            found.add(rid)
            if found == wanted:
                break
        dirnames[:] = [d for d in dirnames if d not in _NOT_WORK_DIRS]
    return found


def remove_session_runs(client, basetemp: Path, session: str = SESSION) -> list[str]:
    """Remove the containers, then the images (newest first: a child before its parent) whose
    `swemint.run` label is this session's: it contains `session`, or it is the default run id of a
    work directory under `basetemp` (`work_dir_run_ids`). Another session's runs and runs of work
    directories elsewhere (benchmarks, another suite's temporary directory) are never touched.
    `client` is a docker SDK client; returns the removed images' ids. Errors (gone meanwhile, in
    use) are skipped."""
    containers = client.containers.list(all=True, filters={"label": "swemint.run"}, ignore_removed=True)
    images = client.images.list(filters={"label": "swemint.run"})
    labels = {(c.labels or {}).get("swemint.run", "") for c in containers}
    labels |= {(i.labels or {}).get("swemint.run", "") for i in images}
    ours = {rid for rid in labels if session in rid} | work_dir_run_ids(basetemp, labels)
    for c in containers:
        if (c.labels or {}).get("swemint.run", "") in ours:
            try:
                c.remove(force=True)
            except Exception:  # noqa: BLE001 - gone meanwhile
                pass
    removed = []
    for img in sorted(images, key=lambda i: str(i.attrs.get("Created", "")), reverse=True):
        if (img.labels or {}).get("swemint.run", "") in ours:
            try:
                client.images.remove(img.id, force=True)
                removed.append(img.id)
            except Exception:  # noqa: BLE001 - gone, or a child of another run's image
                pass
    return removed
