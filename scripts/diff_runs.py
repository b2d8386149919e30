"""Compare two minting runs instance by instance: outcomes and FAIL_TO_PASS / PASS_TO_PASS lists,
every difference with what each run said about it (the no-regression check of a redesign).

    .venv/bin/python scripts/diff_runs.py --before /work/bench/core-base/w --after work/core-new \
        --ids-file ../shared/data/dev_core.txt [--markdown] [--json out.json]

Reads the stored rows of both work directories (`pipeline.store.ResultStore`, read only: nothing
is written into either). Per instance of the ids file (all ids of both runs without one): the two
outcomes, the ids only one side has in FAIL_TO_PASS and in PASS_TO_PASS, and -- where anything
differs -- the cause as the rows give it: each side's reason, the after side's rounds (round,
source, attribution, feedback), its anomalies and reuse. Totals: verified before / after, how many
instances changed outcome (gained, lost, other), how many kept the outcome with different lists.
With `--times`, also the time cost of the change: per instance both runs finished, `timings.total`
(seconds, the minter's own clock), then the median and p90 of each side, the after/before ratio
of the medians, and the median of the per-instance ratios (pairs: robust to which instances the
load happened to hit). Run both sides at once on one machine ("in one run") to compare them.
Exit status 0; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.models import InstanceResult  # noqa: E402
from pipeline.store import DONE, RESULT  # noqa: E402


def rows_of(workdir: Path) -> dict:
    """instance id -> InstanceResult of the finished rows stored under `workdir`, read only (no
    quarantine, unlike `ResultStore.results`): fields a newer or older row model does not know
    are dropped, a row that still does not parse is reported on stderr and left out."""
    known = set(InstanceResult.model_fields)
    out = {}
    for d in sorted((Path(workdir) / "instances").glob("*")):
        if not (d / DONE).exists() or not (d / RESULT).exists():
            continue
        try:
            data = json.loads((d / RESULT).read_bytes())
            res = InstanceResult.model_validate({k: v for k, v in data.items() if k in known})
        except (ValueError, OSError) as e:
            print(f"unreadable row {d}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
            continue
        out[res.instance_id] = res
    return out


def _rounds(res) -> str:
    return "; ".join(f"r{r.round} {r.source or '-'} {r.outcome}"
                     + (f" [{r.attribution[:80]}]" if r.attribution else "")
                     + (f" -> {r.feedback[:60]}" if r.feedback else "") for r in getattr(res, "rounds", []) or [])


def compare(before: dict, after: dict, ids: list[str]) -> list[dict]:
    """One dict per id: outcomes, list differences and (when anything differs) the causes."""
    out = []
    for iid in ids:
        a, b = before.get(iid), after.get(iid)
        oa, ob = (a.outcome if a else "missing"), (b.outcome if b else "missing")
        fa, fb = set(a.FAIL_TO_PASS if a else []), set(b.FAIL_TO_PASS if b else [])
        pa, pb = set(a.PASS_TO_PASS if a else []), set(b.PASS_TO_PASS if b else [])
        row = {"instance_id": iid, "before": oa, "after": ob,
               "f2p_only_before": sorted(fa - fb), "f2p_only_after": sorted(fb - fa),
               "p2p_only_before": sorted(pa - pb), "p2p_only_after": sorted(pb - pa),
               "f2p": [len(fa), len(fb)], "p2p": [len(pa), len(pb)]}
        row["changed"] = oa != ob or fa != fb or pa != pb
        if row["changed"]:
            row["cause"] = {
                "before_reason": (a.reason if a else "")[:400], "after_reason": (b.reason if b else "")[:400],
                "after_rounds": _rounds(b) if b else "", "after_anomalies": list(b.anomalies[:5]) if b else [],
                "before_parser": a.parser if a else "", "after_parser": b.parser if b else "",
                "after_reused_from": b.reused_from if b else None,
                "after_interpreter": b.interpreter if b else "", "before_interpreter": a.interpreter if a else ""}
        out.append(row)
    return out


def totals(rows: list[dict]) -> dict:
    """Counts over `compare`'s rows."""
    v = "verified"
    return {"instances": len(rows), "verified_before": sum(r["before"] == v for r in rows),
            "verified_after": sum(r["after"] == v for r in rows),
            "gained": sum(r["before"] != v and r["after"] == v for r in rows),
            "lost": sum(r["before"] == v and r["after"] != v for r in rows),
            "other_outcome_change": sum(r["before"] != r["after"] and v not in (r["before"], r["after"]) for r in rows),
            "same_outcome_lists_differ": sum(r["before"] == r["after"] and r["changed"] for r in rows),
            "identical": sum(not r["changed"] for r in rows)}


def quantile(xs: list[float], q: float) -> float:
    """Nearest-rank quantile of a non-empty list (q in [0, 1]): the ceil(q * n)-th smallest
    value (p90 of 10 values is the 9th)."""
    ys = sorted(xs)
    return ys[min(len(ys) - 1, max(0, math.ceil(q * len(ys) - 1e-9) - 1))]


def times(before: dict, after: dict, ids: list[str]) -> dict:
    """Seconds per instance on both sides (`timings.total`) over ids both finished with a time:
    {"pairs": n, "before": {"median", "p90"}, "after": {...}, "ratio_of_medians",
    "median_of_ratios", "per_instance": [[id, before_s, after_s], ...]}; {"pairs": 0} when none."""
    pairs = [(i, before[i].timings["total"], after[i].timings["total"]) for i in ids
             if i in before and i in after and before[i].timings.get("total") and after[i].timings.get("total")]
    if not pairs:
        return {"pairs": 0}
    b, a = [p[1] for p in pairs], [p[2] for p in pairs]
    mb, ma = statistics.median(b), statistics.median(a)
    return {"pairs": len(pairs), "before": {"median": round(mb, 1), "p90": round(quantile(b, 0.9), 1)},
            "after": {"median": round(ma, 1), "p90": round(quantile(a, 0.9), 1)},
            "ratio_of_medians": round(ma / mb, 3),
            "median_of_ratios": round(statistics.median(y / x for _, x, y in pairs), 3),
            "per_instance": [[i, round(x, 1), round(y, 1)] for i, x, y in pairs]}


def render(rows: list[dict], tot: dict, markdown: bool) -> str:
    """The table (text or markdown) and the totals."""
    lines = []
    if markdown:
        lines += ["| instance | before | after | F2P b/a | P2P b/a | differences | cause |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["changed"] and not markdown:
            continue
        diff = []
        for key, label in (("f2p_only_before", "F2P -"), ("f2p_only_after", "F2P +"),
                           ("p2p_only_before", "P2P -"), ("p2p_only_after", "P2P +")):
            if r[key]:
                diff.append(f"{label}{len(r[key])} ({', '.join(r[key][:3])}{', ...' if len(r[key]) > 3 else ''})")
        c = r.get("cause") or {}
        cause = "" if not c else (f"before: {c['before_reason'][:160]} | after: {c['after_reason'][:160]}"
                                  + (f" | rounds: {c['after_rounds']}" if c["after_rounds"] else "")
                                  + (f" | anomalies: {c['after_anomalies'][:2]}" if c["after_anomalies"] else "")
                                  + (f" | parser {c['before_parser']} -> {c['after_parser']}"
                                     if c["before_parser"] != c["after_parser"] else ""))
        f2p, p2p = f"{r['f2p'][0]}/{r['f2p'][1]}", f"{r['p2p'][0]}/{r['p2p'][1]}"
        if markdown:
            esc = (lambda s: s.replace("|", "\\|"))
            lines.append(f"| {r['instance_id']} | {r['before']} | {r['after']} | {f2p} | {p2p} | "
                         f"{esc('; '.join(diff))} | {esc(cause)} |")
        else:
            lines.append(f"{r['instance_id']}: {r['before']} -> {r['after']}  F2P {f2p}  P2P {p2p}")
            lines += [f"    {d}" for d in diff]
            if cause:
                lines.append(f"    cause: {cause}")
    lines.append("")
    lines.append("totals: " + ", ".join(f"{k}={v}" for k, v in tot.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="work directory of the earlier run (read only)")
    ap.add_argument("--after", type=Path, required=True, help="work directory of the later run (read only)")
    ap.add_argument("--ids-file", type=Path, help="one instance id a line (default: every id of both runs)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the rows and totals here")
    ap.add_argument("--times", action="store_true", help="also the seconds per instance, before against after")
    args = ap.parse_args(argv)
    before, after = rows_of(args.before), rows_of(args.after)
    if args.ids_file:
        ids = [x.strip() for x in args.ids_file.read_text().splitlines() if x.strip() and not x.startswith("#")]
    else:
        ids = sorted(set(before) | set(after))
    rows = compare(before, after, ids)
    tot = totals(rows)
    print(render(rows, tot, args.markdown))
    tm = times(before, after, ids) if args.times else None
    if tm is not None:
        print("\ntimes (s, timings.total): " + ("no instance finished on both sides" if not tm["pairs"] else
              f"{tm['pairs']} pairs; before median {tm['before']['median']} p90 {tm['before']['p90']}; "
              f"after median {tm['after']['median']} p90 {tm['after']['p90']}; "
              f"ratio of medians {tm['ratio_of_medians']}; median of ratios {tm['median_of_ratios']}"))
    if args.json:
        args.json.write_text(json.dumps({"totals": tot, "rows": rows, "times": tm}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
