r"""CPU-seconds per verified instance, today's policy against issue 26's, paired per instance.

    # both arms at once on this host (background-safe, resumable: a rerun skips what finished)
    mkdir -p /work/runs/bench-cost && nohup .venv/bin/python scripts/bench_cost.py run \
        -i /work/shared/data/swebench_dev.jsonl -m /work/.mirror -o /work/runs/bench-cost \
        > /work/runs/bench-cost/bench.log 2>&1 &
    # the same with 2 build slots per arm, then `--reverify` of each arm's verified rows (warm)
    .venv/bin/python scripts/bench_cost.py run ... --slots 2
    .venv/bin/python scripts/bench_cost.py run ... --reverify
    # keep the pairs in git (a bench folder is lost with its machine), then on a new machine run
    # only the ids not paired yet and report over both
    .venv/bin/python scripts/bench_cost.py report ... --save-pairs data/results/bench-cost-pairs.jsonl
    .venv/bin/python scripts/bench_cost.py run ... --pairs-ledger data/results/bench-cost-pairs.jsonl
    .venv/bin/python scripts/bench_cost.py report ... --pairs-ledger data/results/bench-cost-pairs.jsonl
    # the tables, printed and written to OUT/report.json and OUT/report.md (--write-to DIR: there
    # instead, e.g. for a folder you may not write); works on partial runs
    .venv/bin/python scripts/bench_cost.py report -i /work/shared/data/swebench_dev.jsonl -o /work/runs/bench-cost

Arms (`ARMS`): `today` sets the policy before issue 26 through configuration
(`mint.verify.policy=fixed`: 2 + 3 full runs; `mint.verify.compile_once=false`;
`mint.images.warm=false`: the toolchain images without Go's compiled standard library or
python3; `mint.cache.warm=false`: no download caches carried between a repository's builds),
`new` runs the defaults (adaptive verification, compile once, warm images and caches). Both arms
run at the same time, each its own `swemint bench --no-ray` process and work directory
(`OUT/<arm>-s<slots>`, run id `bench-cost-<arm>-s<slots>`, `--run-prefix` for another prefix), over the same ordered id list
(default `data/bench_cost_ids.txt`: the 48-instance core set, 10 languages), so host load hits
both alike. `--reverify` copies each arm's rows and pool into `OUT/<arm>-s<slots>-reverify` and
re-verifies its verified rows in their pooled images (no setup); ids already re-verified there
(a row finished after the copy) are skipped on a rerun.

Every row carries its cost (`InstanceResult.cost`, `agents.cost`): container CPU-seconds by
phase (cgroup accounting), the engine's CPU during commits, the minting process's own, the
images it built (`image_cpu_s`: a Debian base or toolchain layer missing on the shared engine,
built by whichever arm needs it first and reused by the other, so kept out of the CPU compared
and shown per arm as a total), the host's busy CPU-seconds, load at start and end, cores, slots,
each test run. `report` gives per
arm and per language: instances, verified, CPU-seconds per verified instance (total CPU of all
instances / verified, and the median of verified rows), wall seconds beside it, CPU by phase per
verified instance, the ratio to the floor (dependency install + one before + one after run);
the `no_fail_to_pass` rows' CPU new/today; and per instance the outcomes, CPU, wall and whether
FAIL_TO_PASS / PASS_TO_PASS are equal, each difference explained by the flaky lists where they
explain it (else `unexplained`). Throughput: per work directory (each slot count run, and each
`-reverify` folder), instances and verified instances per CPU-hour and per wall-hour (the
passes' own wall time, from OUT/bench_cost_state.json); the pairs ledger has no wall times of
passes, so its pairs (of any suffix, `-reverify` too) are not in it. The per-arm tables and the
throughput cover the work directories only; the paired tables cover the work directories and
the pairs ledger (a work directory's pair replaces the ledger's line of the same id and suffix,
and the report says which).

`report` reads the ids from `--ids-file`, by default the one `run` recorded in
OUT/bench_cost_state.json (`ids_file`), else `data/bench_cost_ids.txt`: pass the run's own when
the state has none.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.instances import load_and_select, read_ids_file  # noqa: E402
from pipeline.store import DONE, INSTANCE, RESULT  # noqa: E402
from scripts.diff_runs import rows_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
IDS = ROOT / "data" / "bench_cost_ids.txt"
ARMS: dict[str, list[str]] = {
    "today": ["mint.verify.policy=fixed", "mint.verify.compile_once=false", "mint.images.warm=false",
              "mint.cache.warm=false"],
    "new": [],
}
"""Arm -> `--set` overrides of `swemint bench` (the new arm: the defaults)."""
PHASES = ("analysis", "reuse", "setup", "before", "after", "reruns", "other")
STATE = "bench_cost_state.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def arm_dir(out: Path, arm: str, slots: int, reverify: bool = False) -> Path:
    """`OUT/<arm>-s<slots>[-reverify]`."""
    return out / f"{arm}-s{slots}{'-reverify' if reverify else ''}"


def _state(out: Path) -> dict:
    p = out / STATE
    return json.loads(p.read_text()) if p.is_file() else {}


def _save_state(out: Path, state: dict) -> None:
    (out / STATE).write_text(json.dumps(state, indent=1, sort_keys=True))


def bench_command(a, arm: str, workdir: Path, slots: int, ids_file: Path | None = None,
                  ids: list[str] | None = None, reverify: bool = False) -> list[str]:
    """The `swemint bench` command of one arm's pass."""
    cmd = [str(ROOT / ".venv" / "bin" / "swemint"), "bench", "-i", str(Path(a.instances).resolve()), "-w", str(workdir),
           "--workers", str(slots), "--no-ray", "--set",
           f"mint.run_id={getattr(a, 'run_prefix', None) or 'bench-cost'}-{workdir.name}"]
    for m in a.mirrors:
        cmd += ["-m", str(m)]
    own = [x.split(":", 1)[1] for x in getattr(a, "arm_set", None) or [] if x.split(":", 1)[0] == arm]
    for s in ARMS[arm] + list(a.set or []) + own:
        cmd += ["--set", s]
    if ids is not None:
        cmd += ["--ids", ",".join(ids)]
    elif ids_file is not None:
        cmd += ["--ids-file", str(ids_file)]
    if reverify:
        cmd.append("--reverify")
    return cmd


def run_arms(a, jobs: dict[str, list[str]], out: Path, key: str) -> None:
    """Start every arm's command at once, wait for all; pass wall times go into the state."""
    state = _state(out)
    procs = {}
    for arm, cmd in jobs.items():
        log = open(out / f"{key}-{arm}.log", "ab")
        log.write(f"\n# {_now()} {' '.join(cmd)}\n".encode())
        log.flush()
        procs[arm] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT), time.monotonic(), log)
        print(f"{_now()} {key}: {arm} started (pid {procs[arm][0].pid})", flush=True)
    for arm, (p, t0, log) in procs.items():
        rc = p.wait()
        log.close()
        wall = round(time.monotonic() - t0, 1)
        passes = state.setdefault("passes", {}).setdefault(f"{key}:{arm}", [])
        passes.append({"ended": _now(), "wall_s": wall, "rc": rc, "code": _head()})
        print(f"{_now()} {key}: {arm} finished (exit {rc}, {wall} s)", flush=True)
    _save_state(out, state)


def copy_for_reverify(src: Path, dst: Path) -> None:
    """Rows (result.json and done markers) and the pool of `src` into a new `dst`."""
    dst.mkdir(parents=True)
    for d in (src / "instances").glob("*"):
        t = dst / "instances" / d.name
        t.mkdir(parents=True)
        for f in d.iterdir():
            if f.is_file() and f.name in (RESULT, DONE, INSTANCE, "plan.json"):
                shutil.copy2(f, t / f.name)
    for f in src.glob("pool.duckdb*"):
        shutil.copy2(f, dst / f.name)


def cmd_run(a) -> int:
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ids_file = Path(a.ids_file or IDS).resolve()
    state = _state(out)
    state["ids_file"] = str(ids_file)  # the report's default --ids-file
    _save_state(out, state)
    arms = a.arms.split(",")
    done = {x["instance_id"] for x in load_pairs(a.pairs_ledger) if x.get("suffix") == f"s{a.slots}"}
    if done and not a.reverify:  # a new machine: only the ids the ledger has no pair of
        todo = [i for i in read_ids_file(ids_file) if i not in done]
        ids_file = out / f"ids-todo-s{a.slots}.txt"
        ids_file.write_text("".join(i + "\n" for i in todo))
        print(f"{len(done)} ids paired in {a.pairs_ledger}; {len(todo)} to run", file=sys.stderr)
    if not a.reverify:
        run_arms(a, {arm: bench_command(a, arm, arm_dir(out, arm, a.slots), a.slots, ids_file=ids_file)
                     for arm in arms}, out, f"s{a.slots}")
        return 0
    state = _state(out)
    jobs = {}
    for arm in arms:
        src, dst = arm_dir(out, arm, a.slots), arm_dir(out, arm, a.slots, reverify=True)
        rows = rows_of(src)
        verified = [i for i in read_ids_file(ids_file) if i in rows and rows[i].outcome == "verified"]
        copied = state.setdefault("reverify_copied", {})
        if not dst.exists():
            copy_for_reverify(src, dst)
            copied[dst.name] = _now()
        since = copied.get(dst.name, "")
        done = {i for i, r in rows_of(dst).items() if (r.finished_at or "") > since}
        todo = [i for i in verified if i not in done]
        if todo:
            jobs[arm] = bench_command(a, arm, dst, a.slots, ids=todo, reverify=True)
    _save_state(out, state)
    if jobs:
        run_arms(a, jobs, out, f"s{a.slots}-reverify")
    return 0


# -- the report ----------------------------------------------------------------------------------

def _med(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 1) if xs else None


def _cpu(r) -> float | None:
    return r.cost.cpu_s if r.cost is not None else None


def _image_cpu(r) -> float | None:
    """CPU-seconds of the images the row built (`cost.image_cpu_s`), None when the row never
    recorded it: no cost, or written before `result_schema` 3 (a row read back without the
    field has it unset, whatever the default)."""
    if r.cost is None or r.result_schema < 3 or "image_cpu_s" not in r.cost.model_fields_set:
        return None
    return r.cost.image_cpu_s


def summarise(rows: list, lang_of: dict[str, str]) -> dict:
    """Per-language and overall figures of one arm's rows (see the module docstring)."""
    groups: dict[str, list] = {"all": rows}
    for r in rows:
        groups.setdefault(lang_of.get(r.instance_id, "?"), []).append(r)
    out = {}
    for name, rs in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        costed = [r for r in rs if r.cost is not None]
        ver = [r for r in costed if r.outcome == "verified"]
        cpu = sum(_cpu(r) for r in costed)
        wall = sum(r.timings.get("total", 0.0) for r in costed)
        floor = sum(r.cost.floor_cpu_s or 0.0 for r in ver)
        images = [x for x in map(_image_cpu, costed) if x is not None]
        phases = {p: round(sum(r.cost.phase_cpu_s.get(p, 0.0) for r in costed) / len(ver), 1) if ver else None
                  for p in PHASES}
        phases["engine"] = round(sum(r.cost.engine_cpu_s for r in costed) / len(ver), 1) if ver else None
        phases["process"] = round(sum(r.cost.process_cpu_s for r in costed) / len(ver), 1) if ver else None
        out[name] = {
            "instances": len(rs), "costed": len(costed), "verified": len(ver),
            "cpu_total_s": round(cpu, 1), "wall_total_s": round(wall, 1),
            "cpu_per_verified_s": round(cpu / len(ver), 1) if ver else None,
            "wall_per_verified_s": round(wall / len(ver), 1) if ver else None,
            "median_cpu_verified_s": _med([_cpu(r) for r in ver]),
            "median_wall_verified_s": _med([r.timings.get("total") for r in ver]),
            "cpu_per_verified_by_phase_s": phases,
            "ratio_to_floor": round(sum(_cpu(r) for r in ver) / floor, 2) if floor else None,
            "host_cpu_total_s": round(sum(r.cost.host_cpu_s or 0.0 for r in costed), 1),
            "image_cpu_total_s": round(sum(images), 1) if images else None,  # None: no row recorded it
            "median_load_start": _med([r.cost.load_start[0] for r in costed if r.cost.load_start]),
        }
    return out


def explain(a_res, b_res) -> dict:
    """FAIL_TO_PASS / PASS_TO_PASS equality of a pair and, for each difference, whether the
    flaky lists explain it (an id one arm excluded as flaky and the other listed)."""
    out = {}
    flaky = set(a_res.flaky_tests) | set(b_res.flaky_tests)
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        x, y = set(getattr(a_res, key)), set(getattr(b_res, key))
        diff = sorted(x ^ y)
        out[key] = {"equal": not diff, "only_today": len(x - y), "only_new": len(y - x),
                    "explained_by_flaky": sum(1 for d in diff if d in flaky),
                    "unexplained": [d for d in diff if d not in flaky][:10]}
    return out


def _phases(r) -> dict[str, float]:
    """CPU-seconds by phase of a row (`PHASES`, engine, process); {} without a cost."""
    if r.cost is None:
        return {}
    out = {p: round(r.cost.phase_cpu_s.get(p, 0.0), 3) for p in PHASES}
    out["engine"], out["process"] = round(r.cost.engine_cpu_s, 3), round(r.cost.process_cpu_s, 3)
    return out


def load_pairs(path: Path | None) -> list[dict]:
    """The pair lines of a pairs ledger (`report --save-pairs`), [] when there is none."""
    if path is None or not Path(path).is_file():
        return []
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def _head() -> str:
    """swemint's commit here (`git rev-parse --short HEAD`; "" outside a checkout)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()


def save_pairs(path: Path, report: dict, code: str, codes: dict[str, str] | None = None,
               keep: list[dict] | None = None) -> int:
    """Write every pair line of `report` (each slot count) to the JSONL `path`, sorted by slot
    count and id, with `suffix`, `code` (the commit the pair ran at: `codes[suffix]`, the commit
    `run` recorded for the new arm's last pass of that suffix, else `code`; a line kept from the
    ledger keeps its own) and `recorded` (UTC date). `keep`: the ledger's lines, written again
    when the report has no pair of their (suffix, id) -- a report over a few ids (`--ids-file`)
    never drops the rest of the ledger. Numbers, outcomes and list-equality counts only: no test
    ids of the repositories (`unexplained` ids are dropped). Returns the lines written."""
    today = _now()[:10]
    lines = []
    reported = {(suffix, x["instance_id"]) for suffix, p in report["pairs"].items() for x in p["instances"]}
    lines += [x for x in keep or [] if (x.get("suffix"), x.get("instance_id")) not in reported]
    for suffix, p in sorted(report["pairs"].items()):
        for x in p["instances"]:
            lists = x.get("lists")
            x = {k: v for k, v in x.items() if k != "lists"} | {"suffix": suffix}
            x.setdefault("code", (codes or {}).get(suffix) or code)
            x.setdefault("recorded", today)
            if lists:
                x["lists"] = {k: {kk: vv for kk, vv in v.items() if kk != "unexplained"} | {
                    "unexplained": len(v["unexplained"]) if isinstance(v["unexplained"], list) else v["unexplained"]}
                    for k, v in lists.items()}
            lines.append(x)
    lines.sort(key=lambda x: (str(x.get("suffix")), str(x.get("instance_id"))))
    Path(path).write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in lines))
    return len(lines)


def _unexplained(v) -> int:
    u = v.get("unexplained")
    return len(u) if isinstance(u, list) else int(u or 0)


def by_language(both: list[dict]) -> dict:
    """Per language (and "all") of pair lines: pairs, verified per arm, CPU-seconds per verified
    instance per arm (all CPU of the pairs / verified), their ratio, and CPU per verified by
    phase per arm (from the lines' phase CPU; lines without phases count 0 there)."""
    groups: dict[str, list[dict]] = {"all": both}
    for x in both:
        groups.setdefault(x["language"], []).append(x)
    out = {}
    for lang, xs in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        row: dict = {"paired": len(xs)}
        per: dict[str, float | None] = {}
        for arm in ("today", "new"):
            ver = sum(x[arm] == "verified" for x in xs)
            cpu = sum(x[f"cpu_{arm}_s"] for x in xs)
            per[arm] = cpu / ver if ver else None
            row[f"verified_{arm}"] = ver
            row[f"cpu_per_verified_{arm}_s"] = round(cpu / ver, 1) if ver else None
            keys = sorted({k for x in xs for k in (x.get(f"phase_cpu_{arm}_s") or {})})
            row[f"phase_per_verified_{arm}_s"] = {k: round(sum((x.get(f"phase_cpu_{arm}_s") or {}).get(k, 0.0)
                                                               for x in xs) / ver, 1) if ver else None for k in keys}
        t, n = per["today"], per["new"]  # unrounded: the headline's CPU new/today is from the same totals
        row["ratio_per_verified"] = round(n / t, 3) if t and n else None
        out[lang] = row
    return out


def pairs(today: dict, new: dict, ids: list[str], lang_of: dict[str, str]) -> list[dict]:
    """One line per id both arms finished."""
    rows = []
    for i in ids:
        t, n = today.get(i), new.get(i)
        if t is None or n is None:
            continue
        line = {"instance_id": i, "language": lang_of.get(i, "?"), "today": t.outcome, "new": n.outcome,
                "cpu_today_s": _cpu(t), "cpu_new_s": _cpu(n),
                "wall_today_s": t.timings.get("total"), "wall_new_s": n.timings.get("total"),
                "runs_today": len([r for r in (t.cost.runs if t.cost else []) if r.kind != "build"]),
                "runs_new": len([r for r in (n.cost.runs if n.cost else []) if r.kind != "build"]),
                "flaky_today": len(t.flaky_tests), "flaky_new": len(n.flaky_tests),
                "phase_cpu_today_s": _phases(t), "phase_cpu_new_s": _phases(n)}
        for arm, r in (("today", t), ("new", n)):
            if (img := _image_cpu(r)) is not None:  # only when the row recorded it
                line[f"image_cpu_{arm}_s"] = img
        if t.outcome == n.outcome == "verified":
            line["lists"] = explain(t, n)
        rows.append(line)
    return rows


def cmd_report(a) -> int:
    out = Path(a.out).resolve()
    state = _state(out)
    ids_file = Path(a.ids_file) if a.ids_file else Path(state["ids_file"]) if state.get("ids_file") else IDS
    if not a.ids_file:
        print(f"ids: {ids_file} ({'the run' if state.get('ids_file') else 'the default'}'s; --ids-file for others)",
              file=sys.stderr)
    ids = read_ids_file(ids_file)
    gold = {i.instance_id: i for i in load_and_select(Path(a.instances), ids=ids).instances}
    lang_of = {i: (g.language or "python") for i, g in gold.items()}
    codes = {k.rsplit(":", 1)[0]: v[-1]["code"] for k, v in state.get("passes", {}).items()
             if k.endswith(":new") and v and v[-1].get("code")}  # suffix -> the commit its last pass ran at
    ledger = load_pairs(a.pairs_ledger)
    report: dict = {"generated": _now(), "arms": {}, "pairs": {}, "scaling": {}}
    dirs = sorted(d for d in out.iterdir() if d.is_dir() and (d / "instances").is_dir()) if out.is_dir() else []
    copied = state.get("reverify_copied", {})  # a -reverify folder holds its source's rows until each is redone
    arm_rows = {d.name: {i: r for i, r in rows_of(d).items() if i in gold
                         and (d.name not in copied or (r.finished_at or "") > copied[d.name])} for d in dirs}
    for name, rows in arm_rows.items():
        report["arms"][name] = summarise([rows[i] for i in ids if i in rows], lang_of)
    suffixes = {n.split("-", 1)[1] for n in arm_rows if n.startswith("today-")}
    suffixes |= {x["suffix"] for x in ledger if "suffix" in x and f"new-{x['suffix']}" not in arm_rows}
    for suffix in sorted(suffixes):
        t, n = arm_rows.get(f"today-{suffix}", {}), arm_rows.get(f"new-{suffix}", {})
        ps = pairs(t, n, ids, lang_of)
        for p in ps:
            if codes.get(suffix):
                p["code"] = codes[suffix]
        here = {p["instance_id"] for p in ps}
        replaced = [x["instance_id"] for x in ledger if x.get("suffix") == suffix and x["instance_id"] in here]
        ps += [x for x in ledger if x.get("suffix") == suffix and x["instance_id"] in ids and x["instance_id"] not in here]
        ps.sort(key=lambda x: ids.index(x["instance_id"]))
        both = [p for p in ps if p["cpu_today_s"] is not None and p["cpu_new_s"] is not None]
        nf = [p for p in both if p["today"] == "no_fail_to_pass"]
        ver = [p for p in both if p["today"] == p["new"] == "verified"]
        sums = lambda ks, k: sum(p.get(k) or 0.0 for p in ks)  # noqa: E731  (unrounded; a missing wall: 0)
        tv, nv = sum(p["today"] == "verified" for p in both), sum(p["new"] == "verified" for p in both)
        report["pairs"][suffix] = {
            "paired": len(both), "verified_today": tv, "verified_new": nv,
            "cpu_per_verified_today_s": round(sums(both, "cpu_today_s") / tv, 1) if tv else None,
            "cpu_per_verified_new_s": round(sums(both, "cpu_new_s") / nv, 1) if nv else None,
            "cpu_ratio_new_today": round(sums(both, "cpu_new_s") / sums(both, "cpu_today_s"), 3)
            if both and sums(both, "cpu_today_s") else None,
            "cpu_ratio_verified_pairs": round(sums(ver, "cpu_new_s") / sums(ver, "cpu_today_s"), 3)
            if ver and sums(ver, "cpu_today_s") else None,
            "no_fail_to_pass_cpu_ratio": round(sums(nf, "cpu_new_s") / sums(nf, "cpu_today_s"), 3)
            if nf and sums(nf, "cpu_today_s") else None,
            "wall_ratio_new_today": round(sums(both, "wall_new_s") / sums(both, "wall_today_s"), 3)
            if both and sums(both, "wall_today_s") else None,
            "outcome_changes": [p for p in both if p["today"] != p["new"]],
            "list_differences": [p for p in ver if not all(v["equal"] for v in (p.get("lists") or {}).values())],
            "from_ledger": sum(1 for p in ps if p["instance_id"] not in here),
            "ledger_replaced": sorted(replaced, key=ids.index),  # the work dirs' pairs of these ids won
            "work_dirs": [d for d in (f"today-{suffix}", f"new-{suffix}") if d in arm_rows],
            "by_language": by_language(both),
            "instances": ps,
        }
    for name, rows in arm_rows.items():
        costed = [r for r in rows.values() if r.cost is not None]
        cpu_h = sum(_cpu(r) for r in costed) / 3600
        key = "s" + name.split("-s", 1)[1].split("-", 1)[0] if "-s" in name else name
        walls = [p["wall_s"] for k, v in state.get("passes", {}).items()
                 if k.split(":", 1)[1] == name.split("-s", 1)[0] and k.split(":", 1)[0] ==
                 (key + ("-reverify" if name.endswith("-reverify") else "")) for p in v]
        wall_h = sum(walls) / 3600 if walls else None
        report["scaling"][name] = {
            "instances": len(costed), "verified": sum(r.outcome == "verified" for r in costed),
            "cpu_hours": round(cpu_h, 3),
            "instances_per_cpu_hour": round(len(costed) / cpu_h, 2) if cpu_h else None,
            "verified_per_cpu_hour": round(sum(r.outcome == "verified" for r in costed) / cpu_h, 2) if cpu_h else None,
            "pass_wall_hours": round(wall_h, 3) if wall_h else None,
            "instances_per_wall_hour": round(len(costed) / wall_h, 2) if wall_h else None}
    if a.save_pairs:
        n = save_pairs(a.save_pairs, report, _head(), codes, keep=ledger)
        print(f"{n} pair lines -> {a.save_pairs}", file=sys.stderr)
    md = markdown(report)
    dest = Path(a.write_to).resolve() if a.write_to else out
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (dest / "report.md").write_text(md)
    print(md)
    print(f"report -> {dest / 'report.md'}, {dest / 'report.json'}", file=sys.stderr)
    return 0


def _f(v) -> str:
    """A table cell: "-" for a value not known (None), else the value."""
    return "-" if v is None else str(v)


def _lists_cell(ls: dict, key: str) -> str:
    if not ls:
        return "-"
    v = ls[key]
    return "=" if v["equal"] else f"≠ ({v['explained_by_flaky']} flaky, {_unexplained(v)} other)"


LEGEND = """Legend. Units: CPU in CPU-seconds (the containers' cgroups, the engine during commits, the
minting process; image builds are kept out and shown per arm as a total), wall in wall-clock
seconds, CPU h / wall h in hours. "/ verified": the CPU (or wall) of all instances of the group
divided by its verified instances. ratio to floor: CPU of the verified rows over their floor
(dependency install + one before + one after run). Phases (CPU per verified instance):
`analysis`, `reuse` (adapting a pooled environment), `setup` (dependency install and build),
`before`, `after` (each side's first run), `reruns` (every later run), `other`; `engine` (the
container engine during commits), `process` (the minting process's own). runs: test runs
today/new (builds not counted). F2P / P2P: FAIL_TO_PASS / PASS_TO_PASS of a pair both arms
verified, `=` equal, `≠ (n flaky, m other)` n differing ids the flaky lists explain and m they do
not, `-` not both verified. code: the commit a pair ran at (a ledger line's `code`; a work
directory's pair: the commit `run` recorded in bench_cost_state.json, else `here`, this
checkout). `-`: not known or not recorded (image builds: rows before result_schema 3 and ledger
lines do not record them)."""


def markdown(report: dict) -> str:
    """The report's tables as Markdown."""
    lines = [f"# Cost benchmark ({report['generated']})", ""]
    for name, langs in report["arms"].items():
        lines += [f"## {name}", "", f"The rows of the work directory `{name}` only (not the pairs ledger, which "
                  "only the paired tables below add).", "",
                  "| language | n | verified | CPU s / verified | median CPU s (verified) | "
                  "wall s / verified | ratio to floor | setup | reuse | before | after | reruns | engine | process | "
                  "image builds s (total, not in CPU) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for lang, s in langs.items():
            ph = s["cpu_per_verified_by_phase_s"]
            lines.append("| " + " | ".join(_f(v) for v in (
                lang, s["instances"], s["verified"], s["cpu_per_verified_s"], s["median_cpu_verified_s"],
                s["wall_per_verified_s"], s["ratio_to_floor"], ph["setup"], ph.get("reuse"), ph["before"],
                ph["after"], ph["reruns"], ph["engine"], ph["process"], s.get("image_cpu_total_s"))) + " |")
        lines.append("")
    for suffix, p in report["pairs"].items():
        ledger_n = p.get("from_ledger", 0)
        dirs = p.get("work_dirs") or []
        replaced = p.get("ledger_replaced") or []
        nf = p["no_fail_to_pass_cpu_ratio"]
        lines += [f"## today vs new ({suffix})", "",
                  (f"Pairs of the work directories {' / '.join(f'`{d}`' for d in dirs)} "
                   f"({len(p['instances']) - ledger_n}) and of the pairs ledger ({ledger_n})." if dirs else
                   f"Pairs of the pairs ledger only ({ledger_n}; no work directory of {suffix} here)."), "",
                  f"paired {p['paired']}; verified today {p['verified_today']}, new {p['verified_new']}; CPU s per "
                  f"verified today {_f(p['cpu_per_verified_today_s'])}, new {_f(p['cpu_per_verified_new_s'])}; "
                  f"CPU new/today {_f(p['cpu_ratio_new_today'])} (verified pairs "
                  f"{_f(p['cpu_ratio_verified_pairs'])}, no_fail_to_pass "
                  f"{'none on this list' if nf is None else nf}); wall new/today {_f(p['wall_ratio_new_today'])}; "
                  f"{ledger_n} pair(s) from the pairs ledger; {len(replaced)} ledger line(s) replaced by the work "
                  f"directories' pairs{(' (' + ', '.join(replaced) + ')') if replaced else ''}", "",
                  "| language | pairs | verified today/new | CPU s / verified today | new | new/today | "
                  "new by phase (s / verified) |", "|---|---|---|---|---|---|---|"]
        for lang, r in p.get("by_language", {}).items():
            ph = ", ".join(f"{k} {v}" for k, v in (r["phase_per_verified_new_s"] or {}).items() if v)
            lines.append(f"| {lang} | {r['paired']} | {r['verified_today']}/{r['verified_new']} | "
                         f"{_f(r['cpu_per_verified_today_s'])} | {_f(r['cpu_per_verified_new_s'])} | "
                         f"{_f(r['ratio_per_verified'])} | {ph or '-'} |")
        lines += ["",
                  "| instance | lang | code | today | new | CPU today | CPU new | wall today | wall new | runs | F2P | "
                  "P2P |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in p["instances"]:
            ls = x.get("lists") or {}
            lines.append("| " + " | ".join(_f(v) for v in (
                x["instance_id"], x["language"], x.get("code") or "here", x["today"], x["new"], x["cpu_today_s"],
                x["cpu_new_s"], x["wall_today_s"], x["wall_new_s"])) +
                f" | {_f(x['runs_today'])}/{_f(x['runs_new'])} | {_lists_cell(ls, 'FAIL_TO_PASS')} | "
                f"{_lists_cell(ls, 'PASS_TO_PASS')} |")
        lines.append("")
    if report["scaling"]:
        lines += ["## throughput", "", "Per work directory only (each slot count and `-reverify` folder; the pairs "
                  "ledger records no pass wall times, so its pairs are not here).", "",
                  "| work dir | instances | verified | CPU h | inst / CPU h | verified / CPU h | "
                  "pass wall h | inst / wall h |", "|---|---|---|---|---|---|---|---|"]
        for name, s in report["scaling"].items():
            lines.append("| " + " | ".join(_f(v) for v in (
                name, s["instances"], s["verified"], s["cpu_hours"], s["instances_per_cpu_hour"],
                s["verified_per_cpu_hour"], s["pass_wall_hours"], s["instances_per_wall_hour"])) + " |")
        lines.append("")
    lines.append(LEGEND)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    helps = {"run": "run the arms at once (`bench_cost.py --help` describes them)",
             "report": f"print the tables and write them to OUT/report.json and OUT/report.md (--write-to: "
                       f"elsewhere); reads OUT's work dirs and OUT/{STATE}"}
    for name in ("run", "report"):
        p = sub.add_parser(name, help=helps[name], description=helps[name])
        p.add_argument("-i", "--instances", required=True, type=Path)
        p.add_argument("-o", "--out", required=True, type=Path, help="the benchmark's folder (one work dir per arm)")
        p.add_argument("--ids-file", type=Path, help=f"ordered id list (default {IDS.relative_to(ROOT)})" if name == "run"
                       else "ordered id list; match the run's (default: the one `run` recorded in "
                       f"OUT/{STATE}, else {IDS.relative_to(ROOT)})")
        p.add_argument("--pairs-ledger", type=Path, help="pair lines kept in git (report --save-pairs): run skips "
                       "the ids paired there, report adds them to the pairs of the work directories")
        if name == "report":
            p.add_argument("--save-pairs", type=Path, help="write every pair line (work dirs + ledger) to this JSONL")
            p.add_argument("--write-to", type=Path, metavar="DIR",
                           help="write report.json and report.md into DIR (default OUT: the report overwrites "
                                "OUT/report.json and OUT/report.md; another DIR leaves OUT untouched)")
        if name == "run":
            p.add_argument("-m", "--mirrors", type=Path, action="append", required=True)
            p.add_argument("--arms", default="today,new", help="comma-separated arms of ARMS, run at the same time")
            p.add_argument("--slots", type=int, default=1, help="build slots per arm (swemint --workers)")
            p.add_argument("--reverify", action="store_true", help="re-verify each arm's verified rows (warm)")
            p.add_argument("--set", action="append", help="a config override for every arm (repeatable)")
            p.add_argument("--arm-set", action="append", metavar="ARM:KEY=VALUE",
                           help="a config override for one arm, after its own (repeatable): e.g. two settings "
                                "of the new code paired, today:mint.verify.policy=adaptive ...")
            p.add_argument("--run-prefix", default="bench-cost",
                           help="run ids <prefix>-<arm>-s<slots> (another prefix: images apart from another bench's)")
    a = ap.parse_args(argv)
    return cmd_run(a) if a.cmd == "run" else cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
