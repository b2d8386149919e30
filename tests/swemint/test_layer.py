"""`swemint` (the public API) is the top layer: envpool <- agents <- pipeline <- swemint. No module
of the lower layers imports it (the shared layer checker reads only envpool/, agents/ and pipeline/,
so this test holds the rule for the fourth)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_lower_layer_imports_swemint():
    offenders = []
    for top in ("envpool", "agents", "pipeline"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names
                              if n == "swemint" or n.startswith("swemint.")]
    assert offenders == []
