"""Environment images: laying out the repository in a sandbox, committing it, and image look-ups
shared by the full build (`agents.minter`) and reuse (`agents.reuse`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from agents.dockerfile import layout_command
from agents.gitrepo import GitTree
from agents.models import StepRecord
from envpool import images
from envpool.errors import EnvBuildError
from envpool.hostfs import private_dir, remove_tree, scrub
from envpool.imagestore import store_of
from envpool.patches import files_in_patch
from envpool.aptmirror import AptMirrorError, MirrorPolicy, mirror_failure
from envpool.evalscript import ensure_python3, grading_tools, tool_labels
from envpool.quoting import image_tag, shell_word
from envpool.testpaths import IMAGE_STAMP, STAMP, wait_past_stamp

GIT_ID = "-c user.name=swemint -c user.email=swemint@localhost"


def image_tag_for(instance_id: str, spec: dict | None = None, run_id: str = "") -> str:
    """Docker tag for an instance's environment: the instance id plus a hash of the spec it was
    built from (base image, setup commands) and of the run that owns it (`swemint.run`, one per
    work directory), so identical builds of one pool share a tag, a changed build never
    overwrites another's image, and two work directories on one engine never touch each other's
    images. The id part is `envpool.quoting.image_tag` (a valid tag, injective: an id it had to
    alter -- upper case, a character outside `[a-z0-9_.-]` -- ends in a hash of the id, so two ids
    never share a tag and one instance's rebuild never removes another's image); <= 113 chars."""
    base = image_tag(instance_id, limit=100)
    return f"{base}-{images.spec_hash({'spec': spec, 'run': run_id})}" if spec is not None else base


UV_CACHE_IN_CONTAINER = "/root/.cache/uv"


def cache_mounts(config, instance_id: str, repo: str) -> dict[str, str]:
    """`SandboxSpec.cache_mounts` of a build container: the instance's package cache folder
    (`MintConfig.package_cache`, created mode 0700) at uv's cache path; {} when the scope is off."""
    path = config.package_cache(instance_id, repo)
    if path is None:
        return {}
    return {str(private_dir(path, root=Path(config.workdir) / "cache")): UV_CACHE_IN_CONTAINER}


def release_cache(config, instance_id: str, repo: str) -> None:
    """After the instance: remove its per-instance cache, or scrub a repository's (setuid bits,
    device nodes) so nothing a container wrote there can raise privileges on the host."""
    path = config.package_cache(instance_id, repo)
    if path is None or not path.exists():
        return
    if config.cache.scope == "instance":
        remove_tree(path)
    else:
        scrub(path)


def plugin_files() -> dict[str, bytes]:
    """The grading tools, path -> bytes, baked into every environment image: swemint's pytest
    report plugin and the status tool of the rows' eval scripts (`envpool.evalscript`)."""
    return grading_tools()


def lay_out_repository(sb, tree: GitTree, base_commit: str, *, replace: bool = False, keep_ignored: bool = False,
                       log_path: Path | None = None) -> None:
    """Put `tree` (the repository at `base_commit`) at /testbed as a one-commit git repository.

    `replace`: empty /testbed first (a reused environment: what lives outside it, e.g. a venv
    under /opt or the module caches, stays). `keep_ignored`: keep the top-level folders the
    previous tree's git ignores (`target/`, `node_modules/`, `build/`: compiled artifacts an
    incremental rebuild reuses); they stay ignored in the new repository (`.git/info/exclude`),
    and every file of the new tree gets the current time, so no kept artifact looks up to date
    against a source that changed between the commits.
    Raises EnvBuildError (with the output's tail) when it fails.
    """
    sb.put_file("/tmp/swemint/repo.tar", tree.archive())
    # the same shell the Dockerfiles replay (agents.dockerfile.layout_command)
    r = sb.exec(layout_command("/tmp/swemint/repo.tar", base_commit, replace=replace, keep_ignored=keep_ignored),
                timeout=600, log_label="checkout")
    if not r.ok:
        raise EnvBuildError(f"could not lay out the repository: {r.output[-500:]}", instance_id=tree.instance_id,
                            log_path=log_path)


def restore_conflicting_edits(sb, patches, traj) -> list[str]:
    """Tracked files a setup step edited that one of `patches` (the test_patch, the patch) also
    changes and no longer applies to: each goes back to its base-commit state (``git checkout
    HEAD -- f``, before the edits are committed), so the row's patches apply to the image as to
    base_commit -- as the SWE-bench harness applies them. sharkdp/bat-562: cargo rewrote the old
    Cargo.lock format, and the patch's Cargo.lock hunk failed. Returns the restored paths (the
    Dockerfile replays the restore); each is noted in the trajectory."""

    st = sb.exec("cd /testbed && git status --porcelain --untracked-files=no", timeout=60, log_label="status")
    changed = [line[3:].strip() for line in st.output.splitlines() if len(line) > 3 and line[:2].strip()]
    restored: list[str] = []
    for i, patch in enumerate(p for p in patches if p):
        files = [f for f in files_in_patch(patch) if f in changed and f not in restored]
        if not files:
            continue
        path = f"/tmp/swemint/edits-check-{i}.diff"
        sb.put_file(path, patch.encode())
        for f in files:
            r = sb.exec(f"cd /testbed && git apply --check --include={shell_word(f)} {path}", timeout=60,
                        log_label="edits-check")
            if not r.ok:
                sb.exec(f"cd /testbed && git checkout HEAD -- {shell_word(f)}", timeout=60, log_label="edits-restore")
                restored.append(f)
    if restored:
        traj(StepRecord(agent="setup", rule="edits-restored",
                        note="restored to base_commit (a patch of the row changes them and would not apply to the "
                             "setup's edit): " + ", ".join(restored)))
    return restored


def commit_tracked_edits(sb, traj) -> None:
    """A setup step that edited tracked files: keep the edit in its own commit so it never leaks
    into a diff against the environment."""
    st = sb.exec("cd /testbed && git status --porcelain --untracked-files=no", timeout=60, log_label="status")
    if st.output.strip():
        sb.exec(f"cd /testbed && git {GIT_ID} commit -qam 'swemint: environment setup edits' --no-verify",
                timeout=60, log_label="setup-edits")
        traj(StepRecord(agent="setup", rule="tracked-edits", note=st.output[:2000]))


TIER_LABEL_PREFIX = "swemint.deps."
TIER_LABEL_KEY, TIER_LABEL_COMMANDS = "swemint.deps.key", "swemint.deps.commands"
TIER_LABEL_REPO, TIER_LABEL_ECOSYSTEM = "swemint.deps.repo", "swemint.deps.ecosystem"
TIER_LABEL_BUILT_BY = "swemint.deps.built_by"
TIER_LABELS = (TIER_LABEL_KEY, TIER_LABEL_COMMANDS, TIER_LABEL_REPO, TIER_LABEL_ECOSYSTEM, TIER_LABEL_BUILT_BY)
"""The labels of a dependency image (`agents.tiers`): its key, the commands that made it, the
repository, ecosystem and instance that built it -- provenance of the shared image only. An image
committed on it sets each to "" (`inherited_labels_blanked`): Docker copies a parent's labels into
the child, and another repository's name is not the child's."""


def commit_image(sb, factory, repository: str, tag: str, labels: dict[str, str],
                 env: dict[str, str] | None = None, mirror: MirrorPolicy | None = None) -> tuple[str, str]:
    """Write the grading tools (`plugin_files`; the label `envpool.evalscript.TOOL_LABEL` records
    the status tool's digest), give the image a `python3` with its standard library when it has none
    (`envpool.evalscript.ensure_python3`, on the sandbox's network, tried again under `mirror`, the
    mint's `repair.mirror_*`, while apt fails on the Debian mirror: still failing on the mirror
    after them raises `envpool.aptmirror.AptMirrorError` -- the row ends `infra_error`, nothing
    committed; any other failure is logged (a warning) and the image committed, the row's eval
    script then reports it), commit the sandbox as `repository:tag` (`env` set in the
    image's ENV); returns (ref, image id). The image's /testbed carries `envpool.testpaths.STAMP`,
    written last, whose time tells a patch's untracked test files from the build's.
    A previous image under the same tag (same spec rebuilt by the same run) is removed; one
    that carries another run's `swemint.run` label is never touched."""
    for path, data in plugin_files().items():  # the stored test_command runs in the image as is
        sb.put_file(path, data, mode=0o755 if path.endswith(".pyz") else 0o644)
    py = ensure_python3(sb, 600, mirror)
    if not py.ok:
        if line := mirror_failure(py.output):
            raise AptMirrorError(f"the grading tools' python3 for {repository}:{tag}: apt could not use the Debian "
                                 f"mirror (infrastructure): {line}", line=line)
        logging.getLogger(__name__).warning("the grading tools' python3 for %s:%s failed (exit %s): %s", repository,
                                            tag, py.exit_code, py.output[-300:])
    # when the image was made: untracked test paths newer than this came from a patch (the reset
    # before grading removes them), older ones from the build (envpool.testpaths.STAMP)
    sb.put_file(f"/testbed/{STAMP}", b"swemint image stamp\n")
    sb.put_file(IMAGE_STAMP, b"swemint image stamp\n")  # beside /testbed, out of any patch's reach: read first
    stamped = time.time()  # the stamp's mtime is at most this (a tar member's whole second)
    ref = f"{repository}:{tag}"
    labels = {"swemint.tier": "instance", **inherited_labels_blanked(sb, factory), **labels, **tool_labels()}
    previous = image_id(factory, ref)
    owner = image_label(factory, ref, "swemint.run")
    new_id = sb.commit(repository, tag, labels=labels, env=env) if env else sb.commit(repository, tag, labels=labels)
    if previous and previous != new_id and owner == labels.get("swemint.run"):
        remove_image(factory, previous)  # our own earlier build of the same spec, now untagged
    # a patch applied in a container of this image must come past the stamp's margin, or its new
    # test files read as the build's and the reset keeps them (seen: a reused candidate's after#1
    # kept a conftest.py the fix added, within 2 s of the commit)
    if sb.files_have_times:
        wait_past_stamp(stamped)
    return ref, new_id


def inherited_labels_blanked(sb, factory) -> dict[str, str]:
    """Labels an image committed from `sb` would inherit from its parent image and must not carry,
    each set to "" (a commit can blank a label, not drop it): the dependency tier's
    (`TIER_LABEL_PREFIX`: the repository and instance that built a shared dependency image,
    its key and commands). An instance image is its own: repository B's published image, built on
    the dependency image repository A made, named A (`swemint.deps.repo`, `swemint.deps.built_by`),
    and a lookup of dependency images by label found B's instance image. A parent the image store
    does not know gets every label of the tier blanked."""
    parent = getattr(getattr(sb, "spec", None), "image", None)
    info = store_of(factory).get(parent) if parent else None
    keys = [k for k in info.labels if k.startswith(TIER_LABEL_PREFIX)] if info is not None else list(TIER_LABELS)
    return {k: "" for k in keys}


def image_label(factory, ref: str, key: str) -> str | None:
    """Label `key` of image `ref` in the factory's image store, None when absent."""
    img = store_of(factory).get(ref)
    return img.labels.get(key) if img is not None else None


def remove_image(factory, ref: str) -> None:
    """Remove an image by tag or id; never raises (an image in use stays)."""
    store_of(factory).remove(ref, force=not ref.startswith("sha256:"))


def image_id(factory, tag: str) -> str | None:
    """The id of image `tag` in the factory's image store, None when absent."""
    img = store_of(factory).get(tag)
    return img.id if img is not None else None


def image_size(factory, tag: str) -> int:
    """Size in bytes of image `tag`, 0 when absent (or unknown)."""
    img = store_of(factory).get(tag)
    return img.size if img is not None else 0
