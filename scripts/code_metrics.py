"""The size and shape of a swemint checkout, as numbers that can be compared before and after a
restructuring (issue 28's measure).

    python3 scripts/code_metrics.py [CHECKOUT ...] [--json] [--list]

For each checkout (default: this one) it reads the Python files of the packages (`agents`,
`envpool`, `pipeline`, `swemint`; tests and scripts are not the code a newcomer reads first) and
the tests under `tests/`, parses them with `ast` (nothing is imported or run) and prints:

- `files`, `lines`: Python files of the packages and their lines (every line);
- `median_lines`, `p90_lines`: the median and 90th percentile of a file's length, in lines
  (nearest-rank percentile);
- `files_ge_400`: files of 400 lines or more;
- `functions_gt_8_params`: functions and methods taking more than 8 parameters (`self`/`cls`
  not counted; `*args`, `**kwargs` and keyword-only parameters counted);
- `docker_sdk_files`: package files that drive the Docker SDK themselves: they import `docker`,
  or call a client's collections (`<x>.images.<m>(`, `.containers.`, `.networks.`, `.volumes.`),
  its low-level API (`<x>.api.<m>(` with a Docker API method name) or a container's
  `exec_run` / `put_archive` / `get_archive`;
- `tests_patching_images`: test functions and fixtures that monkeypatch an image operation
  (`monkeypatch.setattr` of a name containing `image`, or `available_pythons`).

With several checkouts the numbers stand side by side (the first is "before"). `--list` adds
the files behind the counts (files >= 400 lines, Docker SDK files, the patched tests), `--json`
prints one JSON object per checkout instead of the table. Exit status 0; a file that does not
parse is reported on stderr and counted by lines only.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import statistics
import sys
from pathlib import Path

PACKAGES = ("agents", "envpool", "pipeline", "swemint")
DOCKER_COLLECTIONS = {"images", "containers", "networks", "volumes"}
DOCKER_API_METHODS = {"build", "push", "pull", "tag", "commit", "create_container", "start", "wait",
                      "inspect_container", "inspect_image", "remove_container", "remove_image",
                      "exec_create", "exec_start", "exec_inspect", "put_archive", "get_archive",
                      "containers", "images", "stats", "df", "prune_images", "prune_containers",
                      "create_host_config", "kill", "logs", "top", "version", "info", "ping"}
CONTAINER_METHODS = {"exec_run", "put_archive", "get_archive"}
MAX_PARAMS = 8
LONG_FILE = 400


def _percentile(values: list[int], p: float) -> int:
    """Nearest-rank percentile of `values` (p in 0..100); 0 for no values."""
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def _drives_docker(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "docker" or a.name.startswith("docker.")
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "docker" and not node.level:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr in CONTAINER_METHODS:
                return True
            if isinstance(owner, ast.Attribute):
                if owner.attr in DOCKER_COLLECTIONS and node.func.attr in {
                        "get", "build", "pull", "push", "remove", "list", "run", "create", "prune", "load"}:
                    return True
                if owner.attr == "api" and node.func.attr in DOCKER_API_METHODS:
                    return True
    return False


def _patched_name(call: ast.Call) -> str:
    """The attribute name a `monkeypatch.setattr(...)` call replaces ('' when not one)."""
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "setattr"
            and isinstance(f.value, ast.Name) and f.value.id == "monkeypatch" and call.args):
        return ""
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and len(call.args) == 2:
        return first.value.rsplit(".", 1)[-1]
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
        return call.args[1].value
    return ""


def _patches_images(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = _patched_name(node)
            if name and ("image" in name.lower() or name == "available_pythons"):
                return True
    return False


def _outer_functions(tree: ast.Module):
    """The functions at module level and the methods of module-level classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def measure(root: Path) -> dict:
    """The numbers of one checkout (see the module docstring for each key)."""
    root = Path(root)
    files = sorted(p for pkg in PACKAGES if (root / pkg).is_dir()
                   for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)
    lengths, long_files, docker_files, wide = {}, [], [], []
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        rel = str(p.relative_to(root))
        lengths[rel] = text.count("\n") + (not text.endswith("\n") and bool(text))
        if lengths[rel] >= LONG_FILE:
            long_files.append(rel)
        try:
            tree = ast.parse(text)
        except SyntaxError as e:
            print(f"{rel}: does not parse ({e}); counted by lines only", file=sys.stderr)
            continue
        if _drives_docker(tree):
            docker_files.append(rel)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _params(node) > MAX_PARAMS:
                wide.append(f"{rel}:{node.lineno}:{node.name}({_params(node)})")
    patched = []
    for p in sorted((root / "tests").rglob("*.py")) if (root / "tests").is_dir() else []:
        try:
            tree = ast.parse(p.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in _outer_functions(tree):
            if _patches_images(node):  # a helper nested in a test counts once, as its test
                patched.append(f"{p.relative_to(root)}:{node.lineno}:{node.name}")
    values = list(lengths.values())
    return {"checkout": str(root), "files": len(values), "lines": sum(values),
            "median_lines": int(statistics.median(values)) if values else 0,
            "p90_lines": _percentile(values, 90), "files_ge_400": len(long_files),
            "functions_gt_8_params": len(wide), "docker_sdk_files": len(docker_files),
            "tests_patching_images": len(patched),
            "lists": {"files_ge_400": sorted(long_files, key=lambda f: -lengths[f]),
                      "functions_gt_8_params": wide, "docker_sdk_files": docker_files,
                      "tests_patching_images": patched}}


KEYS = ("files", "lines", "median_lines", "p90_lines", "files_ge_400", "functions_gt_8_params",
        "docker_sdk_files", "tests_patching_images")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="*", type=Path, default=[Path(__file__).resolve().parents[1]])
    ap.add_argument("--json", action="store_true", help="one JSON object per checkout")
    ap.add_argument("--list", action="store_true", help="the files and tests behind the counts")
    args = ap.parse_args(argv)
    results = [measure(c) for c in args.checkouts]
    if args.json:
        for r in results:
            if not args.list:
                r = {k: v for k, v in r.items() if k != "lists"}
            print(json.dumps(r))
        return 0
    width = max(len(k) for k in KEYS)
    print(" " * width + "  " + "  ".join(f"{str(r['checkout'])[-24:]:>24}" for r in results))
    for k in KEYS:
        print(f"{k:<{width}}  " + "  ".join(f"{r[k]:>24}" for r in results))
    if args.list:
        for r in results:
            print(f"\n# {r['checkout']}")
            for k, items in r["lists"].items():
                print(f"## {k} ({len(items)})")
                for i in items:
                    print(f"  {i}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
