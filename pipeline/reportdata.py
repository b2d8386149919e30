"""What `swemint report` lets one drill into: one row per instance with links to its files, the
`swemint eval` runs and the `swemint bench` scores of a work directory.

Links are relative to the folder the report is written to (`base`), so the page opens the logs
of the work directory it sits in (or next to); a file that does not exist gets no link.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agents.models import Instance, InstanceResult
from pipeline.store import ResultStore


def link(path: Path | None, base: Path) -> str | None:
    """`path` relative to the folder `base` (POSIX separators) when the file exists, else None."""
    if path is None or not Path(path).is_file():
        return None
    return Path(os.path.relpath(Path(path).resolve(), Path(base).resolve())).as_posix()


def first_line(text: str | None, limit: int = 200) -> str:
    """The first line of `text`, at most `limit` characters ("" for none)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def instance_rows(store: ResultStore, results: list[InstanceResult], instances: dict[str, Instance],
                  base: Path) -> list[dict]:
    """One dict per result, ordered by outcome (verified first, as `OUTCOMES`) then id:
    instance_id, repo, language, outcome, reason (first line), round, rounds, seconds,
    FAIL_TO_PASS / PASS_TO_PASS counts, and `log` / `trajectory` links (None when absent)."""
    from agents.models import OUTCOMES

    order = {o: i for i, o in enumerate(OUTCOMES)}
    rows = []
    for r in sorted(results, key=lambda r: (order.get(r.outcome, 99), r.instance_id)):
        folder = store.dir(r.instance_id)
        inst = instances.get(r.instance_id)
        log = Path(r.log_path) if r.log_path else folder / "run.log"
        traj = Path(r.trajectory_path) if r.trajectory_path else folder / "trajectory.jsonl"
        rows.append({"instance_id": r.instance_id, "repo": r.repo,
                     "language": (r.language or (inst.language if inst else None) or "python").lower(),
                     "outcome": r.outcome, "reason": first_line(r.reason), "round": r.round,
                     "rounds": len(r.rounds), "seconds": r.timings.get("total"),
                     "FAIL_TO_PASS": len(r.FAIL_TO_PASS), "PASS_TO_PASS": len(r.PASS_TO_PASS),
                     "log": link(log, base), "trajectory": link(traj, base)})
    return rows


def _frac(side: dict | None) -> str:
    if not side:
        return "-"
    ok, bad = len(side.get("success") or []), len(side.get("failure") or [])
    return f"{ok}/{ok + bad}"


def eval_runs(workdir: Path, base: Path) -> list[dict]:
    """Every `swemint eval` run of `workdir` (WORKDIR/evaluations/<run_id>/report.json), newest
    first: run_id, counts (resolved, unresolved, errors, empty patches, submitted, unknown ids)
    and one row per graded instance (resolved, F2P / P2P successes of all, seconds, error,
    links to its log and its report)."""
    out = []
    reports = sorted((Path(workdir) / "evaluations").glob("*/report.json"), key=lambda p: p.stat().st_mtime,
                     reverse=True)
    for path in reports:
        try:
            rep = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        rows = []
        for iid, r in sorted((rep.get("instances") or {}).items()):
            model = r.get("model_name_or_path") or "model"
            from pipeline.export import file_stem

            stem = path.parent / file_stem(model) / file_stem(iid)
            ts = r.get("tests_status") or {}
            rows.append({"instance_id": iid, "resolved": bool(r.get("resolved")), "error": first_line(r.get("error")),
                         "FAIL_TO_PASS": _frac(ts.get("FAIL_TO_PASS")), "PASS_TO_PASS": _frac(ts.get("PASS_TO_PASS")),
                         "seconds": r.get("seconds"), "log": link(stem.with_suffix(".log"), base),
                         "report": link(stem.with_suffix(".json"), base)})
        out.append({"run_id": path.parent.name,
                    "counts": {k: rep.get(k, 0) for k in ("resolved_instances", "unresolved_instances",
                                                          "error_instances", "empty_patch_instances",
                                                          "submitted_instances")},
                    "unknown_ids": len(rep.get("unknown_ids") or []), "instances": rows})
    return out


def bench_scores(workdir: Path) -> dict | None:
    """WORKDIR/bench.json (`swemint bench`): {"aggregate": ..., "instances": [...]}, or None."""
    try:
        data = json.loads((Path(workdir) / "bench.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "instances" in data else None
