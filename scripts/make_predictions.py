"""Predictions for measuring `swemint eval`: gold, empty and deliberately wrong patches.

    python scripts/make_predictions.py --dataset WORKDIR/dataset --mirrors /work/.mirror --out preds.jsonl

Each verified row gets one kind, round-robin in id order (`--kinds` to choose):

- `gold`: the row's patch (expected: resolved);
- `empty`: "" (expected: unresolved, FAIL_TO_PASS failing);
- `wrong`: a patch that applies but fixes nothing: a comment line appended to the first file the
  gold patch changes, made with difflib from that file at `base_commit` in the mirror (expected:
  unresolved);
- `garbage`: a patch whose context is not in the repository (expected: an error, "patch does not
  apply").

Writes SWE-bench predictions (`instance_id`, `model_patch`, `model_name_or_path` = the kind) and
prints `instance_id kind` lines.
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

COMMENT = {".py": "#", ".rb": "#", ".sh": "#", ".yaml": "#", ".yml": "#", ".toml": "#", ".c": "//", ".h": "//",
           ".cc": "//", ".cpp": "//", ".hpp": "//", ".go": "//", ".js": "//", ".ts": "//", ".java": "//",
           ".rs": "//", ".php": "//", ".kt": "//", ".scala": "//"}
GARBAGE = ("diff --git a/swemint_no_such_file.txt b/swemint_no_such_file.txt\n--- a/swemint_no_such_file.txt\n"
           "+++ b/swemint_no_such_file.txt\n@@ -1,2 +1,2 @@\n context that is not there\n-old\n+new\n")


def mirror_of(mirrors: Path, repo: str) -> Path:
    for cand in (mirrors / repo.replace("/", "+") / "repo", mirrors / f"{repo}.git", mirrors / repo):
        if cand.is_dir():
            return cand
    raise FileNotFoundError(f"no mirror of {repo} under {mirrors}")


def wrong_patch(row: dict, mirrors: Path) -> str:
    """A comment appended to the first changed file (applies; fixes nothing)."""
    from envpool.patches import files_in_patch

    path = files_in_patch(row["patch"])[0]
    git_dir = mirror_of(mirrors, row["repo"])
    text = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{row['base_commit']}:{path}"],
                          capture_output=True, text=True, check=True).stdout
    mark = COMMENT.get(Path(path).suffix, "#")
    old = text.splitlines(keepends=True)
    if old and not old[-1].endswith("\n"):
        old[-1] += "\n"
        text += "\n"
    new = old + [f"{mark} swemint: a deliberately wrong patch\n"]
    body = "".join(difflib.unified_diff(text.splitlines(keepends=True), new, f"a/{path}", f"b/{path}"))
    return f"diff --git a/{path} b/{path}\n{body}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--kinds", default="gold,empty,wrong,garbage")
    a = ap.parse_args(argv)
    path = a.dataset / "verified.parquet" if a.dataset.is_dir() else a.dataset
    rows = sorted(pq.read_table(path).to_pylist(), key=lambda r: r["instance_id"])
    kinds = [k for k in a.kinds.split(",") if k]
    preds = []
    for n, row in enumerate(rows):
        kind = kinds[n % len(kinds)]
        patch = {"gold": lambda: row["patch"], "empty": lambda: "", "wrong": lambda: wrong_patch(row, a.mirrors),  # noqa: B023
                 "garbage": lambda: GARBAGE}[kind]()
        preds.append({"instance_id": row["instance_id"], "model_patch": patch, "model_name_or_path": kind})
        print(row["instance_id"], kind)
    a.out.write_text("".join(json.dumps(p) + "\n" for p in preds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
