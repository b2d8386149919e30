"""Score a minting run against gold lists, SWE-bench style, for a closing note or a report.

    .venv/bin/python scripts/score_core.py --instances ../shared/data/swebench_dev.jsonl \
        --workdir work/core --ids-file ids.txt [--markdown]

Per instance: outcome, gold FAIL_TO_PASS recall (every gold id in ours; gold ids cut at the
first space by an old SWE-bench parser match as prefixes), precision (every id of ours in
gold), PASS_TO_PASS agreement (share of gold ids found in ours), wall time (seconds), and the
gold FAIL_TO_PASS ids that are *network-bound*: they failed after the patch with a connection
or name-resolution error, which a test run without network (`network_mode="none"`) cannot pass.
Instances with network-bound gold ids are reported apart and left out of the target's
denominator. Times: median and p90 (nearest rank) of `timings["total"]`.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from pathlib import Path

from envpool.grading import score_against_gold
from pipeline.instances import load_and_select
from pipeline.store import ResultStore

NETWORK_ERRORS = re.compile(r"ConnectionError|NewConnectionError|Max retries exceeded|Name or service not known|"
                            r"Temporary failure in name resolution|nodename nor servname|getaddrinfo failed|"
                            r"Network is unreachable|ProxyError|gaierror|Connection aborted|Connection refused")


def network_bound(log_path: str, gold_f2p: list[str]) -> list[str]:
    """Gold FAIL_TO_PASS ids whose last after-run short summary line is a network failure."""
    p = Path(log_path)
    if not log_path or not p.is_file():
        return []
    text = p.read_text(errors="replace")
    last_after = text.rfind("[after#")
    section = text[last_after:] if last_after >= 0 else text
    failed = {}
    for m in re.finditer(r"^(?:FAILED|ERROR) (\S+(?:\[[^\]]*\])?) - (.*)$", section, flags=re.M):
        failed[m.group(1)] = m.group(2)
    return [g for g in gold_f2p if g in failed and NETWORK_ERRORS.search(failed[g])]


def p_nearest(values: list[float], q: float) -> float | None:
    """q-quantile by nearest rank (None for no values)."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", required=True, type=Path)
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--ids-file", type=Path)
    ap.add_argument("--json", type=Path, help="also write the rows and totals here")
    args = ap.parse_args()
    gold = {i.instance_id: i for i in load_and_select(args.instances, ids_file=args.ids_file).instances}
    store = ResultStore(args.workdir, read_only=True)
    rows = []
    for iid, inst in sorted(gold.items()):
        res = store.read_result(iid)
        if res is None:
            rows.append({"instance_id": iid, "outcome": "missing"})
            continue
        s = score_against_gold(res.FAIL_TO_PASS, res.PASS_TO_PASS, inst.FAIL_TO_PASS, inst.PASS_TO_PASS)
        net = network_bound(res.log_path, inst.FAIL_TO_PASS)
        rows.append({"instance_id": iid, "outcome": res.outcome, "f2p_recall": s["f2p_recall"],
                     "f2p_precision": s["f2p_precision"], "p2p_agreement": s["p2p_recall"] if inst.PASS_TO_PASS else None,
                     "seconds": res.timings.get("total"), "reused": bool(res.reused_from),
                     "network_bound": net, "ours_f2p": len(res.FAIL_TO_PASS), "gold_f2p": len(inst.FAIL_TO_PASS),
                     "reason": res.reason.splitlines()[0][:120] if res.reason else ""})
    print("| instance | outcome | F2P recall | F2P precision | P2P agreement | s | network-bound gold F2P |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if r["outcome"] == "missing":
            print(f"| {r['instance_id']} | missing | | | | | |")
            continue
        p2p = "-" if r["p2p_agreement"] is None else f"{r['p2p_agreement']:.2f}"
        print(f"| {r['instance_id']} | {r['outcome']} | {r['f2p_recall']:.2f} | {r['f2p_precision']:.2f} | {p2p} | "
              f"{r['seconds']:.0f} | {len(r['network_bound'])}/{r['gold_f2p']} |")
    scored = [r for r in rows if r["outcome"] != "missing" and not r["network_bound"]]
    verified = [r for r in scored if r["outcome"] == "verified"]
    full = [r for r in verified if r["f2p_recall"] == 1.0]
    precise = [r for r in verified if r["f2p_precision"] == 1.0]
    p2p = [r["p2p_agreement"] for r in verified if r["p2p_agreement"] is not None]
    secs = [r["seconds"] for r in rows if r.get("seconds") is not None]
    totals = {"instances": len(rows), "network_bound_instances": [r["instance_id"] for r in rows if r.get("network_bound")],
              "denominator": len(scored), "verified": len(verified), "verified_recall_1": len(full),
              "verified_precision_1": len(precise), "p2p_agreement_mean": statistics.mean(p2p) if p2p else None,
              "p2p_agreement_min": min(p2p) if p2p else None,
              "median_s": statistics.median(secs) if secs else None, "p90_s": p_nearest(secs, 0.9)}
    print()
    print(json.dumps(totals, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "totals": totals}, indent=1))


if __name__ == "__main__":
    main()
