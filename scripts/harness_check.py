"""Grade a swemint dataset with the official SWE-bench harness, unchanged: gold, empty and no-op
predictions, and count what it resolves.

    python scripts/harness_check.py --dataset WORKDIR/dataset --swebench /path/to/venv/bin/swebench \
        --out /tmp/harness [--split verified] [--ids a,b] [--workers 2]

`--swebench` is the `swebench` command of a separate virtualenv (`pip install swebench`, 5.x
from PyPI): nothing of swemint is imported there. Images must be present locally (the rows'
`image`; the harness pulls only what it lacks). Three runs, each `swebench eval DATASET --split
SPLIT -p PREDS --run-id swemint-<kind>` in `--out`:

- `gold`: `model_patch` = the row's `patch`: every row should be resolved;
- `empty`: `model_patch` = "": the harness does not run these and reports them unresolved
  (`empty_patch_ids`);
- `noop`: a patch that only adds a file outside the repository's code (`.swemint-noop`): the
  tests run with the test_patch alone, so every row should be unresolved.

Prints a table and writes `OUT/harness_check.json` (per kind: resolved, unresolved, errors, empty
ids, seconds). Exit status 0 when gold resolves every row and noop/empty resolve none.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

NOOP_PATCH = ("diff --git a/.swemint-noop b/.swemint-noop\nnew file mode 100644\nindex 0000000..8b13789\n"
              "--- /dev/null\n+++ b/.swemint-noop\n@@ -0,0 +1 @@\n+noop\n")


def predictions(rows: list[dict], kind: str) -> list[dict]:
    """SWE-bench predictions (instance_id, model_patch, model_name_or_path) of `kind`."""
    patch = {"gold": lambda r: r["patch"], "empty": lambda r: "", "noop": lambda r: NOOP_PATCH}[kind]
    return [{"instance_id": r["instance_id"], "model_patch": patch(r), "model_name_or_path": f"swemint-{kind}"}
            for r in rows]


def run(swebench: str, dataset: Path, split: str, rows: list[dict], kind: str, out: Path, workers: int,
        timeout: int) -> dict:
    """One harness run; returns its summary (the harness's report JSON plus `seconds`)."""
    preds = out / f"preds-{kind}.jsonl"
    preds.write_text("".join(json.dumps(p) + "\n" for p in predictions(rows, kind)))
    run_id = f"swemint-{kind}"
    cmd = [swebench, "eval", str(dataset), "--split", split, "-p", str(preds), "--run-id", run_id,
           "-j", str(workers), "-t", str(timeout), "--report-dir", str(out)]
    for r in rows:
        cmd += ["-i", r["instance_id"]]
    t0 = time.monotonic()
    with (out / f"harness-{kind}.log").open("w") as log:
        subprocess.run(cmd, cwd=out, stdout=log, stderr=subprocess.STDOUT, check=False)
    report_path = out / f"swemint-{kind}.{run_id}.json"
    summary = json.loads(report_path.read_text()) if report_path.is_file() else {"error": "no report"}
    summary["seconds"] = round(time.monotonic() - t0, 1)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True, help="a dataset folder (verified.parquet, ...)")
    ap.add_argument("--swebench", required=True, help="the swebench command of a separate venv")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--split", default="verified")
    ap.add_argument("--ids", default="", help="comma-separated instance ids (default: every row)")
    ap.add_argument("--kinds", default="gold,empty,noop")
    ap.add_argument("--workers", "-j", type=int, default=2, help="instances at once (swebench eval's -j)")
    ap.add_argument("--timeout", type=int, default=1800)
    a = ap.parse_args(argv)
    rows = pq.read_table(a.dataset / f"{a.split}.parquet").to_pylist()
    wanted = {x for x in a.ids.split(",") if x}
    rows = [r for r in rows if not wanted or r["instance_id"] in wanted]
    a.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for kind in [k for k in a.kinds.split(",") if k]:
        s = run(a.swebench, a.dataset.resolve(), a.split, rows, kind, a.out, a.workers, a.timeout)
        results[kind] = {"rows": len(rows), "resolved": sorted(s.get("resolved_ids", [])),
                         "unresolved": sorted(s.get("unresolved_ids", [])), "errors": sorted(s.get("error_ids", [])),
                         "empty": sorted(s.get("empty_patch_ids", [])), "seconds": s.get("seconds")}
        r = results[kind]
        print(f"{kind:6} rows {len(rows):3}  resolved {len(r['resolved']):3}  unresolved {len(r['unresolved']):3}  "
              f"errors {len(r['errors']):3}  empty {len(r['empty']):3}  {r['seconds']}s", flush=True)
    (a.out / "harness_check.json").write_text(json.dumps(results, indent=1))
    ok = all(len(v["resolved"]) == (v["rows"] if k == "gold" else 0) for k, v in results.items())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
