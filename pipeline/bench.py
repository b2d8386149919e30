"""Score minted FAIL_TO_PASS / PASS_TO_PASS lists against the gold lists of the input rows.

Python rows are scored by `envpool.grading.score_against_gold` (exact ids, or a gold id cut at
the first space by an old SWE-bench parser matched as a prefix); rows of other languages by
`envpool.testrun.polyglot.gold.score_against_gold_ids` (SWE-bench Multilingual's gold ids
follow each repository's harness: the separator-bounded matcher `gold_match`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from agents.models import Instance, InstanceResult
from envpool.grading import score_against_gold
from envpool.testrun.polyglot.gold import score_against_gold_ids
from pipeline.instances import instance_language

SCORE_COLUMNS = ("f2p_recall", "f2p_precision", "p2p_agreement")
"""Shown in the bench table; `p2p_agreement` = share of gold P2P that we also list as P2P."""


def score_result(res: InstanceResult, inst: Instance) -> dict:
    """Our lists of `res` against the gold lists of its input row `inst`: the dict of
    `score_against_gold` (Python rows, `instance_language`) or `score_against_gold_ids` (every
    other language): `f2p_recall`, `f2p_precision`, `p2p_recall`, ... in [0, 1], 1.0 over an
    empty list."""
    score = score_against_gold if instance_language(inst) == "python" else score_against_gold_ids
    return score(res.FAIL_TO_PASS, res.PASS_TO_PASS, inst.FAIL_TO_PASS, inst.PASS_TO_PASS)


def bench(results: Iterable[InstanceResult], instances: dict[str, Instance]) -> dict:
    """Score every result whose input row is known.

    Returns {"instances": [{instance_id, outcome, verified, **score_against_gold(...),
    p2p_agreement}], "aggregate": {n, verified, verified_share, mean_<key> for every numeric or
    boolean score key}}. Ratios are in [0, 1]; a ratio over an empty list is 1.0.
    """
    rows = []
    for res in results:
        inst = instances.get(res.instance_id)
        if inst is None:
            continue
        s = score_result(res, inst)
        rows.append({"instance_id": res.instance_id, "outcome": res.outcome, "verified": res.outcome == "verified",
                     **s, "p2p_agreement": s.get("p2p_recall")})
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
