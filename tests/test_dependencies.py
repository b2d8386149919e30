"""pyproject's dependencies match the code (issue 29): every runtime dependency is imported by the
code, the ones whose internals or file formats the code relies on have an upper bound, and the
`ray` extra requires the Ray that has the token authentication swemint turns on."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("envpool", "agents", "pipeline", "swemint")
IMPORT_NAME = {"pygithub": "github", "pyyaml": "yaml", "pyaskalono": "askalono"}
"""Distribution name -> module name, where they differ."""


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def imported_modules() -> set[str]:
    out = set()
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    out |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    out.add(node.module.split(".")[0])
    return out


def test_every_runtime_dependency_is_imported():
    used = imported_modules()
    reqs = [Requirement(r) for r in project()["dependencies"]]
    unused = [r.name for r in reqs if IMPORT_NAME.get(r.name.lower(), r.name.lower().replace("-", "_")) not in used]
    assert unused == []


def test_upper_bounds_where_the_code_depends_on_internals_or_formats():
    reqs = {Requirement(r).name.lower(): Requirement(r) for r in project()["dependencies"]}
    for name in ("duckdb", "pygithub", "pyaskalono"):
        assert any(s.operator in ("<", "<=", "~=", "==") for s in reqs[name].specifier), name
    assert (ROOT / "pipeline/sources/client.py").read_text().count("_Requester__connectionClass") >= 1


def test_the_ray_extra_has_token_authentication():
    for extra in ("ray", "all", "test"):
        (ray,) = [Requirement(r) for r in project()["optional-dependencies"][extra] if r.startswith("ray")]
        floor = min(Version(s.version) for s in ray.specifier if s.operator == ">=")
        assert floor >= Version("2.52"), extra  # RAY_AUTH_MODE=token arrived in Ray 2.52
        assert any(s.operator == "<" for s in ray.specifier), extra
    assert re.search(r"RAY_AUTH_MODE", (ROOT / "pipeline/raysec.py").read_text())
