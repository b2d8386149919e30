"""Bring pooled images up to date with the grading tools the rows' eval scripts run.

Images minted before the status tool existed (or with an older one) cannot be graded by
SWE-bench's harness through our eval scripts. `refresh_tools` starts a sandbox from such an image
on the guarded build network, writes the current grading tools (`envpool.evalscript.grading_tools`),
gives it a `python3` with its standard library where it lacks one (`ENSURE_PYTHON3`) and commits it
under the same tag, with the image's own labels; the row's `image_id` and the pool follow. Only
images whose `swemint.run` label is the work directory's run are touched.
"""

from __future__ import annotations

from envpool.evalscript import ENSURE_PYTHON3, grading_tools
from envpool.sandbox import SandboxSpec


def refresh_tools(factory, image: str, *, run_id: str, instance_id: str, target: str | None = None) -> str:
    """Rewrite the grading tools into `image` (same tag), or into a copy tagged `target` that
    belongs to `run_id` (the source then may be another run's: it is only read). Returns the new
    image id. Raises ValueError when `image` (without `target`) belongs to another run,
    EnvBuildError when python3 cannot be installed, InfraError when the engine fails."""
    from envpool.errors import EnvBuildError

    client = factory.client
    img = client.images.get(image)
    labels = dict(img.labels or {})
    if target is None and labels.get("swemint.run") != run_id:
        raise ValueError(f"{image} belongs to run {labels.get('swemint.run')!r}, not {run_id!r}")
    labels["swemint.run"] = run_id
    old_id = img.id
    with factory.sandbox(SandboxSpec(image=image, run_id=run_id, instance_id=instance_id, network="bridge")) as sb:
        for path, data in grading_tools().items():
            sb.put_file(path, data, mode=0o755 if path.endswith(".pyz") else 0o644)
        r = sb.exec(ENSURE_PYTHON3, timeout=900, log_label="grading-tools")
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
