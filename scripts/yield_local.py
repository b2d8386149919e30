#!/usr/bin/env python
"""Yield on raw units of real repositories: `swemint run` with a local source over bare mirrors,
then the per-repository table (units mined, accepted, minted, verified, yield, time per verified)
and an explanation of every `no_fail_to_pass` / `tests_not_run` row.

    .venv/bin/python scripts/yield_local.py --background            # start (or continue) in the background
    .venv/bin/python scripts/yield_local.py --background            # again: running? the table so far
    .venv/bin/python scripts/yield_local.py --table-only --spot 10  # the table, and 10 verified rows to check by hand
    .venv/bin/python scripts/yield_local.py --workdir /work/scratch/y1 --repos pallets/click --passes 20

Work directory: `--workdir` (default /work/bench/yield, outside git: nothing fetched or derived
is committed). Each repository `owner/name` is read from `MIRRORS/owner+name/repo`; the source
keeps merge (`Merge pull request #N`, or a merge titled `... (#N)`) and squash (`... (#N)`)
units that change tests and code (`single_commits: false`, `pipeline.sources.gitlocal`).

**Passes.** `--passes 30,100,300` runs `swemint run` once per pass, each over the last N
first-parent commits of HEAD of every repository, so results cover all repositories early and a
pass that ends is a complete measurement of its window; `--last N` is `--passes N`. A unit is
decided once (the crawl state) and minted once (the store): later passes, and reruns, examine
only commits not seen before and mint only units without a finished row (plus `retry_outcomes`).

**Resumable, in the background.** `--background` re-executes this command detached (its own
session: it outlives the shell) with output in `WORKDIR/yield.out` and its pid in
`WORKDIR/yield.pid`, and returns. Running the same command again while it runs prints the table
so far; after it was stopped (kill, reboot, session end) it continues where it stopped — the
driver lock, the crawl state and the store make a killed `swemint run` lose no unit and mint
none twice (containers it left are swept by the next run). `swemint run` output goes to
`WORKDIR/yield.log`; `WORKDIR/yield.progress.json` names the passes finished.

Columns (from the durable state, so they cover every run in WORKDIR): `mined` units the source
examined (first-parent commits in the window, rejects included), `pr-like` of those the merge or
squash units, `accepted` after the test/code split and the filter, `minted` with a mint row, then
each outcome, `yield` = verified / accepted, `yield minted` = verified / minted (the same once
everything accepted is minted), `s/verified` = the repository's minting seconds (every row's
`timings.total`, failures included) per verified row, `median s` of verified rows. Then one line
per `no_fail_to_pass` / `tests_not_run` row: its title and an explanation read from the row (the
files the fix changes, tests the test_patch adds, tests passing before and after, the test runs'
counts in the trajectory, the minter's reason). Writes `WORKDIR/yield.json` and `WORKDIR/yield.md`
(and `WORKDIR/spot.md` with `--spot N`: verified rows — title, files of `patch` and `test_patch`,
FAIL_TO_PASS — for the check by hand that each test_patch tests what its patch changes).

**A ledger across machines.** `--ledger FILE` (e.g. `data/results/yield.jsonl`, kept in git)
holds one line per decided unit — key, repo, status, reject reason, instance_id, outcome,
seconds, the explanation of a `no_fail_to_pass` / `tests_not_run` row, the swemint commit and
the date — and nothing of the repository's code. Every table written records this work
directory's units into it (a line per unit key, the newer replacing the older). On a new machine
(a fresh work directory) the passes exclude the units the ledger has with a final outcome
(`sources.filter.exclude_ids_file` = `WORKDIR/ledger-excluded.txt`: they are `excluded` rejects,
not minted again; `infra_error` rows are minted again), and the table counts those units by
their ledger lines, so the measurement accumulates over sessions whose machines do not last.

Default executor: in-process (`--no-ray`; the chain's stages are the same on Ray,
tests/pipeline/test_streaming.py), so a stopped measurement leaves no Ray processes behind; `--ray`
runs it on a local Ray.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REPOS = ("pallets/click", "encode/httpx", "spf13/cobra", "go-chi/chi", "clap-rs/clap", "dtolnay/anyhow",
         "chalk/chalk", "colinhacks/zod", "square/javapoet", "libuv/libuv", "gabime/spdlog", "sindresorhus/ky")
"""The 12 repositories of the yield measurement (none is in swebench_dev.jsonl)."""
OUTCOMES = ("verified", "no_fail_to_pass", "patch_failed", "invalid_task", "env_failed", "tests_not_run", "timeout",
            "infra_error")
EXPLAINED = ("no_fail_to_pass", "tests_not_run")
DEFAULT_WORKDIR = Path("/work/bench/yield")
PROGRESS = "yield.progress.json"
_DOC_FILE = re.compile(r"(^|/)(docs?|\.github|examples?)/|\.(md|rst|txt|adoc)$|(^|/)(CHANGELOG|CHANGES|HISTORY|"
                       r"AUTHORS|LICENSE|NEWS|README)[^/]*$|(^|/)(\.gitignore|\.editorconfig)$", re.I)
_TEST_DEF = re.compile(r"^\s*(async\s+)?def\s+test\w*|^\s*func\s+(Test|Example|Benchmark|Fuzz)\w*|#\[test\]|"
                       r"#\[tokio::test|@Test\b|@ParameterizedTest\b|^\s*(it|test|describe)(\.\w+)?\s*\(|"
                       r"^\s*TEST(_CASE|_F|_P)?\s*\(|^\s*TEST_IMPL\s*\(|^\s*SECTION\s*\(")


# -- running ---------------------------------------------------------------------------------
def passes(args: argparse.Namespace) -> list[int]:
    """The windows (commits of HEAD) of the passes, ascending."""
    if args.last:
        return [args.last]
    return sorted({int(x) for x in args.passes.split(",") if x.strip()})


def write_config(args: argparse.Namespace, last: int) -> Path:
    """`WORKDIR/yield-<last>.yaml`: the local source over the repositories' mirrors (with
    `--ledger`, its finished units excluded: `excluded_ids`)."""
    local = []
    for repo in args.repos:
        git_dir = args.mirrors / repo.replace("/", "+") / "repo"
        if not git_dir.is_dir():
            raise SystemExit(f"no mirror for {repo} at {git_dir}")
        local.append({"repo": repo, "git_dir": str(git_dir), "single_commits": False, "max_commits": last})
    cfg = {"workers": args.workers, "use_ray": args.ray, "mirrors": [str(args.mirrors)],
           "repos": {"allow_clone": False}, "sources": {"github": None, "local": local}}
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.ledger is not None:
        excl = args.workdir / "ledger-excluded.txt"
        excl.write_text("".join(f"{i}\n" for i in excluded_ids(read_ledger(args.ledger), args.workdir)))
        cfg["sources"]["filter"] = {"exclude_ids_file": str(excl)}
    path = args.workdir / f"yield-{last}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def run(args: argparse.Namespace, config: Path) -> int:
    """`swemint run -c CONFIG -w WORKDIR [--set ...]`, output appended to WORKDIR/yield.log."""
    cmd = [sys.executable, "-m", "pipeline.cli", "run", "-c", str(config), "-w", str(args.workdir)]
    for s in args.set or []:
        cmd += ["--set", s]
    with (args.workdir / "yield.log").open("a") as log:
        log.write(f"\n# {' '.join(cmd)}\n")
        log.flush()
        return subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode


def read_progress(workdir: Path) -> dict:
    try:
        return json.loads((workdir / PROGRESS).read_text())
    except (OSError, ValueError):
        return {"passes_done": []}


def run_passes(args: argparse.Namespace) -> int:
    """Every pass in turn (a finished pass is run again: it costs a look at the state and
    mints what a retry policy names); returns the last nonzero exit code of `swemint run`."""
    rc = 0
    for last in passes(args):
        print(f"pass: last {last} commits of each repository", flush=True)
        code = run(args, write_config(args, last))
        if code:
            rc = code
            print(f"swemint run exited {code} in pass {last}; see {args.workdir / 'yield.log'}", flush=True)
            if code not in (0, 1):  # 1: the run ended but something stopped early; 2+: stop here
                return code
            continue
        prog = read_progress(args.workdir)
        prog["passes_done"] = sorted(set(prog["passes_done"]) | {last})
        (args.workdir / PROGRESS).write_text(json.dumps(prog) + "\n")
        emit(args)
    return rc


def running_pid(workdir: Path) -> int | None:
    """The pid in WORKDIR/yield.pid when that process is alive and is this script."""
    try:
        pid = int((workdir / "yield.pid").read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError, IndexError):
        return None
    return pid if "yield_local.py" in cmdline else None


def background(args: argparse.Namespace, argv: list[str]) -> int:
    """Start this command detached (see the module docstring) unless it already runs."""
    args.workdir.mkdir(parents=True, exist_ok=True)
    pid = running_pid(args.workdir)
    if pid is not None:
        print(f"running (pid {pid}; output {args.workdir / 'yield.out'}); the table so far:")
        emit(args)
        return 0
    child = [sys.executable, str(Path(__file__).resolve()), *[a for a in argv if a != "--background"],
             "--workdir", str(args.workdir)]
    with (args.workdir / "yield.out").open("a") as out:
        proc = subprocess.Popen(child, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    (args.workdir / "yield.pid").write_text(f"{proc.pid}\n")
    done = read_progress(args.workdir)["passes_done"]
    print(f"started pid {proc.pid} (passes {passes(args)}, finished before: {done or 'none'}); "
          f"output {args.workdir / 'yield.out'}, swemint run log {args.workdir / 'yield.log'}; "
          "run the same command again for the table so far (or to continue after a stop)")
    return 0


# -- the table ---------------------------------------------------------------------------------
def _added_tests(test_patch: str) -> int:
    """Test definitions the test_patch adds (Python, Go, Rust, Java, JS/TS, C/C++ forms)."""
    from unidiff import PatchSet

    try:
        return sum(1 for pf in PatchSet(test_patch) for h in pf for ln in h
                   if ln.is_added and _TEST_DEF.search(ln.value))
    except Exception:  # noqa: BLE001 - an unreadable patch explains itself elsewhere
        return 0


def _run_counts(idir: Path) -> dict[str, list[str]]:
    """side -> the test runs' notes of the trajectory (`15 tests, source=json, ...`)."""
    out: dict[str, list[str]] = defaultdict(list)
    try:
        lines = (idir / "trajectory.jsonl").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            step = json.loads(line)
        except ValueError:
            continue
        m = re.match(r"(before|after)#\d+$", str(step.get("rule", "")))
        if step.get("agent") == "verification" and m:
            out[m.group(1)].append(str(step.get("note", "")).split(",")[0])
    return dict(out)


def explain(res, inst, idir: Path) -> str:
    """Why a `no_fail_to_pass` / `tests_not_run` row is one, from what the row holds."""
    from envpool.patches import files_in_patch, is_test_path

    parts = []
    code = files_in_patch(inst.patch) if inst is not None else []
    if code and all(_DOC_FILE.search(p) for p in code):
        parts.append("the fix changes only docs/metadata (" + ", ".join(code[:4]) + ")")
    elif code:
        parts.append(f"fix: {', '.join(code[:4])}{' …' if len(code) > 4 else ''}")
    if inst is not None:
        tests = [p for p in files_in_patch(inst.test_patch)]
        added = _added_tests(inst.test_patch)
        kind = "test files" if all(is_test_path(p) for p in tests) else "files"
        parts.append(f"test_patch: {len(tests)} {kind}, adds {added} test definition(s)"
                     + ("" if added else " (edits existing tests or fixtures only)"))
    if res.outcome == "no_fail_to_pass":
        parts.append(f"{len(res.PASS_TO_PASS)} test(s) pass before and after, {len(res.flaky_tests)} flaky")
    runs = _run_counts(idir)
    if runs:
        parts.append("runs: " + "; ".join(f"{side} {', '.join(v)}" for side, v in runs.items()))
    if res.anomalies:
        parts.append("anomalies: " + "; ".join(res.anomalies[:2]))
    parts.append("minter: " + (res.reason or "-")[:240])
    return " | ".join(parts).replace("\n", " ")


def _units(state: Path) -> list[tuple]:
    """(key, repo, status, reason, row_json) of every decided unit in the crawl state `state`. While a pass
    runs, its `swemint run` holds DuckDB's write lock, so a second reader cannot open the file:
    then a copy (with its WAL) in a temporary folder is read instead — the state as of the
    copy; the running pass is not disturbed."""
    import shutil
    import tempfile

    import duckdb

    query = "SELECT key, repo, status, reason, row_json FROM outcomes WHERE kind <> 'repo'"
    try:
        with duckdb.connect(str(state), read_only=True) as db:
            return db.execute(query).fetchall()
    except duckdb.IOException:
        pass
    with tempfile.TemporaryDirectory(prefix="swemint-yield-") as tmp:
        copy = Path(tmp) / state.name
        shutil.copy2(state, copy)
        wal = state.with_name(state.name + ".wal")
        if wal.is_file():
            shutil.copy2(wal, copy.with_name(copy.name + ".wal"))
        with duckdb.connect(str(copy)) as db:  # not read-only: replaying the copied WAL writes
            return db.execute(query).fetchall()


def _instance_id(row_json: str | None) -> str | None:
    try:
        return json.loads(row_json).get("instance_id") if row_json else None
    except (ValueError, AttributeError):
        return None


def unit_lines(workdir: Path, repos: list[str], *, code: str = "", today: str = "") -> dict[str, dict]:
    """unit key -> one ledger line per decided unit of this work directory (module docstring):
    key, repo, status, reason, instance_id, outcome (None: not minted), seconds, explanation
    (`no_fail_to_pass` / `tests_not_run` rows), code, recorded. Units `excluded` by the ledger
    are left out (their line is the ledger's). A minted row with no unit in the state (a state
    from before) gets a line keyed by its instance id."""
    from pipeline.store import ResultStore

    state = workdir / "crawl" / "state.duckdb"
    units = _units(state) if state.is_file() else []
    store = ResultStore(workdir, read_only=True)
    results = {r.instance_id: r for r in store.results() if r.repo in repos}
    instances = store.instances() if any(r.outcome in EXPLAINED for r in results.values()) else {}
    out: dict[str, dict] = {}

    def line(key: str, repo: str, status: str, reason: str | None, iid: str | None) -> dict:
        res = results.get(iid) if iid else None
        why = (explain(res, instances.get(res.instance_id), store.dir(res.instance_id))
               if res is not None and res.outcome in EXPLAINED else None)
        return {"key": key, "repo": repo, "status": status, "reason": reason, "instance_id": iid,
                "outcome": res.outcome if res is not None else None,
                "seconds": res.timings.get("total") if res is not None else None,
                "explanation": why, "code": code, "recorded": today}

    seen = set()
    for key, repo, status, reason, row_json in units:
        if repo not in repos or reason == "excluded":
            continue
        iid = _instance_id(row_json) or (key if status == "accepted" else None)
        seen.add(iid)
        out[key] = line(key, repo, status, reason, iid)
    for iid, res in results.items():
        if iid not in seen:
            out[iid] = line(iid, res.repo, "accepted", None, iid)
    return out


def excluded_ids(ledger: dict[str, dict], workdir: Path) -> list[str]:
    """Instance ids of the ledger's units minted with a final outcome (not `infra_error`) that
    this work directory has not minted itself: a new machine does not mint them again."""
    from pipeline.store import ResultStore

    here = {r.instance_id for r in ResultStore(workdir, read_only=True).results()}
    return sorted(ln["instance_id"] for ln in ledger.values()
                  if ln.get("instance_id") and ln.get("outcome") not in (None, "infra_error")
                  and ln["instance_id"] not in here)


def read_ledger(path: Path | None) -> dict[str, dict]:
    """unit key -> ledger line ({} without a ledger or before its first line)."""
    from scripts.ledger import read_ledger as read

    return read(path, key="key") if path is not None else {}


def record_ledger(path: Path, workdir: Path, repos: list[str], code: str | None = None) -> dict[str, dict]:
    """Merge this work directory's unit lines into the ledger at `path` (`code`: the swemint
    commit that minted them, default this checkout's HEAD); returns the ledger."""
    import datetime as dt

    from scripts.ledger import head_commit, write_ledger

    led = read_ledger(path)
    led.update(unit_lines(workdir, repos, code=code or head_commit(),
                          today=dt.datetime.now(dt.timezone.utc).date().isoformat()))
    write_ledger(path, led)
    return led


def table(workdir: Path, repos: list[str], ledger: dict[str, dict] | None = None) -> tuple[list[dict], list[dict]]:
    """(one row per repository and a TOTAL row, one row per explained outcome); see the module
    docstring. The units are this work directory's, and the `ledger`'s that it has not decided
    or that it excluded (units measured on another machine)."""
    units = dict(ledger or {})
    units.update(unit_lines(workdir, repos))
    units = {k: u for k, u in units.items() if u["repo"] in repos}
    out = []
    for repo in repos:
        mine = [u for u in units.values() if u["repo"] == repo]
        minted = [u for u in mine if u["outcome"] is not None]
        outcomes = Counter(u["outcome"] for u in minted)
        accepted = sum(1 for u in mine if u["status"] == "accepted")
        verified = outcomes["verified"]
        secs = [u["seconds"] or 0.0 for u in minted]
        ver_secs = [u["seconds"] for u in minted if u["outcome"] == "verified" and u["seconds"] is not None]
        rejected = Counter(u["reason"] for u in mine if u["status"] == "rejected")
        out.append({"repo": repo, "mined": len(mine), "pr_like": len(mine) - rejected.get("not_pr_like", 0),
                    "accepted": accepted, "minted": len(minted), **{o: outcomes[o] for o in OUTCOMES},
                    "rejected": dict(rejected),
                    "yield": round(verified / accepted, 3) if accepted else None,
                    "yield_minted": round(verified / len(minted), 3) if minted else None,
                    "s_per_verified": round(sum(secs) / verified, 1) if verified else None,
                    "median_s_verified": round(statistics.median(ver_secs), 1) if ver_secs else None})
    tot = {k: sum(r[k] for r in out) for k in ("mined", "pr_like", "accepted", "minted", *OUTCOMES)}
    minted_all = [u for u in units.values() if u["outcome"] is not None]
    all_secs = sum(u["seconds"] or 0.0 for u in minted_all)
    ver_all = [u["seconds"] for u in minted_all if u["outcome"] == "verified" and u["seconds"] is not None]
    out.append({"repo": "TOTAL", **tot, "rejected": {},
                "yield": round(tot["verified"] / tot["accepted"], 3) if tot["accepted"] else None,
                "yield_minted": round(tot["verified"] / tot["minted"], 3) if tot["minted"] else None,
                "s_per_verified": round(all_secs / tot["verified"], 1) if tot["verified"] else None,
                "median_s_verified": round(statistics.median(ver_all), 1) if ver_all else None})
    explained = []
    if any(u["outcome"] in EXPLAINED for u in minted_all):
        from pipeline.store import ResultStore

        instances = ResultStore(workdir, read_only=True).instances()
        for u in sorted(minted_all, key=lambda u: u["key"]):
            if u["outcome"] in EXPLAINED:
                inst = instances.get(u["instance_id"])
                title = (inst.problem_statement.strip().splitlines() or [""])[0][:90] if inst is not None else ""
                explained.append({"instance_id": u["instance_id"], "outcome": u["outcome"], "title": title,
                                  "explanation": u.get("explanation") or "", "recorded": u.get("recorded") or ""})
    return out, explained


def spot(workdir: Path, repos: list[str], n: int) -> str:
    """Markdown of `n` verified rows spread over the repositories (round robin), for the check
    by hand: does the test_patch test what the patch changes?"""
    from envpool.patches import files_in_patch
    from pipeline.store import ResultStore

    store = ResultStore(workdir, read_only=True)
    instances = store.instances()
    per: dict[str, list] = defaultdict(list)
    for r in store.results():
        if r.outcome == "verified" and r.repo in repos:
            per[r.repo].append(r)
    picked = []
    while len(picked) < n and any(per.values()):
        for repo in repos:
            if per.get(repo) and len(picked) < n:
                picked.append(per[repo].pop(0))
    out = []
    for r in picked:
        inst = instances.get(r.instance_id)
        title = (inst.problem_statement.strip().splitlines() or [""])[0] if inst else ""
        out.append(f"### {r.instance_id}: {title}\n\n- patch: {', '.join(files_in_patch(inst.patch)) if inst else '-'}\n"
                   f"- test_patch: {', '.join(files_in_patch(inst.test_patch)) if inst else '-'}\n"
                   f"- FAIL_TO_PASS ({len(r.FAIL_TO_PASS)}): {', '.join(r.FAIL_TO_PASS[:8])}"
                   f"{' …' if len(r.FAIL_TO_PASS) > 8 else ''}\n- verdict by hand: \n")
    return "\n".join(out)


def markdown(rows: list[dict], explained: list[dict]) -> str:
    """The tables as Markdown."""
    cols = ["repo", "mined", "pr_like", "accepted", "minted", *OUTCOMES, "yield", "yield_minted", "s_per_verified",
            "median_s_verified"]

    def cell(v) -> str:
        return "-" if v is None else str(v).replace("|", "\\|")

    text = "| " + " | ".join(c.replace("_", " ") for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    text += "".join("| " + " | ".join(cell(r.get(c)) for c in cols) + " |\n" for r in rows)
    if explained:
        text += "\n| instance | outcome | title | explanation |\n|---|---|---|---|\n"
        text += "".join(f"| {cell(e['instance_id'])} | {e['outcome']} | {cell(e['title'])} | {cell(e['explanation'])} |\n"
                        for e in explained)
    return text


def emit(args: argparse.Namespace) -> None:
    """Write WORKDIR/yield.{json,md} (and spot.md) and print the tables."""
    ledger = record_ledger(args.ledger, args.workdir, args.repos, args.code) if args.ledger is not None else None
    rows, explained = table(args.workdir, args.repos, ledger)
    done = read_progress(args.workdir)["passes_done"]
    (args.workdir / "yield.json").write_text(json.dumps({"passes_done": done, "repositories": rows,
                                                         "explained": explained}, indent=1) + "\n")
    text = f"passes finished: {done or 'none'}\n\n" + markdown(rows, explained)
    (args.workdir / "yield.md").write_text(text)
    print(text, flush=True)
    if args.spot:
        (args.workdir / "spot.md").write_text(spot(args.workdir, args.repos, args.spot))
        print(f"spot check: {args.workdir / 'spot.md'}")


def main(argv: list[str] | None = None) -> int:
    """Run the passes (unless --table-only; detached with --background) and print the tables;
    exit code of `swemint run` (0 = every pass ran)."""
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="root of owner+name/repo mirrors")
    ap.add_argument("--repos", nargs="+", default=list(REPOS))
    ap.add_argument("--passes", default="30,100,300", help="windows (first-parent commits of HEAD), one run each")
    ap.add_argument("--last", type=int, default=None, help="one pass over this many commits (= --passes N)")
    ap.add_argument("--workers", type=int, default=1, help="build slots")
    ap.add_argument("--ray", action=argparse.BooleanOptionalAction, default=False)
    ap.add_argument("--set", action="append", help="extra `swemint run --set` overrides")
    ap.add_argument("--table-only", action="store_true", help="only print the tables of WORKDIR")
    ap.add_argument("--ledger", type=Path, default=None,
                    help="a units ledger kept across machines (e.g. data/results/yield.jsonl; module docstring)")
    ap.add_argument("--code", default=None,
                    help="with --ledger: the swemint commit the units were minted with (default: this checkout's HEAD)")
    ap.add_argument("--spot", type=int, default=0, help="also write WORKDIR/spot.md with N verified rows")
    ap.add_argument("--background", action="store_true", help="run detached; again: the table so far")
    args = ap.parse_args(argv)
    args.workdir = args.workdir.absolute()
    args.ledger = args.ledger.absolute() if args.ledger is not None else None
    if args.table_only:
        emit(args)
        return 0
    if args.background:
        return background(args, argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    lock = (args.workdir / "yield.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print(f"another yield_local.py runs on {args.workdir}; the table so far:")
        emit(args)
        return 0
    (args.workdir / "yield.pid").write_text(f"{os.getpid()}\n")
    rc = run_passes(args)
    emit(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
