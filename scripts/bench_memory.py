r"""The memory ablation of issue 30: three arms at the same commit, at the same time, on the same
ids (none dropped), then a second pass with learning carried over.

    # the id list (the rule is written into the file's header)
    .venv/bin/python scripts/bench_memory.py select -i ../shared/data/swebench_dev.jsonl \
        --exclude data/measurement_ids.txt --exclude ../shared/data/dev_core.txt -o data/ablation_ids.txt
    # run (background, resumable: a rerun skips finished rows and passes)
    nohup .venv/bin/python scripts/bench_memory.py run -i ../shared/data/swebench_dev.jsonl -m /work/.mirror \
        --ids-file data/ablation_ids.txt --out /work/runs/i30-ablation --ledgers data/results > run.log 2>&1 &
    # pass 2 only, when pass 1's work directories are lost but it wrote no lesson: --first-pass 2
    # the report (any time; what finished so far)
    .venv/bin/python scripts/bench_memory.py report --out /work/runs/i30-ablation [--json r.json]

Arms (each one `swemint bench`, 1 worker, in-process, its own work directory and memory file):
- `a` memory off: hand-written entries only (seeds and rules), `mint.memory.learn=false`;
- `b` learning on, starting from the hand-written entries;
- `c` learning on, starting from the experience of earlier runs: with `--c-memory FILE` the
  memory a measurement run learned (its `WORKDIR/memory/experiences.duckdb`: lessons with actions,
  scored counters); without it the results ledgers (`data/results/*.jsonl`: one line per instance,
  outcome and reason, no trajectory) give one negative entry per (repository, failure signature)
  with that repository as its context. Such entries have no actions, and retrieval, the
  before-plan gate and the repair step all pass over negative entries without actions: from the
  ledgers alone arm c can differ from arm b only through what the pass itself learns.
Pass 2 runs the same ids again in new work directories with the same memory files (a: unchanged).
Once every arm of a pass finished, its images are removed (`swemint pool prune --all` per work
directory; `--keep-images` keeps them): pass 2 reuses none of them and they fill the disk.
Each arm's memory file is copied before and after every pass (`memory-<arm>-before-passN`,
`-after-passN`) and the report counts what each copy holds (`memory_counts`), so whether a pass
wrote lessons or scored uses is read off the files. `commit.txt` gets a line per start (commit,
`+dirty` for uncommitted changes, the first pass): the report lists every commit the arms ran at.

The report per arm and pass: instances finished, verified, rounds, Execution's repairs (and those
by memory), CPU-seconds per verified instance (`res.cost.cpu_s`: containers + engine + process),
and the uses of memory with their scores (`use:` / `score:` steps of the trajectories: by stage
and by the entry's source), plus per-instance outcome differences against arm `a` of the same
pass, over the ids every arm of that pass finished (and how many are not finished yet).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.diff_runs import rows_of  # noqa: E402
from scripts.loop_stats import row_facts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("a", "b", "c")
LANGUAGES = ("php", "ruby", "go", "c", "python")
RULE = """# The memory ablation of issue 30 (scripts/bench_memory.py select). Rule: instances of
# swebench_dev.jsonl not listed in {excluded}; languages {languages};
# per language the {repos} repositories with the most such instances (ties: name) among those with
# at least {per} such instances whose mirror is on this host (/work/.mirror; the fetch limit of 500 MB
# leaves out django/django, matplotlib/matplotlib, scikit-learn/scikit-learn); per repository the
# {per} instances with the smallest SHA-1 of their instance_id.
"""


def _ids(path: Path) -> set[str]:
    return {x.split("#")[0].strip() for x in path.read_text().splitlines() if x.split("#")[0].strip()}


def select(instances: Path, exclude: list[Path], mirrors: Path, languages=LANGUAGES, repos: int = 2,
           per: int = 3) -> list[str]:
    """The ablation ids by the rule of `RULE` (deterministic)."""
    skip = set().union(*(_ids(p) for p in exclude)) if exclude else set()
    mirrored = {d.name.lower() for d in mirrors.iterdir()} if mirrors.is_dir() else set()
    by: dict[tuple[str, str], list[str]] = defaultdict(list)
    for line in instances.read_text().splitlines():
        r = json.loads(line)
        if r["instance_id"] not in skip and r.get("language") in languages:
            by[(r["language"], r["repo"])].append(r["instance_id"])
    out = []
    for lang in languages:
        cands = sorted(((repo, v) for (lg, repo), v in by.items() if lg == lang and len(v) >= per
                        and repo.replace("/", "+").lower() in mirrored), key=lambda x: (-len(x[1]), x[0]))
        for _repo, v in cands[:repos]:
            out += sorted(v, key=lambda i: hashlib.sha1(i.encode()).hexdigest())[:per]
    return out


def distil_ledgers(ledgers: list[Path], path: Path) -> int:
    """Arm c's starting memory at `path`: the hand-written entries, and per (repository,
    failure signature) of the ledgers' unverified lines a negative learned entry keyed by that
    repository. Returns the number of learned entries."""
    from agents.memory.experience import EntryContext, Experience, Provenance
    from agents.memory.experience_store import ExperienceStore
    from agents.memory.text import signature_for

    found: dict[str, Experience] = {}
    for led in ledgers:
        for line in led.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            reason, lang = row.get("reason") or "", row.get("language") or "python"
            if row.get("outcome") in ("verified", None) or len(reason) < 20:
                continue
            sig = signature_for(reason)
            eid = "learned-ledger-" + hashlib.sha1(f"{row['repo']}|{sig}".encode()).hexdigest()[:12]
            e = found.get(eid)
            if e is None:
                found[eid] = Experience(id=eid, ecosystem=lang, problem=f"{row['outcome']}: {reason}"[:600],
                                        solution="no fix found (an earlier run's result ledger)", error_signature=sig,
                                        tags=["learned", "ledger", row["outcome"]], negative=True, times_applied=1,
                                        provenance=Provenance(source="learned", instance_ids=[row["instance_id"]]),
                                        context=EntryContext(repos=[row["repo"]]))
            else:
                e.times_applied += 1
                e.provenance.instance_ids.append(row["instance_id"])
    with ExperienceStore(path) as store:
        store.load_seed()
        store.add_many(found.values(), keep_counters=False)
    return len(found)


def _bench(arm: str, n: int, a) -> subprocess.Popen:
    out = Path(a.out)
    work = out / f"{arm}-pass{n}"
    sets = ["--set", f"mint.memory.path={out / f'memory-{arm}.duckdb'}"]
    if arm == "a":
        sets += ["--set", "mint.memory.learn=false"]
    cmd = [str(ROOT / ".venv/bin/swemint"), "bench", "-i", str(a.instances), "-m", str(a.mirrors), "-w", str(work),
           "--ids-file", str(a.ids_file), "--workers", "1", "--no-ray", *sets]
    log = (out / f"{arm}-pass{n}.log").open("a")
    log.write(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {' '.join(cmd)}\n")
    log.flush()
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def run(a) -> None:
    """Both passes, the three arms of a pass at the same time (module docstring)."""
    if not 1 <= a.first_pass <= a.passes:
        raise SystemExit(f"bench_memory: --first-pass {a.first_pass} must be between 1 and --passes {a.passes}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "commit.txt").open("a") as f:  # one line per start: the report shows every commit the arms ran at
        f.write(f"{_commit()} first_pass={a.first_pass} {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
    c_mem = out / "memory-c.duckdb"
    if not c_mem.exists():
        if a.c_memory:
            shutil.copyfile(a.c_memory, c_mem)
            print(f"arm c: starts from {a.c_memory} ({memory_counts(c_mem)})", flush=True)
        else:
            n = distil_ledgers(sorted(Path(a.ledgers).glob("*.jsonl")), c_mem)
            print(f"arm c: {n} entries distilled from the ledgers", flush=True)
    for n in range(a.first_pass, a.passes + 1):
        for arm in ARMS:  # the memory each arm starts the pass with (a file made at its first use: none yet)
            _snapshot(out, arm, f"before-pass{n}")
        procs = {arm: _bench(arm, n, a) for arm in ARMS}
        for arm, p in procs.items():
            print(f"pass {n} arm {arm}: exit {p.wait()}", flush=True)
        for arm in ARMS:
            _snapshot(out, arm, f"after-pass{n}")
        if not a.keep_images:
            for arm in ARMS:
                _prune(out / f"{arm}-pass{n}")


def _prune(work: Path) -> None:
    """Remove every image of the finished pass's work directory `work` (``swemint pool prune
    --all``: its environments and snapshots; the rows, trajectories and memory stay). The next
    pass runs in new work directories and reuses none of them, and three arms' images of one pass
    took ~40 GB of this host's disk: without this, pass 2 ended `infra_error` on the free-disk
    guard (`mint.limits.min_free_disk_bytes`). A failure is printed, never raised."""
    cmd = [str(ROOT / ".venv/bin/swemint"), "pool", "prune", "-w", str(work), "--all"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
    print(f"{work.name}: images pruned (exit {done.returncode}) {tail[0][:200]}", flush=True)


def _commit() -> str:
    """`git rev-parse --short HEAD` of this checkout, with `+dirty` when it has uncommitted changes."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def _snapshot(out: Path, arm: str, tag: str) -> None:
    """Copy arm's memory file to `memory-<arm>-<tag>.duckdb` (nothing when the file does not exist yet)."""
    src = out / f"memory-{arm}.duckdb"
    if src.is_file():
        shutil.copyfile(src, out / f"memory-{arm}-{tag}.duckdb")


def memory_counts(path: Path) -> dict:
    """What a memory file holds: entries by source (seed / rule / learned), learned entries with
    actions, and the counters' sums (`times_applied`, `times_worked`) -- two snapshots that differ
    here show a pass that wrote lessons or scored uses. Opens the file read-only."""
    from agents.memory.experience_store import ExperienceStore

    with ExperienceStore(path, read_only=True) as s:
        entries = s.all()
    return {"entries": len(entries), "by_source": dict(Counter(e.provenance.source for e in entries)),
            "learned_with_actions": sum(1 for e in entries if e.provenance.source == "learned" and (e.actions or e.moves)),
            "applied": sum(e.times_applied for e in entries), "worked": sum(e.times_worked for e in entries)}


def _memory_steps(res) -> list[dict]:
    p = Path(res.trajectory_path) if res.trajectory_path else None
    if p is None or not p.is_file():
        return []
    out = []
    for line in p.read_text(errors="replace").splitlines():
        try:
            s = json.loads(line)
        except ValueError:
            continue
        if s.get("agent") == "memory" or str(s.get("rule", "")).startswith("memory:"):
            out.append(s)
    return out


def _source(entry: str) -> str:
    return "rule" if entry.startswith("rule-") else "learned" if entry.startswith("learned-") else "seed"


def arm_stats(rows: dict, ids: set[str] | None = None) -> dict:
    """The numbers of one arm and pass (module docstring) over `ids` (None: every row)."""
    rows = {k: v for k, v in rows.items() if ids is None or k in ids}
    verified = [r for r in rows.values() if r.outcome == "verified"]
    facts = [row_facts(r) for r in rows.values()]
    cpu = [r.cost.cpu_s for r in rows.values() if getattr(r, "cost", None) is not None and r.cost.cpu_s is not None]
    uses: Counter[str] = Counter()  # `use:` steps by stage; a score with no use step (setup-step) counts as its own use
    scores: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_entry: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    before = 0
    for r in rows.values():
        for s in _memory_steps(r):
            rule = str(s.get("rule", ""))
            if rule.startswith("use:"):
                uses[json.loads(s.get("note") or "{}").get("stage", "?")] += 1
            elif rule.startswith("score:") and s.get("exit_code") is None:
                continue  # "no round": the loop ended before a round the use shaped (not a score)
            elif rule.startswith("score:"):
                entry = rule[len("score:"):]
                stage = json.loads(s.get("note") or "{}").get("stage", "?")
                if stage == "setup-step":
                    uses[stage] += 1
                ok = int(s.get("exit_code") == 0)
                for key in (f"{stage}/{_source(entry)}",):
                    scores[key][0] += ok
                    scores[key][1] += 1
                per_entry[entry][0] += ok
                per_entry[entry][1] += 1
            elif rule == "before-plan" and "applied: none" not in str(s.get("note", "")):
                before += 1
    return {"finished": len(rows), "verified": len(verified),
            "outcomes": dict(Counter(r.outcome for r in rows.values())),
            "rounds": sum(f["rounds"] for f in facts), "repairs": sum(f["repairs"] for f in facts),
            "memory_repairs": sum(f["memory_repairs"] for f in facts), "before_plan_changes": before,
            "cpu_s": round(sum(cpu), 1), "cpu_s_per_verified": round(sum(cpu) / len(verified), 1) if verified else None,
            "rows_without_cost": len(rows) - len(cpu),
            "uses_by_stage": dict(uses), "scores_by_stage_source": {k: f"{w}/{n}" for k, (w, n) in sorted(scores.items())},
            "entries_scored": {k: f"{w}/{n}" for k, (w, n) in sorted(per_entry.items(), key=lambda x: -x[1][1])[:15]}}


REPORT_HELP = """\
Prints one JSON object on stdout (indented); --json FILE writes the same object to FILE too.
Keys: `commit` (the commit the arms ran at, a list when commit.txt names several, [] without commit.txt), `memory` (per
memory-file copy under --out: `memory_counts`), and per pass found (`pass1`, `pass2`, ... while
`<arm>-pass<n>` folders exist):
  ids                    how many ids --ids-file lists; null without --ids-file (every finished row counts)
  finished_by_every_arm  how many ids every arm of the pass finished (within --ids-file's ids)
  a / b / c              per arm: `all` and `common`, each the arm's numbers (`arm_stats`):
    all                  over every row the arm finished in that pass (within --ids-file's ids)
    common               over the ids every arm of the pass finished: the arms compared on the same rows
      rows_without_cost  (in both) rows with no `cost.cpu_s` (e.g. `infra_error` rows that never started):
                         left out of `cpu_s`; `cpu_s_per_verified` is `cpu_s` / every verified row
  differences            the common ids whose outcome differs between arms
"""


def report(out: Path, ids_file: Path | None) -> dict:
    """Every arm and pass found under `out`, over all ids and over those every arm of the pass finished."""
    wanted = _ids(ids_file) if ids_file else None
    lines = (out / "commit.txt").read_text().split("\n") if (out / "commit.txt").exists() else []
    commits = sorted({ln.split()[0] for ln in lines if ln.strip()})
    rep: dict = {"commit": commits[0] if len(commits) == 1 else commits,
                 "memory": {p.stem: memory_counts(p) for p in sorted(out.glob("memory-*.duckdb"))}}
    n = 0
    while any((out / f"{arm}-pass{n + 1}").is_dir() for arm in ARMS):  # every pass run wrote (`run --passes`)
        n += 1
        rows = {arm: rows_of(out / f"{arm}-pass{n}") if (out / f"{arm}-pass{n}").is_dir() else {} for arm in ARMS}
        if not any(rows.values()):
            continue
        common = set.intersection(*(set(r) for r in rows.values()))
        if wanted is not None:
            common &= wanted
        p = {"ids": len(wanted) if wanted is not None else None, "finished_by_every_arm": len(common)}
        for arm in ARMS:
            p[arm] = {"all": arm_stats(rows[arm], wanted), "common": arm_stats(rows[arm], common)}
        diffs = []
        for iid in sorted(common):
            outs = {arm: rows[arm][iid].outcome for arm in ARMS}
            if len(set(outs.values())) > 1:
                diffs.append({"instance_id": iid, **outs})
        p["differences"] = diffs
        rep[f"pass{n}"] = p
    return rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("-i", "--instances", type=Path, required=True)
    s.add_argument("--exclude", type=Path, action="append", default=[])
    s.add_argument("-m", "--mirrors", type=Path, default=Path("/work/.mirror"))
    s.add_argument("-o", "--output", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("-i", "--instances", type=Path, required=True)
    r.add_argument("-m", "--mirrors", type=Path, required=True)
    r.add_argument("--ids-file", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--ledgers", type=Path, default=ROOT / "data" / "results")
    r.add_argument("--passes", type=int, default=2)
    r.add_argument("--c-memory", type=Path, help="arm c starts from this memory file (e.g. the "
                   "WORKDIR/memory/experiences.duckdb a measurement run learned) instead of the ledgers' entries")
    r.add_argument("--first-pass", type=int, default=1,
                   help="start at this pass (its memory files as they are in --out, or made new as for pass 1 "
                        "when absent: right only when the earlier passes wrote no lesson, which the report's "
                        "memory counts show); for a run whose work directories were lost")
    r.add_argument("--keep-images", action="store_true",
                   help="keep each pass's images (default: removed once every arm of the pass finished)")
    p = sub.add_parser("report", help="the arms' numbers so far, as JSON", description=REPORT_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="the run's directory (`run --out`)")
    p.add_argument("--ids-file", type=Path,
                   help="count only these ids (default: every finished row; the report's `ids` is then null)")
    p.add_argument("--json", type=Path, help="also write the same JSON object to this file")
    a = ap.parse_args(argv)
    if a.cmd == "select":
        ids = select(a.instances, a.exclude, a.mirrors)
        header = RULE.format(excluded=", ".join(x.name for x in a.exclude) or "nothing",
                             languages=", ".join(LANGUAGES), repos=2, per=3)
        a.output.write_text(header + "".join(i + "\n" for i in ids))
        print(f"{len(ids)} ids -> {a.output}")
    elif a.cmd == "run":
        run(a)
    else:
        rep = report(a.out, a.ids_file)
        text = json.dumps(rep, indent=1)
        if a.json:
            a.json.write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
