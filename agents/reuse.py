"""Which pooled environments an instance may reuse (MEnvAgent, arXiv 2601.22859), for every
language, and the version key of the pool's hierarchy.

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

from agents.gitrepo import GitTree
from agents.models import EnvRecord, Instance

log = logging.getLogger(__name__)
_XY = re.compile(r"\d+\.\d+")


def derive_version(instance: Instance, tree: GitTree | None) -> str | None:
    """The package's major.minor at base_commit, the key of the pool's `same_version` tier.

    `instance.version` when it looks like a release (`X.Y`, `X.Y.Z`: SWE-bench); otherwise (a PR
    number in SWE-bench Multilingual, or none) the version the Python packaging declares at the
    commit (setup.py / setup.cfg / pyproject), else `__version__` in a top-level module, else the
    nearest tag, cut to `X.Y`. None when nothing says.
    """
    from agents.ecosystems.python.profile import analyze_python

    v = (instance.version or "").strip()
    if re.fullmatch(r"\d+\.\d+(\.\d+)*", v):
        return v
    if tree is None:
        return None
    found = analyze_python(tree).package_version if tree.file_set & {"setup.py", "setup.cfg", "pyproject.toml"} \
        else None
    if not found or not _XY.match(found):
        for path in sorted(f for f in tree.files if f.count("/") <= 2 and
                           f.endswith(("__init__.py", "_version.py", "version.py", "__about__.py"))
                           and "test" not in f)[:20]:
            m = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", tree.read(path) or "", re.M)
            if m and _XY.match(m.group(1)):
                found = m.group(1)
                break
        else:
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
