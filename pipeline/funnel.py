"""The yield funnel of `swemint run`, per run and cumulatively, written to `WORKDIR/report.json`.

Stages of the funnel: repositories discovered (listed + rejected by discovery) -> PR-like units
seen (pull requests, mined commits) -> rejected per reason / crawl errors -> accepted -> mint
outcomes -> verified; then the cost per verified task: wall seconds, CPU-seconds (the driver
process and its children, Ray workers' stage calls, and the Docker containers of the builds,
`pipeline.cpu`) and LLM tokens (the LLM quality filter and the minting agents).

`run` counts what this run did; `cumulative` is read back from durable state (the crawl state
database and the result store), so it stays right across killed and resumed runs; its costs are
the sums over `WORKDIR/runs.jsonl` (one line per finished run).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agents.models import OUTCOMES, InstanceResult

RUNS = "runs.jsonl"
REPORT = "report.json"


def llm_tokens(res: InstanceResult) -> int:
    """Prompt + completion tokens of one row's `llm_usage` (0 without one)."""
    total = (res.llm_usage or {}).get("total") or {}
    return int(total.get("prompt_tokens", 0)) + int(total.get("completion_tokens", 0))


def _per(value: float | int | None, n: int) -> float | None:
    return round(value / n, 3) if n and value is not None else None


def cost_block(wall_s: float, cpu_s: float, tokens: int, verified: int) -> dict[str, Any]:
    """`{wall_s, cpu_s, tokens, per_verified: {wall_s, cpu_s, tokens}}` (None per verified when 0)."""
    return {"wall_s": round(wall_s, 3), "cpu_s": round(cpu_s, 3), "tokens": tokens,
            "per_verified": {"wall_s": _per(wall_s, verified), "cpu_s": _per(cpu_s, verified),
                             "tokens": _per(tokens, verified)}}


def outcome_counts(results: Iterable[InstanceResult]) -> dict[str, int]:
    """outcome -> count, every outcome listed."""
    c = Counter(r.outcome for r in results)
    return {o: c[o] for o in OUTCOMES}


def funnel(*, repos_listed: int, repos_rejected: int, seen: int, rejected: dict[str, int], errors: int,
           accepted: int, results: list[InstanceResult]) -> dict[str, Any]:
    """One funnel: the counts (see the module docstring); `results` are the mint rows counted."""
    outcomes = outcome_counts(results)
    return {"repositories": {"discovered": repos_listed + repos_rejected, "listed": repos_listed,
                             "rejected": repos_rejected},
            "units": {"seen": seen, "rejected": dict(sorted(rejected.items())),
                      "rejected_total": sum(rejected.values()), "errors": errors, "accepted": accepted},
            "minted": {"outcomes": outcomes, "total": len(results), "verified": outcomes["verified"]}}


def cumulative(state, results: list[InstanceResult], runs: list[dict]) -> dict[str, Any]:
    """The funnel over everything in a WORKDIR: `state` is the open `CrawlState`, `results`
    every stored row, `runs` the lines of `runs.jsonl`."""
    db = state.db
    rejected = dict(db.execute("SELECT reason, count(*) FROM outcomes WHERE status = 'rejected' AND kind <> 'repo' "
                               "GROUP BY reason").fetchall())
    seen, accepted, errors = db.execute(
        "SELECT count(*), count(*) FILTER (WHERE status = 'accepted'), count(*) FILTER (WHERE status = 'error') "
        "FROM outcomes WHERE kind <> 'repo'").fetchone()
    repos_rejected = db.execute("SELECT count(*) FROM outcomes WHERE kind = 'repo' AND status = 'rejected'"
                                ).fetchone()[0]
    listed = db.execute("SELECT count(DISTINCT repo) FROM (SELECT repo FROM outcomes WHERE kind <> 'repo' "
                        "UNION SELECT repo FROM watermarks)").fetchone()[0]
    out = funnel(repos_listed=listed, repos_rejected=repos_rejected, seen=seen, rejected=rejected, errors=errors,
                 accepted=accepted, results=results)
    out["runs"] = len(runs)
    out["cost"] = cost_block(sum(r.get("wall_s", 0.0) for r in runs), sum(r.get("cpu_s", 0.0) for r in runs),
                             sum(int(r.get("tokens", 0)) for r in runs), out["minted"]["verified"])
    return out


def read_runs(workdir: Path) -> list[dict]:
    """The lines of `WORKDIR/runs.jsonl` (torn lines skipped)."""
    path = Path(workdir) / RUNS
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def write_report(workdir: Path, run: dict[str, Any], cumulative_funnel: dict[str, Any]) -> Path:
    """Write `WORKDIR/report.json` = {"run": run, "cumulative": cumulative_funnel}; returns its path."""
    from pipeline.store import atomic_write

    path = Path(workdir) / REPORT
    atomic_write(path, json.dumps({"run": run, "cumulative": cumulative_funnel}, indent=1, default=str) + "\n")
    return path
