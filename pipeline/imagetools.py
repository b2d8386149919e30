"""Bring pooled images up to date with the grading tools the rows' eval scripts run, and check them.

Images minted before the status tool existed (or with an older one) cannot be graded by
SWE-bench's harness through our eval scripts. `refresh_tools` starts a sandbox from such an image
on the guarded build network, writes the current grading tools (`envpool.evalscript.grading_tools`)
and the image stamp beside /testbed (`STAMP_OUTSIDE`),
gives it a `python3` with its standard library where it lacks one (`envpool.evalscript.ensure_python3`:
`ENSURE_PYTHON3`, again while apt fails on the Debian mirror) and commits it
under the same tag, with the image's own labels; the row's `image_id` and the pool follow. Only
images whose `swemint.run` label is the work directory's run are touched.

`tool_states` / `tool_notes` tell, at export, which verified rows' images carry the status tool
their eval scripts call: by the image label `envpool.evalscript.TOOL_LABEL` (images committed
since it exists), else by a one-container probe of an older image (cached per image id).
"""

from __future__ import annotations

import json
from pathlib import Path

from envpool.aptmirror import AptMirrorError, MirrorPolicy, mirror_failure
from envpool.evalscript import ensure_python3, grading_tools, tool_labels
from envpool.sandbox import SandboxSpec
from envpool.testpaths import IMAGE_STAMP, STAMP


STAMP_OUTSIDE = (f"[ -e /testbed/{STAMP} ] && [ ! -e {IMAGE_STAMP} ] && cp -p /testbed/{STAMP} {IMAGE_STAMP}; true")
"""An image minted before the stamp beside /testbed existed gets it, with the time of its stamp in
.git (as the image holds it, before any patch): the reset then reads that one, which no patch can
rewrite (`envpool.testpaths.outside_stamp`)."""


def refresh_tools(factory, image: str, *, run_id: str, instance_id: str, target: str | None = None,
                  mirror: MirrorPolicy | None = None) -> str:
    """Rewrite the grading tools into `image` (same tag), or into a copy tagged `target` that
    belongs to `run_id` (the source then may be another run's: it is only read); python3 is
    installed when the image has none, tried again under `mirror` (the mint's `repair.mirror_*`;
    None: `MirrorRetry()`'s defaults) while apt fails on the Debian mirror. Returns the new
    image id. Raises ValueError when `image` (without `target`) belongs to another run,
    `envpool.aptmirror.AptMirrorError` (an InfraError) when apt still fails on the mirror after
    those attempts, EnvBuildError when python3 cannot be installed otherwise, InfraError when
    the engine fails."""
    from envpool.errors import EnvBuildError

    client = factory.client
    img = client.images.get(image)
    labels = dict(img.labels or {})
    if target is None and labels.get("swemint.run") != run_id:
        raise ValueError(f"{image} belongs to run {labels.get('swemint.run')!r}, not {run_id!r}")
    labels["swemint.run"] = run_id
    labels.update(tool_labels())
    old_id = img.id
    with factory.sandbox(SandboxSpec(image=image, run_id=run_id, instance_id=instance_id, network="bridge")) as sb:
        for path, data in grading_tools().items():
            sb.put_file(path, data, mode=0o755 if path.endswith(".pyz") else 0o644)
        sb.exec(STAMP_OUTSIDE, timeout=60, log_label="grading-tools:stamp")
        r = ensure_python3(sb, 900, mirror)
        if not r.ok and (line := mirror_failure(r.output)):
            raise AptMirrorError(f"no python3 for the status tool: apt could not use the Debian mirror "
                                 f"(infrastructure): {line}", line=line, instance_id=instance_id)
        if not r.ok:
            raise EnvBuildError(f"no python3 for the status tool: {r.output[-800:]}", instance_id=instance_id)
        repo, tag = (target or image).rsplit(":", 1)
        new_id = sb.commit(repo, tag, labels=labels)
    if new_id != old_id and target is None:
        try:
            client.images.remove(old_id)
        except Exception:  # noqa: BLE001 - still used by a container, or by a child image
            pass
    return new_id


TOOL_STATES = ("labelled", "probed", "missing", "absent")
"""`tool_states` values: the image records its status tool (`labelled`); has no label but a probe
found a tool with `--run` (`probed`: minted before the label existed); has no such tool
(`missing`: minted before the tool's `--run` mode; its eval script prints `>>>>> Tests Errored`);
this engine does not have the image (`absent`: not checked)."""
PROBE = ("P=$(command -v python3 || command -v python) && \"$P\" -I -S " + "{tool} --help 2>/dev/null "
         "| grep -q -- '--run'")


def _probe(client, image: str) -> bool:
    """Whether `image` carries a status tool with the `--run` mode: one short container, no
    network, labelled `swemint.run=tool-check`, removed after."""
    from envpool.testrun.statuslines import TOOL_PATH

    try:
        client.containers.run(image, ["bash", "-c", PROBE.format(tool=TOOL_PATH)], network_mode="none",
                              remove=True, labels={"swemint.run": "tool-check"}, entrypoint=[])
        return True
    except Exception:  # noqa: BLE001 - a non-zero exit (no tool, an old one, no python3) or no bash
        return False


def tool_states(rows: list[dict], cache_path: Path | None = None, client=None) -> dict[str, str]:
    """instance id -> `TOOL_STATES` value for verified `rows` (their `image_local` / `image_id`).
    Labels are read from this engine; an unlabelled image is probed once and the answer cached
    per image id in `cache_path` (JSON). No engine: every row `absent`."""
    from envpool.evalscript import TOOL_LABEL

    cache: dict[str, bool] = {}
    if cache_path is not None and cache_path.is_file():
        try:
            cache = json.loads(cache_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cache = {}
    if client is None:
        try:
            from envpool.docker_sandbox import docker_client

            client = docker_client()
        except Exception:  # noqa: BLE001 - no engine here: nothing can be checked
            return {r["instance_id"]: "absent" for r in rows}
    try:  # one call for every labelled image of the engine; only the others are looked at one by one
        labelled = {i.id for i in client.images.list(filters={"label": TOOL_LABEL})}
    except Exception:  # noqa: BLE001 - an engine that cannot list: look at each
        labelled = set()
    out = {}
    for r in rows:
        if r.get("image_id") and r["image_id"] in labelled:
            out[r["instance_id"]] = "labelled"
            continue
        ref = r.get("image_local") or r.get("image")
        try:
            img = client.images.get(ref)
        except Exception:  # noqa: BLE001 - not on this engine
            out[r["instance_id"]] = "absent"
            continue
        if (img.labels or {}).get(TOOL_LABEL):
            out[r["instance_id"]] = "labelled"
            continue
        if img.id not in cache:
            cache[img.id] = _probe(client, ref)
        out[r["instance_id"]] = "probed" if cache[img.id] else "missing"
    if cache_path is not None and cache:
        try:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            cache_path.write_text(json.dumps(cache, sort_keys=True), encoding="utf-8")
        except OSError:
            pass
    return out


def tool_notes(rows: list[dict], cache_path: Path | None = None, client=None) -> list[str]:
    """Export notes on the status tool of verified `rows`' images (`tool_states`): which rows'
    images lack it (their eval scripts cannot grade: refresh the images or embed the tool) and
    which could not be checked on this engine."""
    if client is None:
        try:
            from envpool.docker_sandbox import docker_client

            client = docker_client()
        except Exception:  # noqa: BLE001 - no engine here: every row is absent (tool_states)
            client = None
    states = tool_states(rows, cache_path, client)
    missing = sorted(i for i, s in states.items() if s == "missing")
    absent = sorted(i for i, s in states.items() if s == "absent")
    notes = []
    if missing:
        notes.append(f"{len(missing)} verified rows' images have no status tool with --run (minted before it "
                     f"existed: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}); their eval scripts "
                     "print `>>>>> Tests Errored`: run `swemint pool refresh-tools -w WORKDIR`, or export with "
                     "--embed-tool (the script then carries the tool, ~110 KB a row)")
    if absent:
        notes.append(f"{len(absent)} verified rows' images are not on this engine ({_engine_name(client)}): their "
                     f"status tool was not checked ({', '.join(absent[:5])}{' ...' if len(absent) > 5 else ''})")
    return notes


def _engine_name(client) -> str:
    """Which engine `client` talks to, for a message: its node name (`engine_node`) and address
    (`DOCKER_HOST`, else the default socket); "no engine reachable" without one."""
    import os

    if client is None:
        return "no engine reachable"
    from envpool.imagestore import engine_node

    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    name = engine_node(client)
    return f"{name} at {where}" if name else where
