"""`swemint rebuild --verify`: build a row's Dockerfile from scratch and check its labels there.

For one verified row: its build context (`agents.dockerfile.build_context`: the tree of
`base_commit` from the mirror, the grading tools, this host's CA bundle) and its Dockerfile are
built with `docker build --no-cache --pull=false` on swemint's guarded build network
(`envpool.netguard`), no swemint image involved except a *stand-in*: on a host without a registry
the Dockerfile's `FROM debian:<suite>-slim` is our debootstrapped base tagged under that official
name (recorded in the certificate). Then, in the rebuilt image with no network, the row's tests run
twice through `envpool.evaluation.evaluate_patch`: with the test_patch alone (every FAIL_TO_PASS
must fail, every PASS_TO_PASS pass or skip) and with the gold patch (everything must succeed).
Both the rebuilt and the pooled image are checked for history: the commits reachable in
/testbed, and whether any blob the gold patch creates is in the image's git objects.

The certificate lands in `WORKDIR/rebuild/<id>.json` (the dataset's `rebuild` column).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from envpool.evaluation import EvalReport
from envpool.quoting import image_tag, shell_words
from pipeline.export import CERTIFICATES, file_stem

_FROM = re.compile(r"^FROM\s+(\S+)", re.M)


class History(BaseModel):
    """What /testbed's git holds in an image: `commits` (subject lines of every reachable
    commit), `fix_blobs` ("<blob> <path>" of files as the gold patch or the test_patch leave
    them that are already among its objects: must be empty), `ok` (at most the base commit and
    our setup-edits commit, no such blob)."""

    model_config = ConfigDict(extra="forbid")
    image: str
    commits: list[str] = Field(default_factory=list)
    fix_blobs: list[str] = Field(default_factory=list)
    ok: bool = False
    error: str | None = None


class Certificate(BaseModel):
    """The outcome of `rebuild --verify` for one row (times in seconds)."""

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    at: str
    dockerfile_sha256: str
    from_image: str = ""
    stand_in: str | None = None
    image: str = ""
    image_id: str = ""
    built: bool = False
    build_seconds: float = 0.0
    before: dict = Field(default_factory=dict)
    after: dict = Field(default_factory=dict)
    reproduced: bool = False
    """Every FAIL_TO_PASS fails before and passes after; every PASS_TO_PASS passes (or is
    skipped) on both sides -- the row's labels, reproduced in the rebuilt image."""
    mismatches: list[str] = Field(default_factory=list)
    history: list[History] = Field(default_factory=list)
    error: str | None = None


def check_history(factory, image: str, patch: str, test_patch: str = "", run_id: str = "rebuild") -> History:
    """Inspect /testbed's git in `image` (a throwaway sandbox with no network): the subjects of
    every reachable commit, and whether the image's object store holds any blob the fix creates.
    Those blob ids are computed in the sandbox: the gold patch and the test_patch applied to the
    working tree (`envpool.patches.apply_patch`), then `git hash-object` (which writes nothing) of
    every file they leave; an id counts when the object store has it (`git cat-file -e`) but no
    reachable commit's tree does (a fixture the test_patch adds may equal a file of base_commit).
    SWE-bench patches carry no `index` lines, so the ids cannot be read from the patch itself."""
    from envpool.patches import apply_patch, files_in_patch
    from envpool.sandbox import SandboxSpec

    h = History(image=image)
    try:
        with factory.sandbox(SandboxSpec(image=image, run_id=run_id, network="none")) as sb:
            log = sb.exec("cd /testbed && git log --all --format=%s", timeout=120, log_label="history")
            h.commits = [c for c in log.output.strip().splitlines() if c.strip()]
            files = []
            for name, text in (("patch", patch), ("test_patch", test_patch)):
                if text.strip():
                    apply_patch(sb, text, label=f"history:{name}")
                    files += [f for f in files_in_patch(text) if f not in files]
            quoted = shell_words(files)
            # a blob counts when the object store has it outside the trees of the reachable
            # commits (a file the fix leaves identical to some file of base_commit is no leak)
            probe = (f"cd /testbed && git rev-list --all --objects | cut -d' ' -f1 | sort -u > /tmp/swemint-reach; "
                     f"for f in {quoted}; do [ -f \"$f\" ] || continue; b=$(git hash-object -- \"$f\"); "
                     "git cat-file -e \"$b\" 2>/dev/null && ! grep -qx \"$b\" /tmp/swemint-reach && "
                     "echo \"$b $f\"; done; true")
            found = sb.exec(probe, timeout=300, log_label="history-blobs").output if files else ""
    except Exception as e:  # noqa: BLE001 - an engine or patch problem is reported, not raised
        h.error = f"{type(e).__name__}: {getattr(e, 'message', e)}"
        return h
    h.fix_blobs = [line.strip() for line in found.splitlines() if line.strip()]
    ours = all(c.startswith("base ") or c == "swemint: environment setup edits" for c in h.commits)
    h.ok = bool(h.commits) and len(h.commits) <= 2 and ours and not h.fix_blobs
    return h


def ensure_from_image(client, dockerfile: str) -> tuple[str, str | None]:
    """(FROM image, the stand-in tagged under its name or None). A missing `debian:<suite>-slim`
    is our bootstrapped base (`envpool.images.ensure_debian_base`) tagged under that name; any
    other missing image is pulled. Raises InfraError when neither works."""
    from envpool import images
    from envpool.errors import InfraError

    m = _FROM.search(dockerfile)
    if not m:
        raise InfraError("the Dockerfile has no FROM line")
    ref = m.group(1)
    if images.image_exists(client, ref):
        return ref, _stand_in_of(client, ref)
    d = re.fullmatch(r"debian:([a-z]+)-slim", ref)
    if d:
        base = images.ensure_debian_base(d.group(1), images.ImageConfig(route="debootstrap"), client)
        repo, tag = ref.split(":", 1)
        client.images.get(base).tag(repo, tag)
        return ref, base
    if images.try_pull(client, ref):
        return ref, None
    raise InfraError(f"{ref} is neither present nor pullable")


def _stand_in_of(client, ref: str) -> str | None:
    try:
        img = client.images.get(ref)
        tags = [t for t in img.tags if t.startswith("swemint/debian:")]
        return tags[0] if tags else None
    except Exception:
        return None


def build_image(client, dockerfile: str, context: dict[str, bytes], tag: str, labels: dict[str, str],
                network: str | None, log_path: Path) -> str:
    """`docker build --no-cache` of `dockerfile` with `context`; returns the image id. The build
    log is appended to `log_path`; raises EnvBuildError with its tail when the build fails."""
    import io

    from agents.dockerfile import tar_of
    from envpool.errors import EnvBuildError

    blob = tar_of({**context, "Dockerfile": dockerfile.encode()})
    lines: list[str] = []
    image_id = None
    with log_path.open("a", encoding="utf-8") as log:
        for chunk in client.api.build(fileobj=io.BytesIO(blob), custom_context=True, tag=tag, rm=True,
                                      forcerm=True, nocache=True, pull=False, labels=labels, decode=True,
                                      network_mode=network, timeout=7200):
            text = chunk.get("stream") or chunk.get("status") or ""
            if text:
                log.write(text)
                lines.append(text)
            if chunk.get("error"):
                log.write(str(chunk["error"]) + "\n")
                raise EnvBuildError(f"docker build failed: {chunk['error']} :: {''.join(lines)[-1500:]}")
            if "aux" in chunk and isinstance(chunk["aux"], dict) and chunk["aux"].get("ID"):
                image_id = chunk["aux"]["ID"]
    return image_id or client.images.get(tag).id


def _side(rep: EvalReport) -> dict:
    return {"error": rep.error, "seconds": rep.seconds, "source": rep.source,
            "tests_status": {k: v.model_dump() for k, v in rep.tests_status.items()}}


class _Done(Exception):
    """Internal: stop after the build (no --verify)."""


class RebuildOptions(BaseModel):
    """How `rebuild_row` runs: `run_id` (the `swemint.run` label of its image and sandboxes),
    `network` (the build network's name; None: the engine's default), `timeout` (seconds per
    grading run), `keep_image` (False: the rebuilt image is removed after the checks), `verify`
    (False: only the build and the history check, no grading)."""

    model_config = ConfigDict(extra="forbid")
    run_id: str = "rebuild"
    network: str | None = None
    timeout: float = 1800
    keep_image: bool = True
    verify: bool = True


def rebuild_row(row: dict, tree_tar: bytes, workdir: Path, *, client=None, factory=None,
                options: RebuildOptions | None = None, ca_bundle: bytes | None = None,
                earlier: dict[str, bytes] | None = None) -> Certificate:
    """Rebuild one exported row (a dict as `pipeline.export.make_row` gives) from scratch and verify
    its labels there (`options.verify`; else only the build and the history check); writes and
    returns the certificate. `ca_bundle`: the host's CA certificates for the build (PEM bytes);
    `earlier`: commit -> uncompressed tar of each earlier tree a reused row's Dockerfile names
    (`agents.dockerfile.earlier_trees`). Never raises for the row's problems."""
    opts = options or RebuildOptions()
    run_id, network, timeout, keep_image, verify = opts.run_id, opts.network, opts.timeout, opts.keep_image, opts.verify
    from agents.dockerfile import build_context
    from envpool.errors import SwemintError
    from pipeline.evaluate import grade

    iid = row["instance_id"]
    dockerfile = row["dockerfile"] or ""
    cert = Certificate(instance_id=iid, at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       dockerfile_sha256=hashlib.sha256(dockerfile.encode()).hexdigest())
    out = Path(workdir) / CERTIFICATES
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / f"{file_stem(iid)}.log"
    log_path.write_text(f"# swemint rebuild {iid} {cert.at}\n", encoding="utf-8")
    tag = f"swemint/rebuild:{image_tag(iid, limit=100)}-{cert.dockerfile_sha256[:12]}"
    try:
        cert.from_image, cert.stand_in = ensure_from_image(client, dockerfile)
        t0 = time.monotonic()
        cert.image_id = build_image(client, dockerfile, build_context(tree_tar, ca_bundle, earlier), tag,
                                    {"swemint.run": run_id, "swemint.instance": iid, "swemint.rebuild": "1"},
                                    network, log_path)
        cert.build_seconds = round(time.monotonic() - t0, 1)
        cert.image, cert.built = tag, True
        rebuilt = {**row, "image_local": tag, "image": tag}
        cert.history = [check_history(factory, tag, row["patch"], row["test_patch"], run_id)]
        if row.get("image_local"):
            cert.history.append(check_history(factory, row["image_local"], row["patch"], row["test_patch"], run_id))
        if not verify:
            raise _Done
        before = grade(rebuilt, "", factory=factory, model="rebuild-before", timeout=timeout, run_id=run_id,
                       log_path=log_path)
        after = grade(rebuilt, row["patch"], factory=factory, model="rebuild-after", timeout=timeout, run_id=run_id,
                      log_path=log_path)
        cert.before, cert.after = _side(before), _side(after)
        cert.mismatches = mismatches(before, after)
        cert.reproduced = not cert.mismatches
    except _Done:
        pass
    except SwemintError as e:
        cert.error = f"{type(e).__name__}: {e.message}"
    except Exception as e:  # noqa: BLE001 - docker SDK errors: the row's certificate says so
        cert.error = f"{type(e).__name__}: {e}"
    finally:
        if not keep_image and cert.built:
            try:
                client.images.remove(tag, force=True)
            except Exception:  # noqa: BLE001
                pass
    (out / f"{file_stem(iid)}.json").write_text(cert.model_dump_json(indent=1), encoding="utf-8")
    return cert


def mismatches(before: EvalReport, after: EvalReport) -> list[str]:
    """Why the labels did not reproduce (empty: they did)."""
    out = []
    for name, rep in (("before", before), ("after", after)):
        if rep.error:
            out.append(f"{name}: {rep.error}")
    if before.tests_status:
        ok = before.tests_status["FAIL_TO_PASS"].success
        out += [f"FAIL_TO_PASS passes before: {t}" for t in ok]
        out += [f"PASS_TO_PASS fails before: {t}" for t in before.tests_status["PASS_TO_PASS"].failure]
    if after.tests_status:
        out += [f"FAIL_TO_PASS fails after: {t}" for t in after.tests_status["FAIL_TO_PASS"].failure]
        out += [f"PASS_TO_PASS fails after: {t}" for t in after.tests_status["PASS_TO_PASS"].failure]
    return out


def summary(certs: list[Certificate]) -> dict:
    """Counts over certificates: built, reproduced, history ok (every image checked)."""
    return {"rows": len(certs), "built": sum(c.built for c in certs), "reproduced": sum(c.reproduced for c in certs),
            "history_ok": sum(bool(c.history) and all(h.ok for h in c.history) for c in certs),
            "errors": {c.instance_id: c.error for c in certs if c.error},
            "mismatches": {c.instance_id: c.mismatches[:5] for c in certs if c.mismatches}}


def write_summary(workdir: Path, certs: list[Certificate]) -> Path:
    """WORKDIR/rebuild/summary.json."""
    p = Path(workdir) / CERTIFICATES / "summary.json"
    p.write_text(json.dumps(summary(certs), indent=1), encoding="utf-8")
    return p
