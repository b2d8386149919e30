"""Names that two modules or two classes of swemint share (issue 28: "names that say what they
are, with no two modules or classes sharing one").

    python3 scripts/name_clashes.py [CHECKOUT] [--json]

It reads the Python files of the packages (`agents`, `envpool`, `pipeline`, `swemint`) and of
`scripts/` in CHECKOUT (default: this one), parses them with `ast` (nothing is imported or run)
and prints two lists:

- `modules`: module basenames that more than one file carries (`config.py` in two packages, say),
  with the files. `__init__.py` and `__main__.py` are Python's own names and are not counted.
  The per-language packages under `agents/ecosystems/<lang>/` are counted like every other
  module: the contract's pattern is "a language is a package, one concern per file", and the
  language packages name their files after the concern and the language (`go_setup.py`,
  `cargo_setup.py`, `java_recipe.py`), so two languages' files share no name either;
- `classes`: public class names (module-level `class X`, X not starting with `_`) that more than
  one file defines, with the files. A class re-exported by import is not a definition.

Exit status: 0 when both lists are empty, 1 otherwise (so a test or check can hold the line);
`--json` prints one object {"modules": {name: [files]}, "classes": {name: [files]}}.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOTS = ("agents", "envpool", "pipeline", "swemint", "scripts")
PYTHON_NAMES = {"__init__.py", "__main__.py"}


def _files(root: Path) -> list[Path]:
    return sorted(p for top in ROOTS if (root / top).is_dir()
                  for p in (root / top).rglob("*.py") if "__pycache__" not in p.parts)


def clashes(root: Path) -> dict[str, dict[str, list[str]]]:
    """{"modules": {basename: [files]}, "classes": {class name: [files]}} for the names more than
    one file of `root` uses (files relative to `root`, sorted). A file that does not parse is
    reported on stderr and counted for its module name only."""
    root = Path(root)
    modules: dict[str, list[str]] = defaultdict(list)
    classes: dict[str, list[str]] = defaultdict(list)
    for p in _files(root):
        rel = str(p.relative_to(root))
        if p.name not in PYTHON_NAMES:
            modules[p.name].append(rel)
        try:
            tree = ast.parse(p.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError as e:
            print(f"{rel}: does not parse ({e})", file=sys.stderr)
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                classes[node.name].append(rel)
    return {"modules": {k: v for k, v in sorted(modules.items()) if len(v) > 1},
            "classes": {k: v for k, v in sorted(classes.items()) if len(v) > 1}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the lists")
    args = ap.parse_args(argv)
    found = clashes(args.checkout)
    if args.json:
        print(json.dumps(found))
    else:
        for kind, names in found.items():
            print(f"## {kind} shared by more than one file: {len(names)}")
            for name, files in names.items():
                print(f"  {name}: {' '.join(files)}")
    return 1 if any(found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
