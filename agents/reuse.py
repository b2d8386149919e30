"""Which pooled environments an instance may reuse (MEnvAgent, arXiv 2601.22859), for every
language, and the version key of the pool's hierarchy (the ecosystem's `package_version`, else the tag).

`reuse_candidates` is what the pipeline driver asks just before submitting an instance: the
hierarchical lookup in the same repository (`EnvPool.find`: same version -> nearest newer commit
-> any). The flow adapts them in order (`agents.envpatch`) and accepts one only when it verifies.
Environments of *other* repositories are never offered: their instance tier holds what their
build code wrote outside the checkout; what repositories may share is the dependency tier, in
which no repository's code ran (`agents.tiers`).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path

from agents.ecosystems.base import Ecosystem
from agents.gitrepo import GitTree
from agents.models import EnvRecord, Instance

log = logging.getLogger(__name__)
_XY = re.compile(r"\d+\.\d+")


def derive_version(instance: Instance, tree: GitTree | None, eco: Ecosystem | None = None) -> str | None:
    """The package's major.minor at base_commit, the key of the pool's `same_version` tier.

    `instance.version` when it looks like a release (`X.Y`, `X.Y.Z`: SWE-bench); otherwise (a PR
    number in SWE-bench Multilingual, or none) the version the project's packaging declares at the
    commit (`Ecosystem.package_version` of `eco`, default the ecosystem `pick_ecosystem` finds for
    the tree: Python's setup.py / setup.cfg / pyproject or `__version__`), else the nearest tag,
    cut to `X.Y`. None when nothing says.
    """
    import agents.ecosystems as registry

    v = (instance.version or "").strip()
    if re.fullmatch(r"\d+\.\d+(\.\d+)*", v):
        return v
    if tree is None:
        return None
    eco = eco or registry.pick_ecosystem(tree, instance.language)
    found = eco.package_version(tree) if eco is not None else None
    if not found or not _XY.match(found):
        found = tree.describe() or None
    m = _XY.search(found or "")
    return m.group(0) if m else None


def reuse_candidates(pool, instance: Instance, repo_path: Path, max_candidates: int, *,
                     commit_time: datetime | None = None, version: str | None = None) -> list[EnvRecord]:
    """Pooled environments of `instance`'s repository, best first (same version -> nearest newer
    commit -> any), at most `max_candidates`. [] on any error (reuse is an optimisation, never a
    reason to fail).

    What a plan stage already learned is not learned again: with `commit_time` (UTC, of
    `base_commit`) the pool is asked with it and `version` (the version at the commit, None when
    nothing says) and the tree is not read for them."""
    if max_candidates <= 0:
        return []
    try:
        if commit_time is None:
            tree = GitTree(repo_path, instance.base_commit, instance_id=instance.instance_id)
            version, commit_time = derive_version(instance, tree), tree.commit_time
        return [m.record for m in pool.find(instance.repo, version, commit_time, exclude=instance.instance_id,
                                            limit=max_candidates)]
    except Exception as e:  # noqa: BLE001
        log.warning("no reuse candidates for %s: %s", instance.instance_id, e)
        return []
