"""Score minted FAIL_TO_PASS / PASS_TO_PASS lists against the gold lists of the input rows.

Uses `envpool.grading.score_against_gold(ours_f2p, ours_p2p, gold_f2p, gold_p2p) -> dict` when
that module exists; else `score_lists` below, with the same matching rule: a gold id matches
one of ours when they are equal, or when the gold id was cut at the first space by an old
SWE-bench parser and ours cut at its first space equals it (the harness prefix-matches such ids).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from agents.models import Instance, InstanceResult


def id_matches(gold: str, ours: str) -> bool:
    """True when `ours` is `gold`, or `ours` cut at its first space is `gold` (truncated gold id)."""
    return gold == ours or (" " in ours and ours.split(" ", 1)[0] == gold)


def _matched(gold: Iterable[str], ours: Iterable[str]) -> tuple[int, int]:
    """(gold ids found in ours, our ids found in gold)."""
    gold, ours = list(gold), list(ours)
    exact = set(ours)
    cut = {o.split(" ", 1)[0] for o in ours if " " in o}
    g_hit = sum(1 for g in gold if g in exact or g in cut)
    gset = set(gold)
    o_hit = sum(1 for o in ours if o in gset or (" " in o and o.split(" ", 1)[0] in gset))
    return g_hit, o_hit


def score_lists(ours_f2p: list[str], ours_p2p: list[str], gold_f2p: list[str], gold_p2p: list[str]) -> dict:
    """Per-instance agreement. Keys: `f2p_recall` (share of gold F2P in ours), `f2p_precision`
    (share of ours in gold F2P), `f2p_all_found` / `f2p_no_extra` (those equal 1.0), `f2p_exact`
    (both), `p2p_agreement` (share of gold P2P in our P2P). Empty gold -> 1.0; empty ours with
    non-empty gold -> precision 0.0."""
    g_hit, o_hit = _matched(gold_f2p, ours_f2p)
    recall = g_hit / len(gold_f2p) if gold_f2p else 1.0
    precision = o_hit / len(ours_f2p) if ours_f2p else (1.0 if not gold_f2p else 0.0)
    p2p = _matched(gold_p2p, ours_p2p)[0] / len(gold_p2p) if gold_p2p else 1.0
    return {"f2p_recall": recall, "f2p_precision": precision, "f2p_all_found": recall == 1.0,
            "f2p_no_extra": precision == 1.0, "f2p_exact": recall == 1.0 and precision == 1.0,
            "p2p_agreement": p2p}


def scorer() -> Callable[[list[str], list[str], list[str], list[str]], dict]:
    """`envpool.grading.score_against_gold` when it exists, else `score_lists`."""
    try:
        from envpool.grading import score_against_gold
    except ImportError:
        return score_lists
    return score_against_gold


def bench(results: Iterable[InstanceResult], instances: dict[str, Instance]) -> dict:
    """Score every result whose instance has gold lists. Returns {"instances": [per-instance
    dicts with instance_id, outcome, verified and the scorer's keys], "aggregate": {n, verified,
    verified_share and the mean of every numeric / boolean score key}}."""
    score = scorer()
    rows = []
    for res in results:
        inst = instances.get(res.instance_id)
        if inst is None:
            continue
        s = score(list(res.FAIL_TO_PASS), list(res.PASS_TO_PASS), list(inst.FAIL_TO_PASS), list(inst.PASS_TO_PASS))
        rows.append({"instance_id": res.instance_id, "outcome": res.outcome,
                     "verified": res.outcome == "verified", **s})
    agg: dict = {"n": len(rows), "verified": sum(r["verified"] for r in rows)}
    agg["verified_share"] = agg["verified"] / len(rows) if rows else None
    keys = [k for k in (rows[0] if rows else {}) if k not in ("instance_id", "outcome", "verified")]
    for k in keys:
        vals = [float(r[k]) for r in rows if isinstance(r.get(k), (int, float, bool))]
        if vals:
            agg[f"mean_{k}"] = sum(vals) / len(vals)
    return {"instances": rows, "aggregate": agg}


def write_bench(report: dict, path: Path) -> Path:
    """Write `report` as indented JSON to `path` (parents created); returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return path
