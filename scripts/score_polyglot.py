"""Score polyglot minting runs against SWE-bench Multilingual gold lists, per language.

    .venv/bin/python scripts/score_polyglot.py --instances ../shared/data/swebench_dev.jsonl \
        --workdir work/poly [--workdir work/poly2 ...] --ids-file ids.txt [--json out.json]

Gold ids follow each repository's harness (a Java class where we see methods, a test script for
jq, Go names without the package), so ids are compared with one documented matcher,
`envpool.testrun.polyglot.gold.gold_match`: a match when the ids are equal or one contains the
other bounded by separators (`.` `/` `::` `#` `>` space, or the ends of the string). Per
instance: outcome, FAIL_TO_PASS recall (gold ids matched by ours / gold ids), precision (our ids
matching a gold id / our ids), exact-form agreement (gold ids we produce verbatim), PASS_TO_PASS
agreement (gold P2P ids matched by our P2P), wall time (seconds), and the reason of any other
outcome. Several work directories may be given: an instance's row is taken from the first one
that has it. Totals per language and for the target group (JavaScript/TypeScript, Go, Rust,
Java): verified, verified with precision 1.0, recall 1.0, median seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from envpool.testrun.polyglot.gold import score_against_gold_ids
from pipeline.instances import load_and_select
from pipeline.store import ResultStore

TARGET = ("javascript", "typescript", "go", "rust", "java")


def score_row(ours_f2p: list[str], ours_p2p: list[str], gold_f2p: list[str], gold_p2p: list[str]) -> dict:
    """Recall, precision, exact-form agreement and P2P agreement of our lists against gold's
    (floats in [0, 1]; precision is 0.0 for an empty list of ours, P2P None without gold P2P)."""
    s = score_against_gold_ids(ours_f2p, ours_p2p, gold_f2p, gold_p2p)
    return {"f2p_recall": s["f2p_recall"], "f2p_precision": s["f2p_precision"] if ours_f2p else 0.0,
            "exact_form": s["exact_form"], "p2p_agreement": s["p2p_recall"] if gold_p2p else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", required=True, type=Path)
    ap.add_argument("--workdir", required=True, type=Path, action="append")
    ap.add_argument("--ids-file", type=Path)
    ap.add_argument("--json", type=Path, help="also write the rows and totals here")
    args = ap.parse_args()
    gold = {i.instance_id: i for i in load_and_select(args.instances, ids_file=args.ids_file).instances}
    stores = [ResultStore(w, read_only=True) for w in args.workdir]
    rows = []
    for iid, inst in sorted(gold.items(), key=lambda kv: ((kv[1].language or ""), kv[0])):
        res = next((r for s in stores if (r := s.read_result(iid)) is not None), None)
        row = {"instance_id": iid, "language": (inst.language or "python").lower()}
        if res is None:
            rows.append({**row, "outcome": "missing"})
            continue
        row.update(outcome=res.outcome, seconds=res.timings.get("total"), toolchain=res.interpreter,
                   ours_f2p=len(res.FAIL_TO_PASS), gold_f2p=len(inst.FAIL_TO_PASS),
                   reason=(res.reason or "").splitlines()[0][:160] if res.reason else "")
        row.update(score_row(res.FAIL_TO_PASS, res.PASS_TO_PASS, inst.FAIL_TO_PASS, inst.PASS_TO_PASS))
        rows.append(row)
    print("| instance | lang | outcome | F2P recall | F2P precision | exact form | P2P agr. | s | toolchain / reason |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["outcome"] == "missing":
            print(f"| {r['instance_id']} | {r['language']} | missing | | | | | | |")
            continue
        p2p = "-" if r["p2p_agreement"] is None else f"{r['p2p_agreement']:.2f}"
        tail = r["toolchain"] if r["outcome"] == "verified" else r["reason"].replace("|", "/")
        print(f"| {r['instance_id']} | {r['language']} | {r['outcome']} | {r['f2p_recall']:.2f} | "
              f"{r['f2p_precision']:.2f} | {r['exact_form']:.2f} | {p2p} | {r['seconds'] or 0:.0f} | {tail} |")
    by_lang: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_lang[r["language"]].append(r)

    def totals(group: list[dict]) -> dict:
        ran = [r for r in group if r["outcome"] != "missing"]
        ver = [r for r in ran if r["outcome"] == "verified"]
        secs = [r["seconds"] for r in ran if r.get("seconds") is not None]
        return {"instances": len(group), "ran": len(ran), "verified": len(ver),
                "verified_precision_1": sum(r["f2p_precision"] == 1.0 for r in ver),
                "verified_recall_1": sum(r["f2p_recall"] == 1.0 for r in ver),
                "median_s": round(statistics.median(secs), 1) if secs else None}

    out = {lang: totals(g) for lang, g in sorted(by_lang.items())}
    target = [r for r in rows if r["language"] in TARGET]
    out["TARGET (js/ts, go, rust, java)"] = totals(target)
    print()
    print("| language | instances | verified | verified & precision 1.0 | verified & recall 1.0 | median s |")
    print("|---|---|---|---|---|---|")
    for lang, t in out.items():
        print(f"| {lang} | {t['instances']} | {t['verified']} | {t['verified_precision_1']} | "
              f"{t['verified_recall_1']} | {t['median_s']} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "totals": out}, indent=1))


if __name__ == "__main__":
    main()
