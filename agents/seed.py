"""Download caches carried from one environment image into a new build (issue 26, item 6).

What an ecosystem downloads into a cache whose content does not depend on the toolchain's
version -- Go's module cache, the local Maven repository, cargo's registry -- is named by its
`portable_paths(plan)` hook. `seed_paths` copies those folders from an image (another instance's
environment or dependency layer) into a build sandbox before its setup runs: the setup's own
download then finds what it needs and fetches only the rest. The source image is never written
(a container of it is created, read and removed): the cache is read-only to the build, and what
the build adds stays in its own container, as the per-instance uv cache keeps a repository's
writes to itself. Used where MEnvAgent's EnvPatch would adapt an environment rather than
discard it: a candidate of the same repository on another minor version of the toolchain (go
1.19 -> 1.21, JDK 11 -> 17; `agents.flow`), and a dependency tier built for a repository whose
other instances already have one (`agents.tiers`).
"""

from __future__ import annotations

import logging
import posixpath
import shlex

from agents.ecosystems.base import Ecosystem, Plan

log = logging.getLogger(__name__)


def portable_paths(eco: Ecosystem, plan: Plan) -> list[str]:
    """The ecosystem's `portable_paths(plan)` that are absolute folders without `..`."""
    try:
        return [p for p in eco.portable_paths(plan) if p.startswith("/") and ".." not in p.split("/")]
    except (KeyError, ValueError):
        return []


def seed_paths(factory, sb, image: str, paths: list[str]) -> list[str]:
    """Copy each folder of `paths` from `image` into the running sandbox `sb` (same path),
    streamed through the engine (no copy held in memory). Returns the folders copied; a folder
    the image lacks is skipped. Never raises: a seed is an optimisation (a factory without an
    engine client, e.g. a test double, copies nothing)."""
    client = getattr(factory, "client", None)
    container = getattr(sb, "container", None)
    if client is None or container is None or not paths:
        return []
    copied: list[str] = []
    src = None
    try:
        src = client.containers.create(image, ["true"], labels={"swemint.run": sb.spec.run_id,
                                                                 "swemint.instance": sb.spec.instance_id or "",
                                                                 "swemint.seed": "1"})
        for path in paths:
            try:
                stream, _ = src.get_archive(path)
            except Exception as e:  # noqa: BLE001 - the image lacks it
                log.debug("seed: %s has no %s: %s", image, path, e)
                continue
            parent = posixpath.dirname(path.rstrip("/")) or "/"
            r = sb.exec(f"mkdir -p {shlex.quote(parent)}", timeout=60, workdir="/", log_label="seed")
            if r.ok and container.put_archive(parent, stream):
                copied.append(path)
    except Exception as e:  # noqa: BLE001 - no seed; the setup downloads as before
        log.info("seed from %s failed: %s", image, e)
    finally:
        if src is not None:
            try:
                src.remove(force=True)
            except Exception:  # noqa: BLE001
                pass
    return copied
