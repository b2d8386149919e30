"""Environments in tiers, as the SWE-bench harness builds them (base -> env -> instance images),
with the middle tier content-addressed and shared across repositories.

```
toolchain image     the plan's image (envpool.images, envpool.toolchains)           shared by everyone
  └ dependency tier the ecosystem's LayerSpec (`dependency_layer` hook): /testbed    shared by every
                    holds only manifests and lockfiles (and empty stubs), so no      environment with
                    code of the repository exists there and none of its install      the same key
                    scripts runs; emptied before the commit
      └ instance    the checkout of base_commit and the plan's whole setup (the      this instance; reused
                    repository's own build: agents.execution)                        only within its repository
```

Why: an environment of another repository carries whatever that repository's build code wrote
outside its checkout (a `.pth` file, a sitecustomize, a patched library, a cache entry); only a
layer in which no repository's code ran may be shared across repositories. A shared layer is
content-addressed: its key is sha256 over the toolchain image's id and the layer's inputs (the
manifest and lockfile bytes by path, the stub paths, the commands, their environment) -- or, for
a spec with a `resolved` command, over the resolved dependency set that command prints on stdout
(Python: `uv pip freeze` of the virtualenv; its stderr is not part of it). Two repositories with
the same lockfile get the same key and so the same image (the same layer digest), which also cuts the unique bytes per instance.

`dependency_tier(run, eco, plan)` returns the tier of a plan (`DependencyTier`): the image this
run already made under the key's tag (for another instance, another repository; with
`mint.images.registry`, on another node: pulled by digest, as toolchains are), else one built now
in a sandbox of the toolchain image (and pushed to that registry for the other nodes). None when the ecosystem has no tier for the plan or
building it fails; the instance tier then starts from the toolchain image as before and the
trajectory (`tier:*` steps) says why. The row records the key and the image id
(`InstanceResult.dependency_key`, `dependency_image_id`); its Dockerfile spells the tier out
(`agents.dockerfile.render_dockerfile`).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import tarfile
import time
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.base import LayerSpec, Plan
from agents.models import StepRecord
from envpool import images
from envpool.errors import SandboxTimeout, SwemintError
from envpool.hostfs import flock_wait
from envpool.imagestore import store_of
from agents.envimage import (TIER_LABEL_BUILT_BY, TIER_LABEL_COMMANDS, TIER_LABEL_ECOSYSTEM, TIER_LABEL_KEY,
                             TIER_LABEL_REPO)

__all__ = ["DependencyTier", "dependency_tier", "layer_key", "manifest_tar"]

LABEL_KEY, LABEL_COMMANDS = TIER_LABEL_KEY, TIER_LABEL_COMMANDS
"""Image labels of a dependency image: its key, and (JSON) the commands and environment that made
it -- a later instance whose resolved set equals it takes those for its Dockerfile."""
STAGE = "/tmp/swemint/deps.tar"
LABEL_REPO, LABEL_ECOSYSTEM, LABEL_BUILT_BY = TIER_LABEL_REPO, TIER_LABEL_ECOSYSTEM, TIER_LABEL_BUILT_BY
"""The repository and instance whose build made a dependency image, and the plan's ecosystem: a
later tier of that repository is seeded from it (`_seed`, `agents.seed`). Every label of a
dependency image is one of `agents.envimage.TIER_LABELS`, which an instance image built on it
blanks (`inherited_labels_blanked`): the provenance is the shared image's, not the instance's."""


class DependencyTier(BaseModel):
    """A dependency image and how it was made.

    `key`: sha256 hex of its inputs or resolved set (`layer_key`); `image` / `image_id`: its tag
    and id on this engine; `name`: the spec's label; `files` / `stubs`: the repository paths it
    was given (contents, empty files); `content`: text given in place of the tree's for some of
    `files` (`LayerSpec.content`); `commands` / `env`: what made it (for an image another
    instance made: that instance's, read from the image's labels); `built`: made by this call
    (False: found under its key)."""

    model_config = ConfigDict(extra="forbid")
    key: str
    image: str
    image_id: str
    name: str
    files: list[str] = Field(default_factory=list)
    stubs: list[str] = Field(default_factory=list)
    content: dict[str, str] = Field(default_factory=dict)
    commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    built: bool = False


def layer_key(toolchain_id: str, spec: LayerSpec, contents: dict[str, bytes], resolved: str | None = None) -> str:
    """sha256 hex keying a dependency layer: the toolchain image id plus, with `resolved` (the
    output of `spec.resolved`), that resolved set and the spec's `requested` lines; else the spec's inputs (each file's sha256 by
    path from `contents`, the stubs, the commands, the environment). Equal keys = equal layers."""
    if resolved is not None:
        inputs: dict = {"toolchain": toolchain_id, "resolved": resolved}
        if spec.requested:  # what was asked for as well as what the build left (LayerSpec.requested)
            inputs["requested"] = sorted(spec.requested)
    else:
        inputs = {"toolchain": toolchain_id, "files": {p: hashlib.sha256(contents[p]).hexdigest() for p in spec.files},
                  "stubs": sorted(spec.stubs), "commands": spec.commands, "env": spec.env}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def manifest_tar(contents: dict[str, bytes], stubs: list[str]) -> bytes:
    """An uncompressed tar of `contents` (repository path -> bytes) and empty `stubs`, fixed
    times and modes, sorted (deterministic for equal input)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name in sorted(set(contents) | set(stubs)):
            data = contents.get(name, b"")
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _tag(config, key: str) -> str:
    """`<image_repository>:deps-<key>-<run>`: one image per key and run (a run's images are its own
    to remove, as for `agents.envimage.image_tag_for`)."""
    return f"{config.image_repository}:deps-{key[:40]}-{images.spec_hash({'run': config.run_id})}"


@contextmanager
def _lock(config, key: str, wait: float):
    """An exclusive file lock for `key` under WORKDIR/deps (one build per key on this host at a
    time; other workers wait up to `wait` seconds, then go on without it)."""
    d = Path(config.workdir) / "deps"
    d.mkdir(parents=True, exist_ok=True)
    with open(d / f"{key[:40]}.lock", "w") as fh:
        flock_wait(fh, wait)  # False: the wait ran out, go on without the lock
        try:
            yield
        finally:
            try:
                fcntl.flock(fh, fcntl.LOCK_UN)
            except OSError:
                pass


def _found(run, tag: str) -> tuple[str, dict] | None:
    """(image id, labels) of `tag` in the image store of the run's engine, or None."""
    img = store_of(run.factory).get(tag)
    return (img.id, dict(img.labels)) if img is not None else None


def _published(run, tag: str) -> tuple[str, dict] | None:
    """(image id, labels) of `tag` pulled by digest from the registry another node published it
    to (`mint.images.registry`; `envpool.image_registry.pull_published`), or None: no registry, or it
    holds no such tag. Raises InfraError when the registry fails (the tier falls back)."""
    from envpool.image_registry import pull_published

    client = getattr(run.factory, "client", None)
    images_cfg = getattr(run.config, "images", None)
    if client is None or not getattr(images_cfg, "registry", None):
        return None
    return _found(run, tag) if pull_published(client, tag, images_cfg) else None


def _publish(run, tag: str) -> None:
    """Push a dependency image this node made to the registry (when one is configured), so other
    nodes pull it by digest instead of building it; a failed push only warns."""
    import logging

    from envpool.errors import InfraError
    from envpool.pool import publish_image, registry_credentials
    from envpool.image_registry import record_event

    client = getattr(run.factory, "client", None)
    images_cfg = getattr(run.config, "images", None)
    if client is None or not getattr(images_cfg, "registry", None):
        return
    t0 = time.monotonic()
    try:
        auth = registry_credentials(*images_cfg.registry_auth) if images_cfg.registry_auth else None
        ref = publish_image(tag, images_cfg.registry, client=client, auth=auth)
    except InfraError as e:
        logging.getLogger(__name__).warning("dependency image %s not published: %s", tag, e.message)
        return
    record_event(images_cfg.shared_dir, client, "published", tag, time.monotonic() - t0, ref, kind="dependencies")


def _from_labels(labels: dict, spec: LayerSpec) -> tuple[list[str], dict[str, str]]:
    try:
        made = json.loads(labels.get(LABEL_COMMANDS, ""))
        return list(made["commands"]), dict(made["env"])
    except (ValueError, KeyError, TypeError):
        return list(spec.commands), dict(spec.env)


def dependency_tier(run, eco, plan: Plan) -> DependencyTier | None:
    """The dependency tier of `plan` (module docstring), or None. Raises SandboxTimeout at the
    instance's deadline; any other failure is a trajectory step and None."""
    t = time.monotonic()
    try:
        spec = eco.dependency_layer(plan, run.tree)
    except Exception as e:  # noqa: BLE001 - a hook's bug costs the sharing, never the instance
        run.traj(StepRecord(agent="setup", rule="tier:none", note=f"dependency_layer failed: {type(e).__name__}: {e}"))
        return None
    toolchain = ""
    tier = None
    while spec is not None and tier is None:  # the spec, then its fallback when one of its steps failed
        contents: dict[str, bytes] = {}
        for path in spec.files:
            data = spec.content[path].encode() if path in spec.content else run.tree.read_bytes(path)
            if data is None:
                run.traj(StepRecord(agent="setup", rule="tier:none", note=f"{spec.name}: {path} cannot be read"))
                return None
            contents[path] = data
        toolchain = toolchain or _image_id(run, plan.image)
        if not toolchain:
            return None
        try:
            tier = _make(run, plan, spec, contents, toolchain)
        except SandboxTimeout:
            raise
        except SwemintError as e:
            run.traj(StepRecord(agent="setup", rule="tier:fallback", note=f"{spec.name}: {type(e).__name__}: "
                                                                           f"{e.message[:500]}"))
            return None
        if tier is None and spec.fallback is not None:
            run.traj(StepRecord(agent="setup", rule="tier:retry", note=f"{spec.name} not made; trying "
                                                                        f"{spec.fallback.name}"))
        spec = spec.fallback if tier is None else spec
    if tier is not None and spec is not None:
        run.res.timings["dependencies"] = round(run.res.timings.get("dependencies", 0.0) + time.monotonic() - t, 2)
        run.traj(StepRecord(agent="setup", rule="tier:built" if tier.built else "tier:shared",
                            duration=round(time.monotonic() - t, 2),
                            note=f"{spec.name}: {tier.image} ({tier.image_id[:19]}), key {tier.key[:16]}"))
    return tier


def _image_id(run, ref: str) -> str:
    from agents.envimage import image_id

    return image_id(run.factory, ref) or ""


def _make(run, plan: Plan, spec: LayerSpec, contents: dict[str, bytes], toolchain: str) -> DependencyTier | None:
    cfg = run.config
    wait = float(getattr(cfg.timeouts, "setup_step", 900))
    key = layer_key(toolchain, spec, contents) if spec.resolved is None else None
    if key is not None:
        with _lock(cfg, key, wait):
            got = _found(run, _tag(cfg, key)) or _published(run, _tag(cfg, key))
            if got is not None:
                return _tier(spec, key, _tag(cfg, key), got, built=False)
            return _build(run, plan, spec, contents, toolchain, key)
    return _build(run, plan, spec, contents, toolchain, None)


def _seed(run, sb, plan: Plan) -> None:
    """With `cache.warm`: copy the ecosystem's `portable_paths` (downloads whose content does not
    depend on the toolchain's version) from the newest dependency image this run made for the
    same repository and ecosystem -- another commit's lockfile, or another minor version of the
    toolchain -- into the tier's sandbox before its commands, so they download only what is
    new (`agents.seed`); a trajectory step `tier:seeded` names the image."""
    from agents import seed
    from agents.ecosystems import by_name

    cfg = run.config
    if not getattr(cfg.cache, "warm", False):
        return
    try:
        paths = seed.portable_paths(by_name(plan.ecosystem), plan)
    except (KeyError, ValueError):
        return
    if not paths:
        return
    try:
        found = store_of(run.factory).list({"swemint.run": cfg.run_id, "swemint.tier": "dependencies",
                                            LABEL_REPO: run.instance.repo, LABEL_ECOSYSTEM: plan.ecosystem})
    except Exception:  # noqa: BLE001 - no seed
        return
    if not found:
        return
    newest = max(found, key=lambda i: i.created)
    copied = seed.seed_paths(run.factory, sb, newest.id, paths)
    if copied:
        run.traj(StepRecord(agent="setup", rule="tier:seeded", note=f"{', '.join(copied)} from {newest.id[:19]} "
                                                                    f"(built by {newest.labels.get(LABEL_BUILT_BY)})"))


def _tier(spec: LayerSpec, key: str, tag: str, got: tuple[str, dict], built: bool) -> DependencyTier:
    commands, env = _from_labels(got[1], spec) if not built else (list(spec.commands), dict(spec.env))
    return DependencyTier(key=key, image=tag, image_id=got[0], name=spec.name, files=list(spec.files),
                          stubs=sorted(spec.stubs), content=dict(spec.content), commands=commands, env=env,
                          built=built)


def _build(run, plan: Plan, spec: LayerSpec, contents: dict[str, bytes], toolchain: str,
           key: str | None) -> DependencyTier | None:
    """Run `spec` in a sandbox of the toolchain image (bridge network, the plan's caches) whose
    /testbed holds only the manifests and stubs; empty /testbed; commit under the key's tag
    (for a resolved-set key: unless this run has that image already, which is then used)."""
    cfg = run.config
    env = dict(spec.env)
    sb_spec = run.spec(plan.image, "bridge", env=env, caches=plan.state.get("caches"))
    with run.factory.sandbox(sb_spec, run.log_path) as sb:
        if contents or spec.stubs:
            sb.put_file(STAGE, manifest_tar(contents, spec.stubs))
            r = sb.exec(f"mkdir -p /testbed && tar -xf {STAGE} -C /testbed && rm -f {STAGE}", timeout=600,
                        log_label="tier:manifests")
            if not r.ok:
                run.traj(StepRecord(agent="setup", rule="tier:fallback", note=f"{spec.name}: manifests: "
                                                                               f"{r.output[-300:]}"))
                return None
        _seed(run, sb, plan)
        for n, cmd in enumerate(spec.commands):
            if run.remaining() < 60:
                raise SandboxTimeout("instance time limit reached in the dependency tier", instance_id=run.iid,
                                     log_path=run.log_path)
            r = sb.exec(cmd, timeout=cfg.timeouts.setup_step, env=env or None, log_label="tier")
            run.traj(StepRecord(agent="execution", rule=f"tier:{spec.name}:{n}", command=cmd, exit_code=r.exit_code,
                                output_excerpt=r.output[-2000:], duration=round(r.duration, 2)))
            if not r.ok:
                run.traj(StepRecord(agent="setup", rule="tier:fallback",
                                    note=f"{spec.name}: step {n} failed (exit {r.exit_code}); " +
                                         ("its fallback is tried" if spec.fallback is not None else
                                          "the instance tier starts from the toolchain image")))
                return None
        resolved = None
        if spec.resolved is not None:
            # stdout only (stderr kept apart in `channel`): stdout and stderr interleaved differ from
            # run to run (uv's "Using Python ... environment at" line landed before or after the
            # set), and the key must not (a rerun missed the layer a killed run made)
            r = sb.exec(spec.resolved, timeout=300, env=env or None, log_label="tier:resolved", channel=True)
            if not r.ok:
                run.traj(StepRecord(agent="setup", rule="tier:fallback", note=f"{spec.name}: the resolved set "
                                                                               f"cannot be read: {(r.output + r.channel.decode(errors='replace'))[-300:]}"))
                return None
            resolved = r.output
            key = layer_key(toolchain, spec, contents, resolved)
        r = sb.exec("find /testbed -mindepth 1 -delete", timeout=600, log_label="tier:clean")
        if not r.ok:
            return None
        assert key is not None
        tag = _tag(cfg, key)
        # not the building instance's `swemint.instance` (the container's label would be copied):
        # the image is every instance's with this key, never swept with one of them
        labels = {"swemint.run": cfg.run_id, "swemint.instance": f"deps:{key[:16]}", "swemint.tier": "dependencies",
                  LABEL_BUILT_BY: run.iid, LABEL_KEY: key, LABEL_REPO: run.instance.repo,
                  LABEL_ECOSYSTEM: plan.ecosystem,
                  LABEL_COMMANDS: json.dumps({"commands": spec.commands, "env": spec.env})}
        repo, _, name = tag.rpartition(":")
        if spec.resolved is None:  # the caller holds the key's lock and found no image
            image_id = sb.commit(repo, name, labels=labels)
            _publish(run, tag)
        else:
            with _lock(cfg, key, wait=120):
                got = _found(run, tag) or _published(run, tag)
                if got is not None:  # another instance (on any node) resolved the same set first: share its image
                    return _tier(spec, key, tag, got, built=False)
                image_id = sb.commit(repo, name, labels=labels)
                _publish(run, tag)
    return _tier(spec, key, tag, (image_id, labels), built=True)
