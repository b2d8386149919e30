"""Load SWE-bench-format instance files into `Instance`s, one bad row never stopping the others.

Formats (chosen by suffix): `.jsonl` (one object per line; `.ndjson` too), `.json` (a list, or
`{"instances": [...]}`), `.parquet`. `FAIL_TO_PASS` / `PASS_TO_PASS` may be lists or
JSON-encoded strings (the HF copies of SWE-bench Lite/Verified); `Instance` accepts both.

Every unusable row becomes an `InstanceInputError` naming the instance (or, when it has no id,
the line / item / row number) and the cause, in one line; the loader returns those next to the
good rows. Text that cannot be written back as UTF-8 (a lone surrogate such as `"\ud800"`, or
bytes that are not UTF-8 in a `.jsonl` line) or a NUL character fails that row only, naming the
field. `instance_id`, `repo`, `version`, `language`, `created_at` must fit the conservative
patterns `agents.models.Instance` checks (issue 24: an id such as `../x`, `a/b`, one holding a
newline and a command, an ANSI escape or 10 kB is refused); the error line shows the value inert
(control characters escaped, cut). Two ids whose instance folders (`envpool.naming.folder_name`)
would coincide are an error naming both rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.models import Instance
from envpool.errors import InstanceInputError
from envpool.naming import folder_name
from envpool.patches import shared_files_problem, unsafe_paths_problem

COMMIT_RE = re.compile(r"[0-9a-fA-F]{4,64}")
DEFAULT_LANGUAGE = "python"
"""Language assumed for rows without a `language` field (SWE-bench, Lite and Verified)."""


@dataclass
class LoadResult:
    """What a load produced: good `instances` (file order), `errors` (one per bad row) and the
    requested `missing_ids` that no good row carried (filled by `load_and_select`)."""

    instances: list[Instance] = field(default_factory=list)
    errors: list[InstanceInputError] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)


def _raw_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """Yield (where, raw row) pairs; `where` is e.g. "line 3", "item 2", "row 7" (1-based)."""
    name = path.name.lower()
    if name.endswith((".jsonl", ".ndjson")):
        with path.open("rb") as fh:  # decoded per line: one line that is not UTF-8 fails alone
            for n, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    yield f"line {n}", json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError as e:
                    yield f"line {n}", InstanceInputError(f"{path.name} line {n}: not UTF-8 (byte {e.start})")
                except json.JSONDecodeError as e:
                    yield f"line {n}", InstanceInputError(f"{path.name} line {n}: invalid JSON ({e.msg})")
    elif name.endswith(".json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise InstanceInputError(f"{path}: invalid JSON at line {e.lineno} ({e.msg})") from e
        if isinstance(data, dict) and isinstance(data.get("instances"), list):
            data = data["instances"]
        if not isinstance(data, list):
            raise InstanceInputError(f"{path}: expected a JSON list or {{\"instances\": [...]}}")
        for n, row in enumerate(data, 1):
            yield f"item {n}", row
    elif name.endswith(".parquet"):
        import pyarrow.parquet as pq

        for n, row in enumerate(pq.read_table(path).to_pylist(), 1):
            yield f"row {n}", row
    else:
        raise InstanceInputError(f"{path}: unknown instance file type (use .jsonl, .json or .parquet)")


def _describe(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "row"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(msg if msg.startswith(loc + " ") else f"{loc}: {msg}")
    return "; ".join(parts)


def printable(text: str) -> str:
    """`text` with what UTF-8 cannot encode (lone surrogates) as `\\udXXX` escapes: safe to log."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def bad_text(value: Any, path: str = "") -> str | None:
    """Where in `value` (a parsed row: dicts, lists, strings) text cannot be encoded as UTF-8,
    e.g. `problem_statement: lone surrogate '\\ud800' at 0`, or holds a NUL (no script, file
    name or git command can carry one: `patch: NUL character at 12`); None when all is well."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return f"{path or 'value'}: lone surrogate {printable(value[e.start])!r} at {e.start}"
        if "\0" in value:
            return f"{path or 'value'}: NUL character at {value.index(chr(0))}"
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = bad_text(k, path) if isinstance(k, str) else None
        found = found or bad_text(v, f"{path}.{k}" if path else str(k))
        if found:
            return found
    return None


def parse_row(row: Any, where: str, source: str = "") -> Instance:
    """Validate one raw row into an `Instance`.

    Raises `InstanceInputError` (with `instance_id` when the row has one) for a non-object row,
    text UTF-8 cannot encode (a lone surrogate) or a NUL, a missing/invalid field (an
    `instance_id`, `repo`, `version`, `language`, `created_at` outside `agents.models.Instance`'s
    patterns), a `base_commit` that is not 4 to 64 hex digits, a patch path that leaves the
    repository (`envpool.patches.unsafe_paths_problem`), or a `patch` touching a file the
    `test_patch` touches (`envpool.patches.shared_files_problem`). The message is one line; the
    values it shows are inert (`envpool.quoting.one_line`).
    """
    prefix = f"{source} {where}".strip()
    if not isinstance(row, dict):
        raise InstanceInputError(f"{prefix}: expected a JSON object, got {type(row).__name__}")
    iid = row.get("instance_id")
    iid = str(iid) if iid not in (None, "") else None
    problem = bad_text(row)
    if problem:
        raise InstanceInputError(f"{prefix}: {problem}", instance_id=iid)
    try:
        inst = Instance.model_validate(row)
    except ValidationError as e:
        raise InstanceInputError(f"{prefix}: {_describe(e)}", instance_id=iid) from None
    except (ValueError, TypeError) as e:  # e.g. a FAIL_TO_PASS string that is not JSON
        raise InstanceInputError(f"{prefix}: {e}", instance_id=iid) from None
    if not inst.base_commit.strip():
        raise InstanceInputError(f"{prefix}: empty base_commit", instance_id=iid)
    if not COMMIT_RE.fullmatch(inst.base_commit):  # (fullmatch: `$` lets a final newline in) enters git, Dockerfile
        raise InstanceInputError(f"{prefix}: base_commit {inst.base_commit[:80]!r} is not a commit id (4 to 64 hex "
                                 "digits)", instance_id=iid)
    problem = unsafe_paths_problem(inst.patch, "patch") or unsafe_paths_problem(inst.test_patch, "test_patch") \
        or shared_files_problem(inst.patch, inst.test_patch)
    if problem:
        raise InstanceInputError(f"{prefix}: {problem}", instance_id=iid)
    return inst



def load_instances(path: Path | str) -> LoadResult:
    """Load every row of `path`; bad rows become errors, duplicates of an id are errors too.

    Raises `InstanceInputError` only when the file as a whole is unreadable (missing, unknown
    suffix, a `.json` that does not parse).
    """
    path = Path(path)
    if not path.is_file():
        raise InstanceInputError(f"instance file not found: {path}")
    out = LoadResult()
    seen: set[str] = set()
    folders: dict[str, tuple[str, str]] = {}  # folder name -> (instance_id, where) of the first row
    for where, row in _raw_rows(path):
        if isinstance(row, InstanceInputError):
            out.errors.append(row)
            continue
        try:
            inst = parse_row(row, where, path.name)
            folder = folder_name(inst.instance_id)
        except InstanceInputError as e:
            out.errors.append(e)
            continue
        except ValueError as e:
            out.errors.append(InstanceInputError(f"{path.name} {where}: {e}"))
            continue
        if inst.instance_id in seen:
            out.errors.append(InstanceInputError(f"{path.name} {where}: duplicate instance_id, kept the first",
                                                 instance_id=inst.instance_id))
            continue
        if folder in folders:
            other, other_where = folders[folder]
            out.errors.append(InstanceInputError(
                f"{path.name} {where}: instance_id {inst.instance_id!r} would share the folder {folder!r} with "
                f"{other!r} ({other_where}); kept the first", instance_id=inst.instance_id))
            continue
        seen.add(inst.instance_id)
        folders[folder] = (inst.instance_id, where)
        out.instances.append(inst)
    return out


def read_ids_file(path: Path | str) -> list[str]:
    """Instance ids from a text file: one per line; blank lines and `#` comments ignored."""
    ids = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ids.append(line)
    return ids


def instance_language(inst: Instance) -> str:
    """The instance's language, lower-cased; `DEFAULT_LANGUAGE` when the row has none."""
    return (inst.language or DEFAULT_LANGUAGE).lower()


def filter_instances(instances: Iterable[Instance], *, ids: Iterable[str] | None = None,
                     language: str | None = None, limit: int | None = None) -> list[Instance]:
    """Keep file order; `ids` (exact instance ids), `language` (case-insensitive), then the
    first `limit` of what remains. `None` means "no filter"."""
    wanted = set(ids) if ids is not None else None
    lang = language.lower() if language else None
    out = [i for i in instances
           if (wanted is None or i.instance_id in wanted)
           and (lang is None or instance_language(i) == lang)]
    return out[:limit] if limit is not None else out


def load_and_select(path: Path | str, *, ids: Iterable[str] | None = None, ids_file: Path | str | None = None,
                    language: str | None = None, limit: int | None = None) -> LoadResult:
    """`load_instances` then `filter_instances`; `ids` and the ids of `ids_file` are united.

    Errors of rows outside the selection are dropped when ids were requested (an error row whose
    id is unknown is kept). Requested ids found nowhere are listed in `missing_ids`. Raises
    InstanceInputError when `language` names no language of the file (a typo such as `golang`
    for `go`), listing the languages present.
    """
    loaded = load_instances(path)
    wanted: list[str] | None = None
    if ids or ids_file:
        wanted = list(ids or [])
        if ids_file:
            wanted += read_ids_file(ids_file)
        wanted = list(dict.fromkeys(wanted))
    selected = filter_instances(loaded.instances, ids=wanted, language=language, limit=limit)
    if language and loaded.instances and not any(instance_language(i) == language.lower() for i in loaded.instances):
        present = sorted({instance_language(i) for i in loaded.instances})
        raise InstanceInputError(f"no instance of language {language!r} in {path}; languages present: "
                                 f"{', '.join(present)}")
    errors = loaded.errors
    missing: list[str] = []
    if wanted is not None:
        errors = [e for e in errors if e.instance_id is None or e.instance_id in wanted]
        have = {i.instance_id for i in loaded.instances} | {e.instance_id for e in errors}
        missing = [i for i in wanted if i not in have]
    return LoadResult(instances=selected, errors=errors, missing_ids=missing)


def require_usable(loaded: LoadResult, path: Path | str, errors_file: Path | str | None = None) -> None:
    """Raise InstanceInputError when the instance file gave no usable row at all: every row bad
    (one line naming how many and the first cause; `errors_file` lists them all) or no row.
    A selection that leaves nothing out of good rows (`--ids`, `--language`, `--limit 0`) is not
    an error here: requested ids that are missing are reported by the caller."""
    if loaded.instances:
        return
    name = Path(path).name
    if loaded.errors:
        where = f"; all listed in {errors_file}" if errors_file else ""
        n = len(loaded.errors)
        raise InstanceInputError(f"no usable row in {name}: {n} bad row{'s' * (n != 1)} (first: "
                                 f"{str(loaded.errors[0])[:300]}){where}")
    if not loaded.missing_ids and not Path(path).stat().st_size:
        raise InstanceInputError(f"instance file {name} is empty")

