r"""The generalisation report of issue 10 and the memory-arm numbers of issue 9, from finished
`swemint bench` work directories (read only: nothing is written into them).

    .venv/bin/python scripts/measure_report.py -i ../shared/data/swebench_dev.jsonl \
        --workdir work/gen [--workdir W2 ...] --ids-file data/measurement_ids.txt \
        [--core-ids ../shared/data/dev_core.txt --compare-to work/core-base] \
        [--network-bound data/network_bound.txt] [--no-docker] [--json report.json]

    # the memory ablation of issue 9, over the ids every arm finished:
    .venv/bin/python scripts/measure_report.py -i ../shared/data/swebench_dev.jsonl \
        --ids-file data/measurement_ids.txt \
        --arm before_and_after=work/gen --arm off=work/gen-off \
        --arm after_failure=work/gen-afterfail

Rows are read with `scripts.diff_runs.rows_of` (finished = DONE + result.json; never
quarantines, unlike `ResultStore.read_result`); with several `--workdir`, an instance's row is
the first work directory's that has it. Scoring against the gold lists of the instances file is
`pipeline.bench.score_result` (Python rows by `envpool.grading.score_against_gold`, other
languages by `score_against_gold_ids`). A row's language is its input row's
(`pipeline.instances.instance_language`), else the result's. Sections, Markdown on stdout and the
same numbers in `--json`:

1. Per repository: instances, finished, verified, verified with gold FAIL_TO_PASS recall 1.0,
   with precision 1.0, with both, median seconds (`timings.total`). Network-bound instances
   (`--network-bound`, default `data/network_bound.txt`: id and cause a line, checked by hand;
   and every `env_failed` row whose build needs a source this host cannot reach, as the row's
   `unreachable` says or, for older ledger lines, `agents.diagnosis.unreachable_source` reads
   in its reason) are counted apart, listed with their cause, and left out of every target. Ids
   not finished are "not run" and listed (running or never started), never dropped.
2. Totals per language and the targets of issue 10, each printed met / not met: >= 85% of the
   set verified with recall and precision 1.0 (ids not run count as not verified), every
   language >= 70%, PASS_TO_PASS agreement >= 0.9 in every language whose gold has any.
3. Failures grouped by outcome and normalised reason (`pipeline.report.normalise_reason`), one
   line each (count, an example id, the example's reason cut to 160 characters); verified rows
   short of recall or precision 1.0 are grouped too. Repositories at 0 verified, with causes.
4. PASS_TO_PASS agreement per language: share of gold P2P ids found in ours, mean (and min) over
   verified rows whose gold has P2P.
5. Time per instance per language: median and p90 (nearest rank) of `timings.total`, and the
   share of time in test runs (`timings.before + after` over `total`).
6. Disk per verified instance: the unique bytes of its image (`docker system df -v`'s
   UniqueSize = Size - SharedSize, from the SDK's `client.df()`); the image by the row's
   `image_id` / `image` tag, else the pool's record (`WORKDIR/pool.duckdb`, read only). Median
   per instance and total of distinct images per language; "docker unavailable" without an
   engine (or with `--no-docker`).
7. With `--core-ids`: the core's verified count; with `--compare-to W0` also the per-instance
   comparison with that earlier run (`scripts.diff_runs.compare`), changed rows only.
8. With `--arm NAME=WORKDIR` (repeated): per arm over the ids every arm finished
   (`scripts.loop_stats.aggregate`; an arm's source is a work directory or a ledger file, and
   an arm named twice takes each id from its first source): verified, loop rounds and Execution repairs per instance,
   repairs by memory, plans changed before planning, verified only in round >= 2 and by which
   feedback. `--carry off=before_and_after` (repeatable): an arm takes the named arm's line for
   ids it did not run where that arm's memory did nothing the arm removes (`arms_report`; the
   ids an arm must run come from `ledger.py arm-todo`); the table shows measured / carried
   counts and the controls that check the carry.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.diagnosis import unreachable_source  # noqa: E402
from agents.models import Instance, InstanceResult, canonical_language  # noqa: E402
from pipeline.bench import score_result  # noqa: E402
from pipeline.instances import instance_language, load_and_select, read_ids_file  # noqa: E402
from pipeline.report import normalise_reason  # noqa: E402
from pipeline.store import ResultStore  # noqa: E402
from scripts.diff_runs import compare, quantile, render, rows_of, totals  # noqa: E402
from scripts.ledger import read_ledger, read_ledgers  # noqa: E402
from scripts.loop_stats import aggregate, memory_acts, row_facts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_SET, TARGET_LANGUAGE, TARGET_P2P = 0.85, 0.70, 0.9
"""Issue 10's targets: share of the set verified with gold recall and precision 1.0, the same
per language, PASS_TO_PASS agreement per language where gold has any."""
REASON_WIDTH = 160


# ---------------------------------------------------------------- inputs

def read_network_bound(path: Path | None) -> dict[str, str]:
    """instance id -> cause from a file of `<id> <one-line cause>` lines (`#` lines and blank
    lines ignored; an id without a cause gets "network-bound"). {} when `path` is None or absent."""
    if path is None or not Path(path).is_file():
        return {}
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        iid, _, cause = line.partition(" ")
        out[iid] = cause.strip() or "network-bound"
    return out


def merged_rows(workdirs: list[Path]) -> dict[str, InstanceResult]:
    """instance id -> row, each from the first of `workdirs` that finished it (read only)."""
    out: dict[str, InstanceResult] = {}
    for w in workdirs:
        for iid, res in rows_of(w).items():
            out.setdefault(iid, res)
    return out


def not_run_state(workdirs: list[Path], iid: str) -> str:
    """Why `iid` has no finished row: `running (W)` when a RUNNING marker without DONE is in a
    work directory (running now, or its run was killed), else `not started`."""
    for w in workdirs:
        if ResultStore(w).is_running(iid):
            return f"running ({w})"
    return "not started"


def language_of(inst: Instance, res: InstanceResult | None) -> str:
    """The input row's language (pipeline's `instance_language`); the result's when the input
    row has none."""
    if inst.language is None and res is not None and res.language:
        return canonical_language(res.language) or instance_language(inst)
    return instance_language(inst)


def extra_touched(extra: list[str], test_patch: str) -> list[str]:
    """The ids of `extra` (our FAIL_TO_PASS ids gold lacks) whose top-level test name
    (`envpool.grading.test_name`) is a word of the test_patch's changed lines or hunk headers
    (`envpool.patches.touched_words`): tests the test_patch adds or changes, which failed before
    and passed after, so FAIL_TO_PASS by SWE-bench's definition although gold leaves them out
    (gin-1957's added ``TestHeaderBinding`` in another package)."""
    from envpool.grading import test_name
    from envpool.patches import touched_words

    words = touched_words(test_patch)
    return [t for t in extra if test_name(t) in words]


def scored(ids: list[str], gold: dict[str, Instance], rows: dict[str, InstanceResult],
           network: dict[str, str], workdirs: list[Path], ledger: dict[str, dict] | None = None) -> list[dict]:
    """One dict per id of `ids` known to `gold`: instance_id, repo, language, finished,
    network_bound (cause or None), and for finished rows outcome, f2p_recall, f2p_precision,
    exact (verified with both 1.0), f2p_extra_touched (how many of our extra FAIL_TO_PASS ids are
    tests the test_patch adds or changes: `extra_touched`), p2p_agreement (None when gold has no P2P), seconds,
    test_seconds (before + after + reruns), reason, image, image_id; `not_run` (state) otherwise. An id
    with no row in `rows` but a line in `ledger` (`scripts/ledger.py`) is finished with that
    line's fields (and its `code`, `recorded`, loop facts and `image_bytes`)."""
    out = []
    ledger = ledger or {}
    for iid in ids:
        inst = gold.get(iid)
        if inst is None:
            continue
        res = rows.get(iid)
        line = ledger.get(iid) if res is None else None
        row: dict = {"instance_id": iid, "repo": inst.repo, "language": language_of(inst, res),
                     "finished": res is not None or line is not None, "network_bound": network.get(iid),
                     "gold_has_p2p": bool(inst.PASS_TO_PASS)}
        if line is not None:
            row.update({k: v for k, v in line.items() if k not in ("instance_id", "repo", "language")},
                       from_ledger=True)
            row["unreachable"] = unreachable_of(line.get("outcome"), line.get("unreachable"), line.get("reason"))
            row["network_bound"] = row["network_bound"] or _needs(row["unreachable"])
            out.append(row)
            continue
        if res is None:
            row["not_run"] = not_run_state(workdirs, iid)
            out.append(row)
            continue
        s = score_result(res, inst)
        t = res.timings
        sides = ("before", "after", "reruns")  # reruns: a side's later runs (issue 26's timings)
        test_s = sum(t[k] for k in sides if k in t) if any(k in t for k in sides) else None
        row.update(outcome=res.outcome, f2p_recall=s["f2p_recall"], f2p_precision=s["f2p_precision"],
                   f2p_missing=len(s["f2p_missing"]), f2p_extra=len(s["f2p_extra"]),
                   f2p_extra_touched=len(extra_touched(s["f2p_extra"], inst.test_patch)),
                   exact=res.outcome == "verified" and s["f2p_recall"] == 1.0 and s["f2p_precision"] == 1.0,
                   p2p_agreement=s["p2p_recall"] if inst.PASS_TO_PASS else None,
                   seconds=t.get("total"), test_seconds=test_s, reason=res.reason or "",
                   unreachable=unreachable_of(res.outcome, res.unreachable, res.reason),
                   substitutes_tried=list(res.substitutes_tried),
                   image=res.image or (res.env.image_tag if res.env else ""),
                   image_id=res.image_id or (res.env.image_id if res.env else ""))
        row["network_bound"] = row["network_bound"] or _needs(row["unreachable"])
        out.append(row)
    return out


def unreachable_of(outcome: str | None, recorded: str | None, reason: str | None) -> str | None:
    """The unreachable source of an `env_failed` row: the row's (or ledger line's) own
    `unreachable`, else what `agents.diagnosis.unreachable_source` reads in its reason (ledger
    lines written before rows carried the field); None for every other outcome."""
    if outcome != "env_failed":
        return None
    return recorded or unreachable_source(reason or "")


def _needs(unreachable: str | None) -> str | None:
    """The network-bound cause of a row whose build needs an unreachable source."""
    if not unreachable:
        return None
    source, _, line = unreachable.partition(": ")
    return f"the build needs {source}, which this host cannot reach ({line})"


# ---------------------------------------------------------------- sections

def _median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 1) if xs else None


def _counts(group: list[dict]) -> dict:
    fin = [r for r in group if r["finished"]]
    ver = [r for r in fin if r["outcome"] == "verified"]
    return {"instances": len(group), "finished": len(fin), "not_run": len(group) - len(fin),
            "verified": len(ver), "recall_1": sum(r["f2p_recall"] == 1.0 for r in ver),
            "precision_1": sum(r["f2p_precision"] == 1.0 for r in ver), "both": sum(r["exact"] for r in ver),
            "median_s": _median([r["seconds"] for r in fin if r.get("seconds") is not None])}


def per_repository(rows: list[dict]) -> dict[str, dict]:
    """repo -> `_counts` over its rows that are not network-bound, plus `language` and
    `network_bound` (how many of its rows are set apart)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["repo"]].append(r)
    out = {}
    for repo, group in sorted(by.items()):
        kept = [r for r in group if not r["network_bound"]]
        out[repo] = {"language": group[0]["language"], **_counts(kept),
                     "network_bound": len(group) - len(kept)}
    return out


def _share(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def p2p_by_language(rows: list[dict]) -> dict[str, dict]:
    """language -> {"rows": verified rows (not network-bound) whose gold has P2P, "mean", "min",
    "gold_has_p2p": any row of the language has gold P2P}."""
    out = {}
    for lang in sorted({r["language"] for r in rows}):
        group = [r for r in rows if r["language"] == lang and not r["network_bound"]]
        vals = [r["p2p_agreement"] for r in group
                if r["finished"] and r["outcome"] == "verified" and r["p2p_agreement"] is not None]
        out[lang] = {"rows": len(vals), "mean": round(statistics.mean(vals), 4) if vals else None,
                     "min": round(min(vals), 4) if vals else None,
                     "gold_has_p2p": any(r["gold_has_p2p"] for r in group)}
    return out


def _p2p_verdict(p: dict) -> str:
    if not p["gold_has_p2p"]:
        return "n/a (gold lists none)"
    if p["mean"] is None:
        return "not met (no verified row with gold P2P)"
    return "met" if p["mean"] >= TARGET_P2P else "not met"


def language_totals(rows: list[dict]) -> dict:
    """{"languages": {lang: counts + share (both / instances) + share_of_finished + target},
    "set": the same over every language (and "every": {"instances", "both", "share"} over every
    row, network-bound ones counted as not verified), "targets": {name: {"value", "verdict"}}};
    network-bound rows left out of every other count here."""
    kept = [r for r in rows if not r["network_bound"]]
    p2p = p2p_by_language(rows)
    langs = {}
    for lang in sorted({r["language"] for r in kept}):
        c = _counts([r for r in kept if r["language"] == lang])
        c["share"] = _share(c["both"], c["instances"])
        c["share_of_finished"] = _share(c["both"], c["finished"])
        c["target"] = "met" if (c["share"] or 0) >= TARGET_LANGUAGE else "not met"
        langs[lang] = c
    whole = _counts(kept)
    whole["share"] = _share(whole["both"], whole["instances"])
    whole["share_of_finished"] = _share(whole["both"], whole["finished"])
    both = sum(bool(r.get("exact")) and not r["network_bound"] for r in rows)  # network-bound: not exact
    whole["every"] = {"instances": len(rows), "both": both, "share": _share(both, len(rows))}
    targets = {
        f"set: >= {TARGET_SET:.0%} verified with gold recall and precision 1.0":
            {"value": whole["share"], "verdict": "met" if (whole["share"] or 0) >= TARGET_SET else "not met"},
        f"every language >= {TARGET_LANGUAGE:.0%}":
            {"value": {k: v["share"] for k, v in langs.items()},
             "verdict": "met" if langs and all(v["target"] == "met" for v in langs.values()) else "not met"}}
    verdicts = {lang: _p2p_verdict(p) for lang, p in p2p.items()}
    targets[f"PASS_TO_PASS agreement >= {TARGET_P2P} per language where gold has any"] = {
        "value": {lang: p["mean"] for lang, p in p2p.items()},
        "verdict": "not met" if any(v.startswith("not met") for v in verdicts.values()) else "met",
        "per_language": verdicts}
    return {"languages": langs, "set": whole, "targets": targets}


def _one_line(reason: str) -> str:
    return " / ".join(x.strip() for x in reason.splitlines() if x.strip())[:REASON_WIDTH]


def failure_groups(rows: list[dict]) -> list[dict]:
    """Finished rows that are not network-bound and not verified with recall and precision 1.0,
    grouped by outcome + `normalise_reason` (its first 120 characters): [{"count", "outcome",
    "cause" (normalised), "example", "reason" (the example's, one line, <= 160 chars), "ids"}],
    largest group first. Verified rows short of 1.0 group as `verified (recall < 1.0)`, ..."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if not r["finished"] or r["network_bound"] or r["exact"]:
            continue
        if r["outcome"] == "verified":
            short = [n for n, k in (("recall", "f2p_recall"), ("precision", "f2p_precision")) if r[k] < 1.0]
            why = f"gold FAIL_TO_PASS: {r['f2p_missing']} missing, {r['f2p_extra']} extra of ours"
            if r["f2p_extra"] and r.get("f2p_extra_touched") == r["f2p_extra"]:
                why += " (every extra a test the test_patch adds or changes: fails before, passes after)"
            key = ("verified (" + " and ".join(f"{s} < 1.0" for s in short) + ")", why)
            groups[(key[0], normalise_reason(key[1]))].append({**r, "reason": key[1]})
            continue
        key = normalise_reason(r["reason"], r["instance_id"], r["repo"])[:120]
        groups[(r["outcome"], key)].append(r)
    out = [{"count": len(g), "outcome": o, "cause": c, "example": g[0]["instance_id"],
            "reason": _one_line(g[0]["reason"]), "ids": [x["instance_id"] for x in g]}
           for (o, c), g in groups.items()]
    return sorted(out, key=lambda x: (-x["count"], x["outcome"], x["cause"]))


def zero_repositories(rows: list[dict]) -> list[dict]:
    """Repositories with no verified row: [{"repo", "language", "instances", "finished", "not_run", "causes":
    {"<outcome>: <normalised reason>": n}}] (network-bound rows counted as their own cause)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["repo"]].append(r)
    out = []
    for repo, group in sorted(by.items()):
        if any(r["finished"] and r["outcome"] == "verified" for r in group):
            continue
        causes: Counter[str] = Counter()
        for r in group:
            if r["network_bound"]:
                causes[f"network-bound: {r['network_bound']}"] += 1
            elif r["finished"]:
                causes[f"{r['outcome']}: {normalise_reason(r['reason'], r['instance_id'], r['repo'])[:120]}"] += 1
        out.append({"repo": repo, "language": group[0]["language"], "instances": len(group),
                    "finished": sum(r["finished"] for r in group),
                    "not_run": sum(not r["finished"] for r in group), "causes": dict(causes.most_common())})
    return out


def times_by_language(rows: list[dict]) -> dict[str, dict]:
    """language -> {"n", "median_s", "p90_s" (nearest rank, `timings.total`), "test_share"
    (sum of before + after over sum of total, rows having both)} over finished rows."""
    out = {}
    for lang in sorted({r["language"] for r in rows}):
        fin = [r for r in rows if r["language"] == lang and r["finished"] and r.get("seconds")]
        secs = [r["seconds"] for r in fin]
        both = [r for r in fin if r.get("test_seconds") is not None]
        total = sum(r["seconds"] for r in both)
        out[lang] = {"n": len(secs), "median_s": _median(secs),
                     "p90_s": round(quantile(secs, 0.9), 1) if secs else None,
                     "test_share": round(sum(r["test_seconds"] for r in both) / total, 3) if total else None}
    return out


def docker_df() -> tuple[dict | None, str]:
    """(`client.df()` of the local engine, "") or (None, why not): "docker unavailable: ..."."""
    try:
        from envpool.docker_sandbox import docker_client

        return docker_client().df(), ""
    except Exception as e:  # no SDK, no engine, an engine that does not answer
        return None, f"docker unavailable: {str(e)[:160]}"


def pool_images(workdirs: list[Path]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """instance id -> (image_id, image_tag) from each work directory's `pool.duckdb` (read only,
    first work directory wins), and notes on pools that could not be read (e.g. held by their
    writer)."""
    out: dict[str, tuple[str, str]] = {}
    notes = []
    for w in workdirs:
        path = Path(w) / "pool.duckdb"
        if not path.is_file():
            continue
        try:
            from envpool.pool import EnvPool

            for rec in EnvPool(path, read_only=True, lock_wait=5.0).list():
                out.setdefault(rec.instance_id, (rec.image_id, rec.image_tag))
        except Exception as e:  # a pool locked by its writer for longer than lock_wait, a torn file
            notes.append(f"pool {path} not read: {type(e).__name__}: {str(e)[:120]}")
    return out, notes


def unique_sizes(df: dict) -> tuple[dict[str, int | None], dict[str, str]]:
    """From a `client.df()` dict: image id -> unique bytes (Size - SharedSize; None when the
    engine did not compute SharedSize, -1), and repo tag -> image id."""
    sizes, tags = {}, {}
    for im in df.get("Images") or []:
        shared, size = im.get("SharedSize", -1), im.get("Size")
        sizes[im["Id"]] = None if size is None or shared is None or shared < 0 else max(0, size - shared)
        for t in im.get("RepoTags") or []:
            tags[t] = im["Id"]
    return sizes, tags


def disk_by_language(rows: list[dict], df: dict | None, why: str = "",
                     pool: dict[str, tuple[str, str]] | None = None) -> dict:
    """{"available": bool, "note": why not (or that the bytes are a ledger's, recorded earlier,
    when there is no engine), "languages": {lang: {"verified", "found",
    "median_bytes", "total_bytes" (distinct images), "missing": [ids whose image this engine
    does not have or whose unique size is unknown]}}} over verified rows."""
    recorded = any(r.get("image_bytes") is not None for r in rows)
    if df is None and not recorded:
        return {"available": False, "note": why or "docker unavailable", "languages": {}}
    if df is None:  # no engine: the bytes ledger lines recorded when an engine answered
        why = f"{why or 'docker unavailable'}; from the ledger's recorded image bytes"
    sizes, tags = unique_sizes(df) if df is not None else ({}, {})
    pool = pool or {}
    langs: dict[str, dict] = {}
    for lang in sorted({r["language"] for r in rows}):
        ver = [r for r in rows if r["language"] == lang and r["finished"] and r["outcome"] == "verified"]
        if not ver:
            continue
        per, distinct, missing = [], {}, []
        for r in ver:
            pid, ptag = pool.get(r["instance_id"], ("", ""))
            cands = [r.get("image_id"), tags.get(r.get("image") or ""), pid, tags.get(ptag or "")]
            iid = next((c for c in cands if c and c in sizes and sizes[c] is not None), None)
            if iid is None and r.get("image_bytes") is not None:  # a ledger line: measured when recorded
                iid = r.get("image_id") or r["instance_id"]
                sizes.setdefault(iid, r["image_bytes"])
            if iid is None:
                missing.append(r["instance_id"])
                continue
            per.append(sizes[iid])
            distinct[iid] = sizes[iid]
        langs[lang] = {"verified": len(ver), "found": len(per),
                       "median_bytes": int(statistics.median(per)) if per else None,
                       "total_bytes": sum(distinct.values()), "missing": missing}
    return {"available": True, "note": why, "languages": langs}


def core_check(ids: list[str], rows: dict[str, InstanceResult], gold: dict[str, Instance],
               network: dict[str, str], before_dir: Path | None, workdirs: list[Path] = (),
               ledger: dict[str, dict] | None = None) -> dict:
    """The core: {"ids", "finished", "verified", "exact" (verified, recall and precision 1.0),
    "network_bound", "not_run": [...]} (rows, else `ledger` lines); with `before_dir` also
    "compare" (diff_runs' `compare` of the rows that changed, work directory rows only) and
    "compare_totals" (its `totals`)."""
    sc = scored(ids, gold, rows, network, list(workdirs), ledger)
    fin = [r for r in sc if r["finished"]]
    out = {"ids": len(ids), "finished": len(fin), "verified": sum(r["outcome"] == "verified" for r in fin),
           "exact": sum(r["exact"] for r in fin), "network_bound": sorted(i for i in ids if i in network),
           "not_run": [r["instance_id"] for r in sc if not r["finished"]],
           "unknown": [i for i in ids if i not in gold]}
    if before_dir is not None:
        cmp = compare(rows_of(before_dir), rows, ids)
        out["compare_to"] = str(before_dir)
        out["compare_totals"] = totals(cmp)
        out["compare"] = [r for r in cmp if r["changed"]]
    return out


def arm_facts(source: Path) -> dict[str, dict]:
    """instance id -> `row_facts` of an arm's source: a ledger file (`*.jsonl`, its lines) or a
    bench work directory (its finished rows)."""
    if source.suffix == ".jsonl":
        return read_ledger(source)
    return {iid: row_facts(res) for iid, res in rows_of(source).items()}


def arms_report(arms: list[tuple[str, Path]], ids: list[str] | None,
                carry: dict[str, str] | None = None, apart: set[str] | frozenset = frozenset()) -> dict:
    """{"ids": how many ids were asked (None: every id some arm finished), "common": the ids
    every arm finished, "arms": [{"arm", "finished" (of the asked ids, carried ones included),
    "measured", "carried", "controls", "controls_agree", **loop_stats.aggregate over the common
    ids}]}. An arm named twice (`NAME=WORKDIR` and `NAME=LEDGER`) takes an id from its first
    source that has it; ids in `apart` (network-bound) are left out.

    `carry` maps an arm (`off` / `after_failure`) to the arm it is carried from (the defaults):
    an id the arm did not run, whose line in the defaults shows the memory did nothing that the
    arm removes (`scripts.loop_stats.memory_acts`), takes the defaults' line (`carried`: the
    arm's run would make the same decisions). `controls`: ids the arm measured although the
    defaults' memory did nothing there (`ledger.py arm-todo`'s sample); `controls_agree`: of
    those, the ones with the same outcome as the defaults — the check of the carry. Raises
    ValueError when a carried arm or its source is not among the arms."""
    per: dict[str, dict[str, dict]] = {}
    label: dict[str, list[str]] = {}
    for name, w in arms:
        facts = per.setdefault(name, {})
        for iid, f in arm_facts(w).items():
            if iid not in apart:
                facts.setdefault(iid, f)
        label.setdefault(name, []).append(str(w))
    measured = {name: set(f) for name, f in per.items()}
    checks: dict[str, tuple[int, int, int]] = {}
    for arm, src in (carry or {}).items():
        if arm not in per or src not in per:
            raise ValueError(f"--carry {arm}={src}: both must be arms (--arm NAME=...)")
        quiet = {i for i, f in per[src].items() if not memory_acts(f, arm)}
        controls = [i for i in measured[arm] if i in quiet]
        agree = sum(1 for i in controls if per[arm][i]["outcome"] == per[src][i]["outcome"])
        n = 0
        for i in sorted(quiet - measured[arm]):
            per[arm][i] = per[src][i]
            n += 1
        checks[arm] = (n, len(controls), agree)
    asked = ids if ids is not None else sorted(set().union(*(set(r) for r in per.values())))
    asked = [i for i in asked if i not in apart]
    common = [i for i in asked if all(i in r for r in per.values())]
    out = []
    for name in per:
        s = aggregate([per[name][i] for i in common], ", ".join(label[name]))
        n = s["instances"]
        carried, controls, agree = checks.get(name, (0, None, None))
        s.update(arm=name, finished=sum(i in per[name] for i in asked),
                 measured=sum(i in measured[name] for i in common), carried=sum(
                     i in per[name] and i not in measured[name] for i in common),
                 controls=controls, controls_agree=agree,
                 rounds_per_instance=round(s["rounds_total"] / n, 2) if n else None,
                 repairs_per_instance=round(s["repairs_total"] / n, 2) if n else None)
        out.append(s)
    return {"ids": len(ids) if ids is not None else None, "common": common, "arms": out,
            "carry": dict(carry or {})}


# ---------------------------------------------------------------- rendering

def _f(x, nd: int = 2) -> str:
    if x is None:
        return "-"
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def _mb(x) -> str:
    return "-" if x is None else f"{x / 1e6:,.1f}"


def _esc(s: str) -> str:
    return str(s).replace("|", "\\|")


def _sources(rep: dict) -> str:
    """The report's inputs: work directories, then ledgers with how many rows came from them."""
    led = rep.get("ledgers") or []
    parts = list(rep.get("workdirs") or [])
    if led:
        parts.append(f"ledger {', '.join(led)} ({rep.get('from_ledger', 0)} rows)")
    return ", ".join(parts) or "-"


def render_markdown(rep: dict) -> str:
    """The report dict (`build_report`) as Markdown."""
    L: list[str] = []
    if "rows" in rep:
        n_net = sum(bool(r["network_bound"]) for r in rep["rows"])
        L += [f"# Generalisation report: {rep['set']['instances']} instances ({rep['set']['finished']} finished)"
              f"{f' and {n_net} network-bound' if n_net else ''}, from {_sources(rep)}", ""]
        if rep.get("unknown_ids"):
            L += [f"Ids not in the instances file ({len(rep['unknown_ids'])}): {', '.join(rep['unknown_ids'])}", ""]
        L += ["## 1. Per repository", "",
              "| repository | language | instances | finished | verified | recall 1.0 | precision 1.0 | both | "
              "median s | not run | network-bound |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for repo, c in rep["repositories"].items():
            L.append(f"| {repo} | {c['language']} | {c['instances']} | {c['finished']} | {c['verified']} | "
                     f"{c['recall_1']} | {c['precision_1']} | {c['both']} | {_f(c['median_s'], 0)} | "
                     f"{c['not_run']} | {c['network_bound']} |")
        net = [r for r in rep["rows"] if r["network_bound"]]
        L += ["", f"### Network-bound ({len(net)}, left out of every target)", ""]
        for r in net:
            got = (f"{r['outcome']}, recall {_f(r['f2p_recall'])}, precision {_f(r['f2p_precision'])}"
                   if r["finished"] else f"not run ({r['not_run']})")
            tried = r.get("substitutes_tried") or []
            L.append(f"- {r['instance_id']}: {r['network_bound']} — {got}"
                     + (f"; substitutes tried: {'; '.join(tried)}" if tried else "; no substitute known"))
        nr = [r for r in rep["rows"] if not r["finished"] and not r["network_bound"]]  # those are listed apart
        L += ["", f"### Not run ({len(nr)})", ""]
        L += [f"- {r['instance_id']} ({r['repo']}): {r['not_run']}" for r in nr] or ["none"]
        lt = rep["languages"]
        L += ["", "## 2. Totals per language (network-bound left out)", "",
              "| language | instances | finished | not run | verified | verified, recall & precision 1.0 | "
              "share of set | share of finished | >= 70% |", "|---|---|---|---|---|---|---|---|---|"]
        for lang, c in lt["languages"].items():
            L.append(f"| {lang} | {c['instances']} | {c['finished']} | {c['not_run']} | {c['verified']} | "
                     f"{c['both']} | {_pct(c['share'])} | {_pct(c['share_of_finished'])} | {c['target']} |")
        s = lt["set"]
        L.append(f"| **all** | {s['instances']} | {s['finished']} | {s['not_run']} | {s['verified']} | {s['both']} | "
                 f"{_pct(s['share'])} | {_pct(s['share_of_finished'])} | |")
        e = s["every"]
        L += ["", f"Over every instance, network-bound ones counted as not verified: {e['both']} of "
                  f"{e['instances']} verified with recall and precision 1.0 ({_pct(e['share'])}).",
              "", "Targets of issue 10 (ids not run count as not verified; network-bound apart):", ""]
        for name, t in lt["targets"].items():
            if not isinstance(t["value"], dict):
                val = _pct(t["value"])
            elif "per_language" in t:
                val = ", ".join(f"{k} {_f(t['value'][k], 2)}" for k, v in t["per_language"].items()
                                if v.startswith("not met"))
            else:
                val = ", ".join(f"{k} {_pct(v)}" for k, v in t["value"].items() if (v or 0) < TARGET_LANGUAGE)
            L.append(f"- {name}: **{t['verdict']}**{f' ({val})' if val else ''}")
        L += ["", "## 3. Failures by cause", "", "| n | outcome | example | reason (example's) |", "|---|---|---|---|"]
        for g in rep["failures"]:
            L.append(f"| {g['count']} | {g['outcome']} | {g['example']} | {_esc(g['reason'])} |")
        zero = [z for z in rep["zero_repositories"] if z["finished"] or z["causes"]]
        unrun = [z["repo"] for z in rep["zero_repositories"] if not (z["finished"] or z["causes"])]
        L += ["", f"### Repositories at 0 verified ({len(zero)} with a finished or network-bound row)", ""]
        if not zero:
            L.append("none")
        if unrun:
            L += [f"No finished row yet ({len(unrun)}): {', '.join(unrun)}", ""]
        for z in zero:
            causes = "; ".join(f"{k} ({n})" for k, n in z["causes"].items()) or "no finished row"
            L.append(f"- {z['repo']} ({z['language']}, {z['instances']} ids, {z['not_run']} not run): {causes}")
        L += ["", "## 4. PASS_TO_PASS agreement with gold (verified rows whose gold has P2P)", "",
              "| language | rows | mean | min | >= 0.9 |", "|---|---|---|---|---|"]
        verdicts = lt["targets"][next(k for k in lt["targets"] if k.startswith("PASS_TO_PASS"))]["per_language"]
        for lang, p in rep["p2p"].items():
            L.append(f"| {lang} | {p['rows']} | {_f(p['mean'], 3)} | {_f(p['min'], 3)} | {verdicts[lang]} |")
        L += ["", "## 5. Time per instance (s, timings.total, every finished row; test share = before + after over total)",
              "",
              "| language | n | median | p90 | test-run share |", "|---|---|---|---|---|"]
        for lang, t in rep["times"].items():
            L.append(f"| {lang} | {t['n']} | {_f(t['median_s'], 0)} | {_f(t['p90_s'], 0)} | {_pct(t['test_share'])} |")
        d = rep["disk"]
        L += ["", "## 6. Disk per verified instance (unique image bytes: `docker system df -v` now, or at record time for a "
              "ledger row; MB = 10^6 bytes; 0 when every layer is shared with another image)", ""]
        if not d["available"]:
            L.append(d["note"])
        else:
            L += ["| language | verified | image found | median MB | total MB (distinct images) | not found |",
                  "|---|---|---|---|---|---|"]
            for lang, x in d["languages"].items():
                miss = ", ".join(x["missing"][:5]) + (" ..." if len(x["missing"]) > 5 else "")
                L.append(f"| {lang} | {x['verified']} | {x['found']} | {_mb(x['median_bytes'])} | "
                         f"{_mb(x['total_bytes'])} | {miss or '-'} |")
        for n in rep.get("notes", []):
            L.append(f"\nnote: {n}")
    if rep.get("core"):
        c = rep["core"]
        L += ["", "## 7. Core check", "",
              f"{c['verified']} of {c['ids']} core ids verified ({c['exact']} with gold recall and precision 1.0); "
              f"{c['finished']} finished; not run: {', '.join(c['not_run']) or 'none'}; "
              f"network-bound: {', '.join(c['network_bound']) or 'none'}"]
        if "compare" in c:
            L += ["", f"Against {c['compare_to']} (changed rows only):", ""]
            L.append(render(c["compare"], c["compare_totals"], markdown=True))
    if rep.get("arms"):
        a = rep["arms"]
        asked = "every id some arm finished" if a["ids"] is None else f"{a['ids']} ids asked"
        L += ["", "## 8. Memory arms (issue 9)", "",
              f"Over the {len(a['common'])} ids every arm finished ({asked})."]
        if a.get("carry"):
            L += ["", "Carried: " + "; ".join(f"{k} from {v}" for k, v in a["carry"].items()) +
                  " — an id the arm did not run, where the memory did nothing in the source arm that the arm "
                  "removes, takes the source's line (the same decisions); controls are ids measured although "
                  "the memory did nothing there, agree = same outcome."]
        L += ["",
              "| arm | finished | instances | measured | carried | controls (agree) | verified | rounds / instance | "
              "repairs / instance | repairs median | repairs by memory | plans changed before planning | "
              "memory acted | verified in round >= 2 | by feedback |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in a["arms"]:
            fb = "; ".join(f"{k}: {n}" for k, n in sorted(s["by_feedback"].items(), key=lambda kv: -kv[1])) or "-"
            ctl = "-" if s.get("controls") is None else f"{s['controls']} ({s['controls_agree']})"
            L.append(f"| {s['arm']} | {s['finished']} | {s['instances']} | {s.get('measured', s['instances'])} | "
                     f"{s.get('carried', 0)} | {ctl} | {s['verified']} | "
                     f"{_f(s['rounds_per_instance'])} | {_f(s['repairs_per_instance'])} | {s['repairs_median']} | "
                     f"{s['repairs_by_memory']} | {s['plans_changed_before_planning']} | {s.get('memory_acted', '-')} | "
                     f"{s['verified_round_ge2']} | "
                     f"{_esc(fb)} |")
    return "\n".join(L).lstrip("\n") + "\n"


# ---------------------------------------------------------------- driver

def build_report(instances: Path, workdirs: list[Path], ids_file: Path | None, *,
                 network_file: Path | None = None, core_ids: Path | None = None,
                 compare_to: Path | None = None, arms: list[tuple[str, Path]] | None = None,
                 df: dict | None = None, df_note: str = "", ledgers: list[Path] | None = None,
                 carry: dict[str, str] | None = None) -> dict:
    """Every section's numbers as one dict (module docstring). `df`: a `client.df()` dict (None:
    no disk numbers, `df_note` says why). `ledgers`: results ledgers (`scripts/ledger.py`) whose
    lines stand for ids no work directory finished. `carry`: arm -> the arm it is carried from
    (`arms_report`)."""
    ids = read_ids_file(ids_file) if ids_file else None
    wanted = list(ids or []) + (read_ids_file(core_ids) if core_ids else [])
    loaded = load_and_select(instances, ids=wanted or None)
    gold = {i.instance_id: i for i in loaded.instances}
    network = read_network_bound(network_file)
    rep: dict = {}
    rows = merged_rows(workdirs) if workdirs else {}
    ledger = read_ledgers(list(ledgers or []))
    if workdirs or ledger:
        set_ids = ids if ids is not None else sorted(i for i in set(rows) | set(ledger) if i in gold)
        sc = scored(set_ids, gold, rows, network, workdirs, ledger)
        pool, notes = ({}, [])
        if df is not None and any(r["finished"] and r["outcome"] == "verified" and not r.get("image_id")
                                  for r in sc):
            pool, notes = pool_images(workdirs)
        lt = language_totals(sc)
        rep.update(workdirs=[str(w) for w in workdirs], ledgers=[str(p) for p in ledgers or []],
                   from_ledger=sum(1 for r in sc if r.get("from_ledger")), rows=sc, unknown_ids=[i for i in set_ids if i not in gold],
                   repositories=per_repository(sc), languages=lt, set=lt["set"],
                   failures=failure_groups(sc), zero_repositories=zero_repositories(sc),
                   p2p=p2p_by_language(sc), times=times_by_language(sc),
                   disk=disk_by_language(sc, df, df_note, pool), notes=notes)
    if core_ids:
        rep["core"] = core_check(read_ids_file(core_ids), rows, gold, network, compare_to, workdirs, ledger)
    if arms:
        rep["arms"] = arms_report(arms, ids, carry, set(network))
    return rep


def _arm(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"wants NAME=VALUE, got {text!r}")
    return name, Path(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-i", "--instances", required=True, type=Path, help="SWE-bench-format JSONL with the gold lists")
    ap.add_argument("--workdir", type=Path, action="append", default=[], help="a bench work directory (repeatable)")
    ap.add_argument("--ledger", type=Path, action="append", default=[],
                    help="a results ledger (scripts/ledger.py) for ids no work directory finished (repeatable)")
    ap.add_argument("--ids-file", type=Path, help="the set, one id a line (default: every id the work dirs finished)")
    ap.add_argument("--network-bound", type=Path, default=ROOT / "data" / "network_bound.txt",
                    help="ids set apart, `<id> <cause>` a line (default: data/network_bound.txt)")
    ap.add_argument("--core-ids", type=Path, help="the core's ids (section 7)")
    ap.add_argument("--compare-to", type=Path, help="an earlier run's work directory to compare the core with")
    ap.add_argument("--arm", type=_arm, action="append", default=[], help="NAME=WORKDIR of a memory arm (repeatable)")
    ap.add_argument("--carry", type=_arm, action="append", default=[],
                    help="ARM=FROM: arm ARM (off / after_failure) takes FROM's line where FROM's memory did not act")
    ap.add_argument("--no-docker", action="store_true", help="skip the disk section's engine query")
    ap.add_argument("--json", type=Path, help="also write every number here")
    a = ap.parse_args(argv)
    if not a.workdir and not a.ledger and not a.arm:
        ap.error("give --workdir / --ledger (sections 1-7) and/or --arm (section 8)")
    if a.compare_to and not a.core_ids:
        ap.error("--compare-to needs --core-ids")
    df, note = (None, "docker unavailable: --no-docker") if a.no_docker or not a.workdir else docker_df()
    rep = build_report(a.instances, a.workdir, a.ids_file, network_file=a.network_bound, core_ids=a.core_ids,
                       compare_to=a.compare_to, arms=a.arm, df=df, df_note=note, ledgers=a.ledger,
                       carry={k: str(v) for k, v in a.carry})
    sys.stdout.write(render_markdown(rep))
    if a.json:
        a.json.write_text(json.dumps(rep, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
