"""The dataset: SWE-bench v5 rows as Parquet laid out for Hugging Face, and as a task repository.

`export_dataset` writes `WORKDIR/dataset/`:

    verified.parquet   verified rows (split `verified`)
    all.parquet        every finished row, whatever its outcome (split `all_outcomes`: `all` is
                       reserved by Hugging Face `datasets`, which refuses it as a split name)
    README.md          the dataset card: splits (YAML `configs`, so `datasets.load_dataset(DIR)`
                       gives the two splits), schema, counts per language and repository, the
                       minting configuration, grading caveats

Every row carries what SWE-bench harness v5 needs (`eval_script`, `log_parser`, `eval_type`,
`image`; see `envpool.evalscript`) plus swemint's columns and the crawl provenance.
`export_task_repo` writes SWE-bench v5's task-folder layout (`swebench/task/repo.py`, 5.0.2):
`sweb.yaml`, `tasks/<id>/{task.yaml, tests.json, problem_statement.md, hints.md, gold.patch,
test.patch, eval.sh, Dockerfile}` plus the Dockerfile's build context (`agents.dockerfile`),
every path resolved under the destination and refused outside it (`envpool.quoting.path_under`).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from agents.models import Instance, InstanceResult
from envpool.evalscript import EVAL_TYPE, EvalSpec, render_eval_script
from envpool.quoting import UnsafePath, one_line, path_component, path_under, yaml_text
from envpool.testrun import statuslines
from pipeline.datacard import dataset_card as _card
from pipeline.datacard import local_images, userns_line  # noqa: F401 - re-exported
from pipeline.licenses import UNKNOWN, LicenseReader, allowed
from pipeline.store import ResultStore, atomic_path, atomic_write

log = logging.getLogger(__name__)

SPLITS = {"verified": "verified.parquet", "all_outcomes": "all.parquet"}
"""Hugging Face split name -> file in WORKDIR/dataset."""
CONFIG_FILE = "mint_config.json"
"""The driver's effective configuration, in WORKDIR (read into the dataset card)."""
CERTIFICATES = "rebuild"
"""WORKDIR/rebuild/<id>.json: `swemint rebuild --verify` certificates (the `rebuild` column)."""

_LIST = pa.list_(pa.string())
COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("instance_id", pa.string(), "owner__name-NUMBER"),
    ("repo", pa.string(), "owner/name"),
    ("base_commit", pa.string(), "the commit the PR was opened against"),
    ("patch", pa.string(), "the PR's change to non-test files (gold fix)"),
    ("test_patch", pa.string(), "the PR's change to test files"),
    ("problem_statement", pa.string(), "issue title and body"),
    ("hints_text", pa.string(), "issue comments before the PR's first commit"),
    ("created_at", pa.string(), "the PR's creation time"),
    ("version", pa.string(), "the package's major.minor at base_commit"),
    ("FAIL_TO_PASS", _LIST, "tests failing before and passing after the patch (ours, runner's own ids)"),
    ("PASS_TO_PASS", _LIST, "tests passing before and after (ours)"),
    ("environment_setup_commit", pa.string(), "always null: swemint does not use it"),
    ("language", pa.string(), "the input's language"),
    ("license", pa.string(), "SPDX id (or `A OR B`) of the repository's licence file at base_commit; "
                             "`unknown` when none was recognised (pipeline.licenses)"),
    ("image", pa.string(), "the environment image the harness runs: the published reference "
                           "(registry/repo:tag@sha256:digest) when a registry is set, else the local tag"),
    ("image_name", pa.string(), "the same as `image` (the name agent harnesses read)"),
    ("image_local", pa.string(), "the local tag on the engine that built it"),
    ("image_id", pa.string(), "the image id (sha256) on that engine"),
    ("eval_script", pa.string(), "bash run as /eval.sh by SWE-bench harness v5 after the model patch; it calls "
                                 "the status tool the image carries"),
    ("log_parser", pa.string(), "swebench PARSER_REGISTRY name that reads the eval log"),
    ("eval_type", pa.string(), "swebench EvalType"),
    ("status_format", pa.string(), "the status-line format the eval script prints"),
    ("dockerfile", pa.string(), "rebuilds the image without swemint (build context: see the card)"),
    ("setup_script", pa.string(), "the setup commands as run"),
    ("test_command", pa.string(), "the test command as run in the image (`docker run --network none`)"),
    ("parser", pa.string(), "swemint's parser of the runner's report"),
    ("parser_options", pa.string(), "JSON object: options of `parser`"),
    ("report_path", pa.string(), "the report file the test command writes (null: its output)"),
    ("interpreter", pa.string(), "interpreter or toolchain"),
    ("test_files", _LIST, "test files (or units) the test command selects"),
    ("flaky_tests", _LIST, "tests whose outcome changed between reruns (excluded)"),
    ("outcome", pa.string(), "verified, no_fail_to_pass, patch_failed, invalid_task, env_failed, tests_not_run, "
                                   "timeout, infra_error"),
    ("reason", pa.string(), "why"),
    ("log_path", pa.string(), "the instance's log, relative to the work directory"),
    ("timings", pa.string(), "JSON object: phase -> seconds"),
    ("total_seconds", pa.float64(), "minting wall time of the instance"),
    ("reused_from", pa.string(), "instance whose pooled environment was adapted"),
    ("incremental_commands", _LIST, "what EnvPatch ran on top of it"),
    ("reuse_kind", pa.string(), "how the reused environment was found: same_repo (only within a repository), or null"),
    ("reuse_overlap", pa.float64(), "rows of earlier runs only (similar_repo reuse, since removed); null"),
    ("dependency_key", pa.string(), "key (sha256) of the dependency layer the image stands on, shared across "
                                    "repositories with the same key; null: none"),
    ("dependency_image_id", pa.string(), "image id of that dependency layer (equal ids share its layers)"),
    ("round", pa.int64(), "the round of the loop (plan, environment, verify, feedback) the row reports"),
    ("rounds", pa.string(), "JSON list: every round (environment source, test configuration, outcome, "
                            "attribution, feedback)"),
    ("llm_usage", pa.string(), "JSON: tokens and USD, or null"),
    ("rebuild", pa.string(), "JSON certificate of `swemint rebuild --verify`, or null"),
    ("test_infra_files", _LIST, "test-infrastructure files the patches touch (`patch:<path>`, "
                                "`test_patch:<path>`): conftest.py, plugins, sitecustomize, *.pth, jest/mocha setup"),
    ("anomalies", _LIST, "why test runs were not graded (envpool.testrun.trust)"),
    ("isolation", pa.string(), "JSON: what the engine that built the row gave its containers "
                               "(user_namespaces: root in them not root on the host; root_uid; disk_quota), or null"),
    ("source", pa.string(), "crawl provenance: where the row came from"),
    ("pull_number", pa.int64(), "crawl provenance: the PR number"),
    ("issue_numbers", pa.list_(pa.int64()), "crawl provenance: issues the PR resolves"),
    ("quality_score", pa.float64(), "crawl provenance: quality score"),
    ("commit", pa.string(), "crawl provenance: the merge or squash commit"),
    ("crawled_at", pa.string(), "crawl provenance: crawl time"),
    ("moved_to_test_patch", _LIST, "crawl provenance: test infrastructure of the PR (conftest, runner "
                                   "configuration) the source's split put in the test_patch, not the fix"),
]
"""Export columns: name, Arrow type, meaning (SWE-bench's first, then swemint's)."""


TEST_ID_COLUMNS = ("FAIL_TO_PASS", "PASS_TO_PASS")
"""The two test-id columns: always of one type, lists of strings or (`json_strings`) JSON strings."""


def id_list_cell(ids, json_strings: bool = False) -> list[str] | str:
    """The value of a TEST_ID_COLUMNS cell: the list of ids, or with `json_strings` the list
    JSON-encoded (as in the Hugging Face copies of SWE-bench; the harness `json.loads` a str).
    Readers decode either form with `agents.models.parse_id_list`."""
    ids = [str(t) for t in ids or []]
    return json.dumps(ids) if json_strings else ids


def columns(json_strings: bool = False) -> list[tuple[str, pa.DataType, str]]:
    """COLUMNS with the TEST_ID_COLUMNS' type as written (`id_list_cell`)."""
    return [(n, pa.string() if json_strings and n in TEST_ID_COLUMNS else t, d) for n, t, d in COLUMNS]


def schema(json_strings: bool = False) -> pa.Schema:
    """The Arrow schema; `json_strings`: FAIL_TO_PASS / PASS_TO_PASS as JSON strings (as in the
    Hugging Face copies of SWE-bench) instead of lists."""
    return pa.schema([(n, t) for n, t, _ in columns(json_strings)])


def read_plan(workdir: Path, instance_id: str) -> dict | None:
    """The polyglot plan (`instances/<id>/plan.json`) of an instance, None for Python rows."""
    p = ResultStore(workdir).dir(instance_id) / "plan.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def eval_spec(res: InstanceResult, inst: Instance | None, workdir: Path) -> EvalSpec | None:
    """What the eval script of a row runs, from its result and (polyglot) its plan; None when
    the row has no test command or no test_patch."""
    if not res.test_command or inst is None or not inst.test_patch:
        return None
    known = sorted(set(res.FAIL_TO_PASS) | set(res.PASS_TO_PASS))
    plan = read_plan(workdir, res.instance_id)
    if plan is None or res.parser.startswith("pytest"):
        from agents.ecosystems.python.python_plan import runtime_env

        return EvalSpec(instance_id=res.instance_id, test_patch=inst.test_patch, kind="pytest",
                        test_command=res.test_command, parser=res.parser, env=runtime_env(),
                        test_files=list(res.test_files), known=known, language=res.language or inst.language)
    return EvalSpec(instance_id=res.instance_id, test_patch=inst.test_patch, kind="poly",
                    test_command=plan["test_command"], parser=plan["parser"],
                    parser_options=plan.get("parser_options") or {}, report_path=plan.get("report_path"),
                    env=plan.get("env") or {}, test_files=plan.get("test_files") or [], known=known,
                    language=res.language or inst.language)


def published_reference(res: InstanceResult, client=None) -> str | None:
    """`registry/repo:tag@sha256:digest` of a row's pushed image (the digest from the local
    image's RepoDigests when this engine has it), the bare reference without a digest, or None
    when the image was not published."""
    loc = res.env.location if res.env else ""
    if not loc or loc == "local":
        return None
    try:
        if client is None:
            from envpool.docker_sandbox import docker_client
            client = docker_client()
        digests = client.images.get(res.image).attrs.get("RepoDigests") or []
    except Exception:  # no engine, or the image lives on another node
        digests = []
    name = loc.rsplit(":", 1)[0] if ":" in loc.rsplit("/", 1)[-1] else loc
    for d in digests:
        if d.startswith(name + "@"):
            return f"{loc}@{d.split('@', 1)[1]}"
    return loc


def relative_log(path: str, workdir: Path) -> str:
    """`path` relative to `workdir` when it lies below it, else as given."""
    if not path:
        return ""
    try:
        return os.path.relpath(Path(path).resolve(), Path(workdir).resolve()) if Path(path).resolve().is_relative_to(
            Path(workdir).resolve()) else path
    except (OSError, ValueError):
        return path


def file_stem(name: str) -> str:
    """A file name for `name` (an instance id or model name): `envpool.quoting.path_component`
    (the store's folder name: characters outside the portable set escaped, never `.`, `..` or
    a `/`), `/` first made `__` (`org/model` -> `org__model`, as earlier runs named them)."""
    return path_component(name.replace("/", "__"))


def read_certificate(workdir: Path, instance_id: str) -> str | None:
    """The JSON text of `swemint rebuild --verify`'s certificate for an instance, or None."""
    p = Path(workdir) / CERTIFICATES / f"{file_stem(instance_id)}.json"
    return p.read_text(encoding="utf-8") if p.is_file() else None


def _scrub(text: str | None, workdir: Path) -> str | None:
    """`text` with the work directory's absolute path written `WORKDIR` (reasons name log files)."""
    if not text:
        return text
    for root in {str(Path(workdir)), str(Path(workdir).resolve())}:
        text = text.replace(root, "WORKDIR")
    return text


def make_row(res: InstanceResult, inst: Instance | None, workdir: Path, json_strings: bool = False,
             client=None, *, license: str | None = None, embed_tool: bool = False) -> dict:
    """One exported row (a dict keyed like `COLUMNS`). A verified row whose eval script cannot be
    written (a value no shell encoder takes, e.g. a NUL in a test id: `envpool.quoting`) gets no
    `eval_script` (logged), like a row without a test command. `license`: the repository's
    licence (`pipeline.licenses`; None: `unknown`); `embed_tool`: the eval script carries the
    status tool instead of calling the image's (`envpool.evalscript.render_eval_script`)."""
    i = inst.model_dump() if inst else {}
    spec = eval_spec(res, inst, workdir) if res.outcome == "verified" else None
    script = None
    if spec is not None:
        try:
            script = render_eval_script(spec, embed=embed_tool)
        except ValueError as e:
            log.warning("%s: no eval script: %s", one_line(res.instance_id, 80), e)
            spec = None
    plan = read_plan(workdir, res.instance_id) or {}
    ref = published_reference(res, client) if res.outcome == "verified" else None
    return {
        "instance_id": res.instance_id, "repo": res.repo, "base_commit": i.get("base_commit"),
        "patch": i.get("patch"), "test_patch": i.get("test_patch"),
        "problem_statement": i.get("problem_statement"), "hints_text": i.get("hints_text"),
        "created_at": i.get("created_at"), "version": res.version or i.get("version"),
        "FAIL_TO_PASS": id_list_cell(res.FAIL_TO_PASS, json_strings),
        "PASS_TO_PASS": id_list_cell(res.PASS_TO_PASS, json_strings),
        "environment_setup_commit": None, "language": res.language or i.get("language"),
        "license": license or UNKNOWN,
        "image": ref or res.image, "image_name": ref or res.image, "image_local": res.image,
        "image_id": res.image_id,
        "eval_script": script,
        "log_parser": statuslines.LOG_PARSER if spec else None,
        "eval_type": EVAL_TYPE if spec else None,
        "status_format": statuslines.FORMAT if spec else None,
        "dockerfile": res.dockerfile, "setup_script": res.setup_script, "test_command": res.test_command,
        "parser": res.parser, "parser_options": json.dumps(plan.get("parser_options") or {}, sort_keys=True),
        "report_path": plan.get("report_path"), "interpreter": res.interpreter,
        "test_files": list(res.test_files), "flaky_tests": list(res.flaky_tests), "outcome": res.outcome,
        "reason": _scrub(res.reason, workdir), "log_path": relative_log(res.log_path, workdir),
        "timings": json.dumps(res.timings, sort_keys=True), "total_seconds": res.timings.get("total"),
        "reused_from": res.reused_from, "incremental_commands": list(res.incremental_commands),
        "reuse_kind": res.reuse_kind, "reuse_overlap": res.reuse_overlap, "round": res.round,
        "dependency_key": res.dependency_key, "dependency_image_id": res.dependency_image_id,
        "rounds": _scrub(json.dumps([r.model_dump() for r in res.rounds]), workdir),
        "llm_usage": json.dumps(res.llm_usage, sort_keys=True) if res.llm_usage else None,
        "rebuild": read_certificate(workdir, res.instance_id),
        "test_infra_files": list(res.test_infra_files), "anomalies": list(res.anomalies),
        "isolation": json.dumps(res.isolation, sort_keys=True) if res.isolation else None,
        "source": i.get("source"), "pull_number": i.get("pull_number"),
        "issue_numbers": list(i.get("issue_numbers") or []), "quality_score": i.get("quality_score"),
        "commit": i.get("commit"), "crawled_at": i.get("crawled_at"),
        "moved_to_test_patch": list(i.get("moved_to_test_patch") or []),
    }


def write_parquet(rows: list[dict], path: Path, json_strings: bool = False) -> int:
    """Write `rows` to `path` atomically (`pipeline.store.atomic_path`: a uniquely named temp file,
    fsync, rename; concurrent exports never collide); returns the row count."""
    table = pa.Table.from_pylist(rows, schema=schema(json_strings))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return len(rows)


def recorded_config(workdir: Path) -> dict | None:
    """The configuration the last `mint`/`run` recorded in WORKDIR/mint_config.json, or None."""
    path = Path(workdir) / CONFIG_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None


def export_dataset(store: ResultStore, instances=(), json_strings: bool = False, client=None, *,
                   mirrors: list[Path] | None = None, licenses: list[str] | None = None, embed_tool: bool = False,
                   check_tools: bool = True, notes: list[str] | None = None) -> dict[str, Path]:
    """Write WORKDIR/dataset/{verified,all}.parquet and the dataset card README.md from every
    finished result in `store` (`instances` add to the input rows recorded there). Returns
    {"verified": path, "all": path, "card": path}.

    `mirrors`: where the rows' licences are read (`pipeline.licenses.LicenseReader`; default the
    mirrors WORKDIR/mint_config.json recorded, and its `sources.local` git dirs; cached in
    WORKDIR/cache/licenses.json);
    `licenses`: keep only rows whose licence is one of these SPDX ids (None: every row);
    `embed_tool`: eval scripts carry the status tool (old images); `check_tools`: check that
    verified rows' images carry a status tool the script can call
    (`pipeline.imagetools.tool_states`). Findings a person must know (local image tags, images
    without the tool, rows dropped by the licence filter) are appended to `notes` and shown in
    the card."""
    notes = notes if notes is not None else []
    known = store.instances()
    known.update({i.instance_id: i for i in instances})
    results = store.results()
    config = recorded_config(store.workdir)
    if mirrors is None:
        mirrors = [Path(m) for m in (config or {}).get("mirrors") or []]
    local_dirs = {s["repo"]: Path(s["git_dir"]) for s in ((config or {}).get("sources") or {}).get("local") or []
             if isinstance(s, dict) and s.get("repo") and s.get("git_dir")}
    reader = LicenseReader(mirrors, store.workdir / "cache" / "licenses.json", git_dirs=local_dirs)
    rows = []
    for r in results:
        inst = known.get(r.instance_id)
        lic = reader(r.repo, inst.base_commit if inst else None)
        rows.append(make_row(r, inst, store.workdir, json_strings, client, license=lic, embed_tool=embed_tool))
    reader.save()
    if licenses:
        kept = [r for r in rows if allowed(r["license"], licenses)]
        if len(kept) < len(rows):
            notes.append(f"licence filter ({', '.join(sorted(licenses))}): {len(rows) - len(kept)} of {len(rows)} rows "
                         "left out")
        rows = kept
    verified = [r for r in rows if r["outcome"] == "verified"]
    local = local_images(rows)
    if local:
        notes.append(f"{len(local)} of {len(verified)} verified rows name local image tags (e.g. {local[0]}: "
                     f"{next(r['image'] for r in verified if r['instance_id'] == local[0])}) that nobody else can "
                     "pull: set `registry` to publish images, or share the rows' Dockerfiles "
                     "(--format swebench-task-repo)")
    if check_tools and not embed_tool and verified:
        from pipeline.imagetools import tool_notes

        notes += tool_notes(verified, store.workdir / "cache" / "status-tool.json", client=client)
    out = store.workdir / "dataset"
    paths = {"verified": out / SPLITS["verified"], "all": out / SPLITS["all_outcomes"], "card": out / "README.md"}
    write_parquet(verified, paths["verified"], json_strings)
    write_parquet(rows, paths["all"], json_strings)
    atomic_write(paths["card"], dataset_card(rows, config, json_strings, notes=notes, license_filter=licenses))
    return paths


def dataset_card(rows: list[dict], config: dict | None = None, json_strings: bool = False, *,
                 notes: list[str] | None = None, license_filter: list[str] | None = None) -> str:
    """The Hugging Face dataset card (README.md) for exported `rows` (`pipeline.datacard`)."""
    return _card(rows, config, json_strings, columns=columns(json_strings), splits=SPLITS, notes=notes,
                 license_filter=license_filter)


def expected_image(instance_id: str, namespace: str = "swebench") -> str:
    """The image name SWE-bench v5 derives for a task-repo instance (`swebench/task/checks.py`)."""
    key = f"sweb.eval.x86_64.{instance_id}:latest".lower()
    return f"{namespace}/{key}".replace("__", "_1776_")


def export_task_repo(store: ResultStore, out: Path, trees, *, dataset: str = "swemint/tasks",
                     split: str = "verified", ca_bundle: bytes | None = None, tag_images: bool = False,
                     client=None, embed_tool: bool = False) -> dict:
    """Write the verified rows of `store` as a SWE-bench v5 task repository at `out`.

    `trees(instance) -> bytes`: an uncompressed tar of the instance's `base_commit` tree (e.g.
    from its mirror); an instance whose tree cannot be read is skipped and reported. `dataset`
    / `split`: what `sweb.yaml` publishes and every task claims. `embed_tool`: eval scripts carry
    the status tool (images without one). `tag_images`: also tag each
    local image under the name the harness derives (`expected_image`), so `swebench eval` on
    the repo's parquet finds it without a rebuild. Returns {"tasks": n, "skipped": {id: why}}.

    Every path written is resolved under `out` (`envpool.quoting.path_under`: a task folder is
    `tasks/<path_component(instance_id)>`, the id itself for a valid id; a path that would land
    outside `out`, e.g. through a link an earlier export left, is refused), YAML goes through
    `yaml_text`. A row that cannot be written safely is skipped with its reason; the others are
    written (one bad row never stops the export). Raises UnsafePath only when `out/tasks` itself
    leaves `out`.
    """
    from agents.dockerfile import build_context, earlier_trees

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tasks_dir = path_under(out, "tasks")
    tasks_dir.mkdir(parents=True, exist_ok=True)
    known = store.instances()
    written, skipped = 0, {}
    for res in store.results():
        inst = known.get(res.instance_id)
        if res.outcome != "verified" or inst is None:
            continue
        row = make_row(res, inst, store.workdir, client=client, embed_tool=embed_tool)
        if not row["eval_script"]:
            skipped[res.instance_id] = "no eval script (no test command, or one that cannot be written safely)"
            continue
        try:
            tree = trees(inst)
            # a reused row's Dockerfile builds the earlier instances' environments on their trees
            earlier = {c: trees(inst.model_copy(update={"base_commit": c})) for c in earlier_trees(res.dockerfile)}
        except Exception as e:  # a missing mirror or commit: report, go on
            skipped[res.instance_id] = f"base tree unavailable: {e}"
            continue
        try:
            _write_task(path_under(tasks_dir, path_component(res.instance_id)), res, inst, row, split, dataset,
                        build_context(tree, ca_bundle, earlier))
        except (UnsafePath, ValueError, OSError) as e:
            skipped[res.instance_id] = f"not written: {e}"
            continue
        if tag_images and res.image:
            try:
                _tag(res.image, expected_image(res.instance_id), client)
            except Exception as e:  # noqa: BLE001 - a name the engine refuses, a missing image: say so
                skipped[res.instance_id] = f"written, but not tagged as {expected_image(res.instance_id)}: {e}"
        written += 1
    atomic_write(path_under(out, "sweb.yaml"), yaml_text({"datasets": [dataset], "splits": [split]}))
    return {"tasks": written, "skipped": skipped}


def _write_task(d: Path, res: InstanceResult, inst: Instance, row: dict, split: str, dataset: str,
                context: dict[str, bytes]) -> None:
    """One task folder `d` (already resolved under the destination): task.yaml, tests.json, the
    texts, eval.sh, Dockerfile and the build context, each path resolved under `d`."""
    meta = {"instance_id": res.instance_id, "repo": res.repo, "version": row["version"] or "",
            "base_commit": inst.base_commit, "created_at": inst.created_at or "", "split": split,
            "datasets": [dataset], "image": expected_image(res.instance_id),
            "log_parser": row["log_parser"], "eval_type": row["eval_type"],
            "environment_setup_commit": None, "language": inst.language or "",
            "swemint": {"image": row["image"], "status_format": row["status_format"], "parser": row["parser"],
                        "outcome": res.outcome, "source": inst.source, "pull_number": inst.pull_number}}
    files = {"task.yaml": yaml_text(meta),
             "tests.json": json.dumps({c: id_list_cell(getattr(res, c)) for c in TEST_ID_COLUMNS}, indent=2,
                                      ensure_ascii=False) + "\n",
             "problem_statement.md": inst.problem_statement or "", "gold.patch": inst.patch,
             "test.patch": inst.test_patch, "eval.sh": row["eval_script"], "Dockerfile": res.dockerfile}
    if inst.hints_text:
        files["hints.md"] = inst.hints_text
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        with open(path_under(d, name), "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    for rel, data in context.items():
        target = path_under(d, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _tag(image: str, name: str, client=None) -> None:
    if client is None:
        from envpool.docker_sandbox import docker_client
        client = docker_client()
    repo, tag = name.rsplit(":", 1)
    client.images.get(image).tag(repo, tag)
