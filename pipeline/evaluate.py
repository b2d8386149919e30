"""`swemint eval`: grade model predictions on a minted dataset, and `grade(row, patch)` for trainers.

Predictions are SWE-bench's (`instance_id`, `model_patch`, `model_name_or_path`), as JSONL, a
JSON list, or a JSON object keyed by instance id (SWE-agent's); `gold` (each row's `patch`) and
`empty` (an empty patch, which is *run*: it should leave FAIL_TO_PASS failing) are shortcuts.
Each prediction is graded by `envpool.evaluation.evaluate_patch` in the row's pooled image with no
network. Per instance a report lands in `OUT/<model>/<instance_id>.json` as soon as it is done
(a rerun skips those: resumable); at the end `OUT/report.json` has SWE-bench's run-report shape
(`resolved_ids`, `unresolved_ids`, `error_ids`, `empty_patch_ids`, counts) plus every instance's
report (F2P / P2P successes and failures, reward, seconds) and, per instance, the minting time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from agents.models import parse_id_list
from envpool.evaluation import EvalReport, GradedRow, TestsSpec, evaluate_patch, python_of

SHORTCUTS = ("gold", "empty")


def load_predictions(source: str | Path, rows: dict[str, dict] | None = None) -> list[dict]:
    """Predictions from `source`: a `.jsonl` / `.json` file, or `gold` / `empty` (one per row of
    `rows`). Raises ValueError naming the problem (not a list, no instance_id, unknown format)."""
    if str(source) in SHORTCUTS:
        if rows is None:
            raise ValueError(f"{source!r} predictions need the dataset rows")
        return [{"instance_id": i, "model_patch": r["patch"] if source == "gold" else "",
                 "model_name_or_path": str(source)} for i, r in sorted(rows.items())]
    path = Path(source)
    if path.suffix not in (".jsonl", ".json"):
        raise ValueError(f"{path}: predictions must be .jsonl or .json (or `gold` / `empty`)")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        preds = [json.loads(line) for line in text.splitlines() if line.strip()]
    elif path.suffix == ".json":
        data = json.loads(text)
        preds = list(data.values()) if isinstance(data, dict) else data
        if not isinstance(preds, list):
            raise ValueError(f"{path}: predictions must be a list or an object keyed by instance id")
    for n, p in enumerate(preds):
        if not isinstance(p, dict) or not isinstance(p.get("instance_id"), str):
            raise ValueError(f"{path}: prediction #{n} has no instance_id")
    return preds


def tests_spec(row: dict) -> TestsSpec:
    """How a dataset row's tests run (`envpool.evaluation.TestsSpec`)."""
    if (row.get("parser") or "").startswith("pytest"):
        from agents.ecosystems.python.python_plan import runtime_env

        return TestsSpec(kind="pytest", test_files=list(row.get("test_files") or []),
                         python=python_of(row.get("test_command") or ""), env=runtime_env())
    return TestsSpec(kind="poly", test_command=row["test_command"], parser=row["parser"],
                     parser_options=json.loads(row.get("parser_options") or "{}"),
                     report_path=row.get("report_path"))


tests_spec.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def grade(row: dict, patch: str | None, *, factory=None, model: str = "", timeout: float = 1800,
          run_id: str = "eval", log_path: Path | None = None, limits: dict | None = None) -> EvalReport:
    """Grade `patch` on one exported dataset row (a dict as in `verified.parquet`): the Python API
    for RL trainers. Returns an `EvalReport`: `resolved`, `reward` (1.0 / 0.0), `f2p_rate`,
    `p2p_rate`, per-list successes and failures, `error` when it could not be graded. Uses the
    row's local image (`image_local`) when the engine has it, else `image`. `factory`: a
    SandboxFactory (default: Docker with `run_id` labels)."""
    if factory is None:
        from envpool.docker_sandbox import DockerSandboxFactory
        factory = DockerSandboxFactory(run_id=run_id)
    image = row.get("image_local") or row["image"]
    client = getattr(factory, "client", None)
    if client is not None and row.get("image") and image != row["image"]:
        try:
            client.images.get(image)
        except Exception:
            image = row["image"]
    graded = GradedRow(instance_id=row["instance_id"], image=image, tests=tests_spec(row), test_patch=row["test_patch"],
                       FAIL_TO_PASS=parse_id_list(row["FAIL_TO_PASS"]),
                       PASS_TO_PASS=parse_id_list(row["PASS_TO_PASS"]),
                       language=row.get("language"))
    return evaluate_patch(factory, graded, patch, model=model, timeout=timeout, run_id=run_id, log_path=log_path,
                          limits=limits)


def _safe(name: str) -> str:
    from pipeline.export import file_stem

    return file_stem(name)


def evaluate(rows: dict[str, dict], predictions: Iterable[dict], out: Path, *, workers: int = 1,
             timeout: float = 1800, factory=None, run_id: str = "eval", limits: dict | None = None,
             on_result: Callable[[EvalReport], None] | None = None,
             on_start: Callable[[str], None] | None = None) -> dict:
    """Grade every prediction whose instance is in `rows` (id -> row), `workers` at a time,
    writing `out/<model>/<id>.json` per instance (kept ones are reused) and `out/report.json`.
    Predictions for unknown ids are reported in `unknown_ids`, never run; instances the engine
    could not grade (`EvalReport.infra_error`) in `infra_error_ids` (and graded again by the next
    call). `on_start(id)` when a grading starts, `on_result(report)` when it ends. Returns the report."""
    out.mkdir(parents=True, exist_ok=True)
    preds = list(predictions)
    todo, reports, unknown = [], {}, []
    for p in preds:
        iid, model = p["instance_id"], str(p.get("model_name_or_path") or "model")
        if iid not in rows:
            unknown.append(iid)
            continue
        path = out / _safe(model) / f"{_safe(iid)}.json"
        if path.is_file():
            kept = EvalReport.model_validate_json(path.read_text(encoding="utf-8"))
            if not kept.infra_error:  # an engine failure is no grade: graded again
                reports[iid] = kept
                continue
        todo.append((p, model, path))

    def one(item) -> EvalReport:
        p, model, path = item
        if on_start:
            on_start(p["instance_id"])
        rep = grade(rows[p["instance_id"]], p.get("model_patch"), factory=factory, model=model, timeout=timeout,
                    run_id=run_id, limits=limits, log_path=path.with_suffix(".log"))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(rep.model_dump_json(indent=1), encoding="utf-8")
        tmp.replace(path)
        return rep

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(one, item) for item in todo]
        for fut in as_completed(futures):
            rep = fut.result()
            reports[rep.instance_id] = rep
            if on_result:
                on_result(rep)
    report = run_report(rows, preds, reports, unknown)
    report["wall_seconds"] = round(time.monotonic() - t0, 2)
    report["graded_now"] = len(todo)
    tmp = out / ".report.json.tmp"
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(out / "report.json")
    return report


def run_report(rows: dict[str, dict], preds: list[dict], reports: dict[str, EvalReport], unknown: list[str]) -> dict:
    """SWE-bench's run report (`harness/reporting.py` keys) plus per-instance details."""
    empty = sorted(p["instance_id"] for p in preds if p["instance_id"] in rows and not (p.get("model_patch") or ""))
    resolved = sorted(i for i, r in reports.items() if r.resolved)
    errors = sorted(i for i, r in reports.items() if r.error)
    unresolved = sorted(i for i, r in reports.items() if not r.resolved and not r.error)
    return {
        "total_instances": len(rows), "submitted_instances": len(preds), "completed_instances": len(reports),
        "resolved_instances": len(resolved), "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty), "error_instances": len(errors),
        "completed_ids": sorted(reports), "resolved_ids": resolved, "unresolved_ids": unresolved,
        "empty_patch_ids": empty, "error_ids": errors, "unknown_ids": sorted(unknown), "schema_version": 2,
        "infra_error_ids": sorted(i for i, r in reports.items() if r.infra_error),
        "instances": {i: {**r.model_dump(), "mint_seconds": rows[i].get("total_seconds")}
                      for i, r in sorted(reports.items())},
    }


def dataset_rows(workdir: Path | None = None, dataset: Path | None = None, split: str = "verified",
                 refused: list[str] | None = None) -> dict[str, dict]:
    """Verified rows by id: from a dataset folder (its `split`: `verified` or `all_outcomes`, the
    file `pipeline.export.SPLITS` names) or parquet file (`dataset`), else from the store of
    `workdir` (rows built as `swemint export` builds them). Raises ValueError for an unknown split
    or a file that is not a dataset, OSError when the file is missing. A dataset row whose
    `instance_id` or `repo` is not valid (`envpool.naming.check_instance_id` / `check_repo`, as at
    load: the id names files, labels and log lines) is left out; one line per such row, naming it
    inert, is appended to `refused` when given."""
    if dataset is not None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from pipeline.export import SPLITS

        if dataset.is_dir():
            if split not in SPLITS:
                raise ValueError(f"unknown split {split!r} (a swemint dataset has {', '.join(SPLITS)})")
            path = dataset / SPLITS[split]
        else:
            path = dataset
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, pa.ArrowException) as e:
            raise ValueError(f"{path}: not a Parquet dataset ({str(e).splitlines()[0][:200]})") from None
        if "instance_id" not in table.column_names:
            raise ValueError(f"{path}: no instance_id column (not a SWE-bench dataset)")
        from envpool.naming import check_instance_id, check_repo

        out = {}
        for n, r in enumerate(table.to_pylist(), 1):
            if r.get("outcome", "verified") != "verified":
                continue
            try:
                check_instance_id(r.get("instance_id"))
                if r.get("repo") is not None:
                    check_repo(r["repo"])
            except ValueError as e:
                if refused is not None:
                    refused.append(f"{path.name} row {n}: {e}")
                continue
            out[r["instance_id"]] = r
        return out
    from pipeline.export import make_row
    from pipeline.store import ResultStore

    store = ResultStore(workdir, read_only=True)
    known = store.instances()
    return {r.instance_id: make_row(r, known.get(r.instance_id), store.workdir)
            for r in store.results() if r.outcome == "verified" and r.instance_id in known}
