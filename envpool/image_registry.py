"""Images every node needs, made once in a cluster: built by one node, pulled by digest elsewhere.

Toolchain images (the bootstrapped Debian bases, Python/Node/Go/... layers) and any other image
tagged by a hash of its inputs (`envpool.images.spec_hash`) are the same on every node, so a
cluster with a registry builds each of them once: `shared_image(client, tag, cfg, build)`

1. returns at once when this engine has `tag`;
2. else asks the registry which manifest `REGISTRY/tag` names (through the engine, with the
   configured credentials), pulls that **digest**, checks the pulled image is a swemint image
   (label `swemint.managed`) and tags it `tag`;
3. else takes the cluster-wide lock of `tag` (an `flock` on a file in `cfg.shared_dir`, a
   folder every node mounts at the same path: `WORKDIR/images`), asks the registry again (a
   node may have published it while this one waited), and only then runs `build()` and pushes
   the result (`envpool.pool.publish_image`).

Without a registry (`cfg.registry` None) it is step 1 then `build()` under the lock, as before.
A registry that does not answer makes step 2 an `InfraError` (the row is `infra_error` and
retried): a node never bootstraps a toolchain because the registry is down, so a toolchain is
bootstrapped once in the cluster. A failed push after a build only warns (the image is here; the
next node that needs it will build and publish it).

Each image built, pulled or published is one line of `cfg.shared_dir/events.jsonl`
(`{"at", "node", "action", "tag", "seconds", "ref"}`; `node` is the engine's `swemint.node`
label, else its name), which `scripts/bench_cluster.py` counts per node.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from envpool.errors import InfraError
from envpool.hostfs import flock_wait
from envpool.imagestore import NODE_LABEL, engine_node  # noqa: F401 - the node's name, re-exported
from envpool.pool import publish_image, registry_credentials, registry_reference, split_reference

log = logging.getLogger(__name__)

EVENTS = "events.jsonl"
"""File in the shared folder with one line per image built, pulled or published."""


class SharedImages(Protocol):
    """What `shared_image` reads from a config (`envpool.images.ImageConfig` has it):
    `registry` (`host:port[/prefix]` or None), `registry_auth` ((username variable, password
    variable) or None) and `shared_dir` (a folder all nodes mount, or None)."""

    registry: str | None
    registry_auth: tuple[str, str] | None
    shared_dir: Path | None


_threads: dict[str, threading.Lock] = {}
_threads_guard = threading.Lock()


def _thread_lock(key: str) -> threading.Lock:
    with _threads_guard:
        return _threads.setdefault(key, threading.Lock())


@contextmanager
def cluster_lock(shared_dir: Path | None, key: str, timeout: float = 7200.0):
    """Hold the lock of `key` across threads of this process and, when `shared_dir` is given,
    across processes and nodes (`flock` on `shared_dir/locks/<key>.lock`). Raises InfraError
    when it is not had within `timeout` seconds."""
    with _thread_lock(key):
        if shared_dir is None:
            yield
            return
        folder = Path(shared_dir) / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:180]
        with open(folder / f"{safe}.lock", "a+") as fh:
            if not flock_wait(fh, timeout):
                raise InfraError(f"waited {timeout:.0f} s for the build lock of {key}")
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


def record_event(shared_dir: Path | None, client, action: str, tag: str, seconds: float = 0.0,
                 ref: str = "", **extra: Any) -> None:
    """Append one line to `shared_dir/events.jsonl` (nothing when `shared_dir` is None); never
    raises (a line lost is only a lost count)."""
    if shared_dir is None:
        return
    line = {"at": datetime.now(timezone.utc).isoformat(), "node": engine_node(client), "action": action,
            "tag": tag, "seconds": round(seconds, 2), "ref": ref, **extra}
    try:
        Path(shared_dir).mkdir(parents=True, exist_ok=True)
        fd = os.open(Path(shared_dir) / EVENTS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
        finally:
            os.close(fd)
    except OSError as e:
        log.warning("could not record image event %s %s: %s", action, tag, e)


def read_events(shared_dir: Path) -> list[dict]:
    """The lines of `shared_dir/events.jsonl` ([] when there is none; bad lines skipped)."""
    path = Path(shared_dir) / EVENTS
    out = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def _auth(cfg: SharedImages) -> dict | None:
    return registry_credentials(*cfg.registry_auth) if cfg.registry_auth else None


def published_digest(client, ref: str, auth: dict | None) -> str | None:
    """The manifest digest the registry holds for `ref` (`host/repo:tag`), None when it holds no
    such tag. Raises InfraError when the registry does not answer or refuses the credentials."""
    try:
        got = client.api.inspect_distribution(ref, auth_config=auth)
    except Exception as e:  # noqa: BLE001 - docker.errors.APIError / NotFound
        text = str(e).lower()
        if any(s in text for s in ("manifest unknown", "not found", "404", "name unknown")):
            return None
        raise InfraError(f"registry lookup of {ref} failed: {e}") from e
    digest = (got.get("Descriptor") or {}).get("digest")
    return str(digest) if digest else None


def pull_published(client, tag: str, cfg: SharedImages) -> str | None:
    """Pull `tag` from the registry by the digest its tag names and tag it `tag` here; returns
    the reference pulled (`host/repo@sha256:...`), None when the registry has no such tag.
    Raises InfraError when the registry fails or the image is not a swemint image."""
    auth = _auth(cfg)
    ref = registry_reference(cfg.registry, tag)  # type: ignore[arg-type]
    digest = published_digest(client, ref, auth)
    if digest is None:
        return None
    repo, _ = split_reference(ref)
    by_digest = f"{repo}@{digest}"
    t0 = time.monotonic()
    try:
        for line in client.api.pull(repo, tag=digest, stream=True, decode=True, auth_config=auth):
            if isinstance(line, dict) and (line.get("error") or line.get("errorDetail")):
                raise InfraError(f"pulling {by_digest} failed: {line.get('error') or line.get('errorDetail')}")
        img = client.images.get(by_digest)
    except InfraError:
        raise
    except Exception as e:  # noqa: BLE001
        raise InfraError(f"pulling {by_digest} failed: {e}") from e
    if (img.labels or {}).get("swemint.managed") != "1":
        client.images.remove(by_digest, force=True)
        raise InfraError(f"{by_digest} (published as {tag}) is not a swemint image: refused")
    target_repo, target_tag = split_reference(tag)
    img.tag(target_repo, target_tag)
    try:
        client.images.remove(by_digest)  # the registry name only; `tag` remains
    except Exception:  # noqa: BLE001
        pass
    record_event(cfg.shared_dir, client, "pulled", tag, time.monotonic() - t0, by_digest)
    log.info("pulled %s as %s", by_digest, tag)
    return by_digest


def shared_image(engine, tag: str, cfg: SharedImages, build: Callable[[], Any], kind: str = "toolchain") -> str:
    """`tag` present on this engine (an image store, a sandbox factory or a docker client), made
    once in the cluster (see the module docstring): local, else pulled by digest from the
    registry, else built (under the cluster lock) and published. `build()` makes `tag` on the
    engine. Raises what `build` raises, and InfraError when the registry fails (never builds
    because of it) or a registry is configured for an engine without a Docker API."""
    from envpool.imagestore import store_of

    store = store_of(engine)
    if store.get(tag) is not None:
        return tag
    registry = getattr(cfg, "registry", None)
    shared_dir = getattr(cfg, "shared_dir", None)
    client = getattr(store, "client", None)  # the registry's pulls and pushes by digest need the engine's API
    if registry and client is None:
        raise InfraError(f"registry {registry}: the image store of this engine cannot pull or push ({tag})")
    if registry and pull_published(client, tag, cfg):
        return tag
    with cluster_lock(shared_dir, tag):
        if store.get(tag) is not None:
            return tag
        if registry and pull_published(client, tag, cfg):
            return tag
        t0 = time.monotonic()
        build()
        record_event(shared_dir, client, "built", tag, time.monotonic() - t0, kind=kind)
        if registry:
            t1 = time.monotonic()
            try:
                ref = publish_image(tag, registry, client=client, auth=_auth(cfg))
            except InfraError as e:
                log.warning("built %s but could not publish it: %s", tag, e.message)
            else:
                record_event(shared_dir, client, "published", tag, time.monotonic() - t1, ref, kind=kind)
    return tag
