r"""A results ledger: the scored summary of every finished instance of a long measurement, kept in
git (`data/results/*.jsonl`) so the measurement accumulates across sessions and machines — a
bench work directory (images, rows, logs) is lost with its machine, the ledger is not.

    # after (or during) a bench run: add or replace the lines of every finished row
    .venv/bin/python scripts/ledger.py record -i ../shared/data/swebench_dev.jsonl \
        --workdir work/gen --ledger data/results/gen-defaults.jsonl [--code REV]

    # on a new machine: the ids of the set the ledger does not have yet, to hand to bench
    .venv/bin/python scripts/ledger.py remaining --ids-file data/measurement_ids.txt \
        --ids-file ../shared/data/dev_core.txt --ledger data/results/gen-defaults.jsonl > todo.txt

    # a memory arm of issue 9 (off / after_failure): the ids it must run — those where the
    # defaults arm's memory acted, plus a control sample where it did not (see `arm_todo`)
    .venv/bin/python scripts/ledger.py arm-todo --arm off --defaults data/results/gen-defaults.jsonl \
        --arm-ledger data/results/gen-memory-off.jsonl --ids-file data/measurement_ids.txt > off.txt

    # the report over ledger and work directory together
    .venv/bin/python scripts/measure_report.py -i ... --workdir work/gen \
        --ledger data/results/gen-defaults.jsonl --ids-file data/measurement_ids.txt

A line is one instance, JSON: the fields of `scripts.measure_report.scored` (instance_id, repo,
language, outcome, f2p_recall, f2p_precision, f2p_missing, f2p_extra (counts), exact,
p2p_agreement, seconds, test_seconds, reason cut to 300 characters, image, image_id), the loop
facts of `scripts.loop_stats.row_facts` (round, rounds, repairs, memory_repairs,
before_changes, feedback, reused), `image_bytes` (the image's unique bytes on the engine at
record time — the row's image, else the work directory pool's record — None without one),
`code` (the swemint commit that ran it, `--code`, default this checkout's HEAD), `recorded`
(UTC date) and the row's cost (`cost_facts`: phase timings, container / engine / process / host
CPU-seconds, CPU by phase, the floor, load at start and end, cores, slots, runs by kind, the
verification policy). No test ids, patches, logs or anything else of the repository: only numbers and
the minter's one-line reason. Lines are sorted by instance_id; a
new record of an id replaces the old line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.instances import load_and_select, read_ids_file  # noqa: E402
from scripts.diff_runs import rows_of  # noqa: E402
from scripts.loop_stats import memory_acts, row_facts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REASON_CHARS = 300
DROP = ("finished", "not_run", "network_bound", "gold_has_p2p")
"""`scored` fields a ledger line does not keep: they are facts of the report's inputs, not of
the run (`finished` is implied, the network-bound list and the gold lists are re-read)."""


def read_ledger(path: Path, key: str = "instance_id") -> dict[str, dict]:
    """`key` (default the instance id; the yield ledger's is the unit `key`) -> line of a ledger
    file ({} when it does not exist).

    Raises ValueError naming the file and line number of a line that is not a JSON object with
    a non-empty `key`."""
    out: dict[str, dict] = {}
    if not path.is_file():
        return out
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{path}:{n}: not JSON: {e}") from None
        if not isinstance(line, dict) or not line.get(key):
            raise ValueError(f"{path}:{n}: a ledger line is a JSON object with a non-empty {key!r}")
        out[line[key]] = line
    return out


def read_ledgers(paths: list[Path]) -> dict[str, dict]:
    """The lines of several ledgers; for an id in more than one, the first file's line."""
    out: dict[str, dict] = {}
    for p in paths:
        for iid, line in read_ledger(p).items():
            out.setdefault(iid, line)
    return out


def write_ledger(path: Path, lines: dict[str, dict]) -> None:
    """Write `lines` to `path` sorted by instance id, one compact JSON object a line (atomic:
    a temporary file renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(lines[i], sort_keys=True, default=str) + "\n" for i in sorted(lines)))
    tmp.replace(path)


def head_commit() -> str:
    """This checkout's HEAD commit ("" outside git)."""
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def lines_of(instances: Path, workdir: Path, ids: list[str] | None = None, *, code: str = "",
             df: dict | None = None, today: str | None = None) -> dict[str, dict]:
    """instance id -> ledger line for every finished row of `workdir` (only `ids` when given)
    whose instance is in `instances`. `df`: a `client.df()` dict for `image_bytes` (None: the
    field is None)."""
    from scripts.measure_report import pool_images, scored, unique_sizes  # the report's, one definition

    rows = rows_of(workdir)
    wanted = [i for i in (ids if ids is not None else sorted(rows)) if i in rows]
    if not wanted:
        return {}
    gold = {i.instance_id: i for i in load_and_select(instances, ids=wanted).instances}
    sizes, tags = unique_sizes(df) if df is not None else ({}, {})
    pool = pool_images([workdir])[0] if df is not None else {}
    today = today or dt.datetime.now(dt.timezone.utc).date().isoformat()
    out = {}
    for row in scored(wanted, gold, rows, {}, [workdir]):
        res = rows[row["instance_id"]]
        line = {k: v for k, v in row.items() if k not in DROP}
        line["reason"] = (line.get("reason") or "")[:REASON_CHARS]
        line.update(row_facts(res))
        line.update(cost_facts(res))
        pid, ptag = pool.get(row["instance_id"], ("", ""))
        cands = [line.get("image_id"), tags.get(line.get("image") or ""), pid, tags.get(ptag or "")]
        line["image_bytes"] = next((sizes[c] for c in cands if c and sizes.get(c) is not None), None)
        line.update(code=code, recorded=today)
        out[row["instance_id"]] = line
    return out


def cost_facts(res) -> dict:
    """A row's cost as ledger fields (issue 26): `phase_s` (wall seconds by phase: the row's
    `timings`), and from `res.cost` (`agents.models.CostRecord`; None in rows made before it):
    `cpu_s` (container + engine + process), `container_cpu_s`, `engine_cpu_s`, `process_cpu_s`,
    `image_cpu_s`, `phase_cpu_s`, `floor_cpu_s`, `host_cpu_s`, `load_start`, `load_end`, `cores`, `slots`,
    `runs` (test runs and builds by kind) and `policy`."""
    out: dict = {"phase_s": dict(res.timings)}
    c = getattr(res, "cost", None)
    keys = ("cpu_s", "container_cpu_s", "engine_cpu_s", "process_cpu_s", "image_cpu_s", "phase_cpu_s", "floor_cpu_s",
            "host_cpu_s", "load_start", "load_end", "cores", "slots", "policy")
    if c is None:
        return {**out, **{k: None for k in keys}, "runs": None}
    out.update({k: getattr(c, k) for k in keys})
    kinds: dict[str, int] = {}
    for r in c.runs:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    out["runs"] = kinds
    return out


def record(instances: Path, workdir: Path, ledger: Path, ids: list[str] | None = None, *,
           code: str = "", df: dict | None = None) -> tuple[int, int]:
    """Merge the finished rows of `workdir` into `ledger`; returns (lines written or replaced,
    lines in the ledger after)."""
    old = read_ledger(ledger)
    new = lines_of(instances, workdir, ids, code=code, df=df)
    old.update(new)
    write_ledger(ledger, old)
    return len(new), len(old)


def remaining(ids: list[str], ledgers: list[Path]) -> list[str]:
    """The ids of `ids`, in order, that no ledger has a line for."""
    have = read_ledgers(ledgers)
    return [i for i in ids if i not in have]


def control_sample(ids: list[str], share: float, least: int) -> list[str]:
    """A deterministic sample of `ids`: the max(`least`, ceil(`share` * len)) ids (at most all)
    with the smallest SHA-1 of the id, in the order of `ids` (the same ids on every machine, not
    a prefix of any one repository)."""
    n = min(len(ids), max(least, math.ceil(share * len(ids))))
    chosen = set(sorted(ids, key=lambda i: hashlib.sha1(i.encode()).hexdigest())[:n])
    return [i for i in ids if i in chosen]


def arm_todo(ids: list[str], defaults: Path, arm_ledger: Path, arm: str, *, share: float = 0.1,
             least: int = 5, apart: set[str] | frozenset = frozenset()) -> tuple[list[str], dict]:
    """The ids memory arm `arm` (`off` / `after_failure`) still has to run, in `ids` order, and
    counts for the log.

    An arm differs from the defaults arm (memory before and after failure) only where the
    defaults run used what the arm removes (`scripts.loop_stats.memory_acts` of its ledger line);
    elsewhere the arm's run takes the same decisions, and the report carries the defaults line
    (`measure_report.py --carry`). So the arm runs (1) every id where the defaults' memory acted
    and (2) a control sample of the others (`control_sample`, `share` / `least`), whose measured
    outcomes check the carry. Ids the defaults ledger lacks are not listed (counted as
    `no_defaults`: run the defaults arm first); ids the arm ledger has are done; ids in `apart`
    (network-bound: set apart from every measurement) are skipped."""
    base = read_ledger(defaults)
    done = read_ledger(arm_ledger)
    ids = [i for i in ids if i not in apart]
    have = [i for i in ids if i in base]
    acted = [i for i in have if memory_acts(base[i], arm)]
    quiet = [i for i in have if i not in set(acted)]
    control = control_sample(quiet, share, least)
    want = set(acted) | set(control)
    todo = [i for i in ids if i in want and i not in done]
    return todo, {"ids": len(ids), "no_defaults": len(ids) - len(have), "acted": len(acted),
                  "control": len(control), "done": len(want & set(done)), "todo": len(todo)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="merge a work directory's finished rows into a ledger")
    r.add_argument("-i", "--instances", required=True, type=Path)
    r.add_argument("--workdir", required=True, type=Path)
    r.add_argument("--ledger", required=True, type=Path)
    r.add_argument("--ids-file", type=Path, help="only these ids (default: every finished row)")
    r.add_argument("--code", default=None, help="the swemint commit that ran (default: this checkout's HEAD)")
    r.add_argument("--no-docker", action="store_true", help="leave image_bytes empty")
    m = sub.add_parser("remaining", help="ids of a set that no ledger has")
    m.add_argument("--ids-file", required=True, type=Path, action="append",
                   help="the set (repeatable: the union, in order, each id once)")
    m.add_argument("--ledger", required=True, type=Path, action="append")
    t = sub.add_parser("arm-todo", help="ids a memory arm must run (where the defaults' memory acted, plus controls)")
    t.add_argument("--arm", required=True, choices=["off", "after_failure"])
    t.add_argument("--defaults", required=True, type=Path, help="the defaults arm's ledger")
    t.add_argument("--arm-ledger", required=True, type=Path, help="the arm's own ledger (ids it has are done)")
    t.add_argument("--ids-file", required=True, type=Path, action="append", help="the set (repeatable)")
    t.add_argument("--control-share", type=float, default=0.1, help="share of the quiet ids run as controls")
    t.add_argument("--control-least", type=int, default=5, help="at least this many controls")
    t.add_argument("--network-bound", type=Path, default=ROOT / "data" / "network_bound.txt",
                   help="ids set apart, skipped (default: data/network_bound.txt)")
    a = ap.parse_args(argv)
    if a.cmd == "arm-todo":
        ids = list(dict.fromkeys(i for f in a.ids_file for i in read_ids_file(f)))
        from scripts.measure_report import read_network_bound

        todo, counts = arm_todo(ids, a.defaults, a.arm_ledger, a.arm, share=a.control_share,
                                least=a.control_least, apart=set(read_network_bound(a.network_bound)))
        print(f"arm {a.arm}: " + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)
        try:
            for i in todo:
                print(i)
        except BrokenPipeError:
            sys.stderr.close()
        return 0
    if a.cmd == "remaining":
        ids = list(dict.fromkeys(i for f in a.ids_file for i in read_ids_file(f)))
        try:
            for i in remaining(ids, a.ledger):
                print(i)
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            sys.stderr.close()
        return 0
    df = None
    if not a.no_docker:
        from scripts.measure_report import docker_df

        df, note = docker_df()
        if df is None:
            print(f"ledger: {note}; image_bytes left empty", file=sys.stderr)
    ids = read_ids_file(a.ids_file) if a.ids_file else None
    n, total = record(a.instances, a.workdir, a.ledger, ids, code=a.code or head_commit(), df=df)
    print(f"ledger {a.ledger}: {n} line(s) recorded, {total} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
