"""Reading a Node project's manifests: package.json fields, the package manager and its
lockfile, the dependencies a patch adds to package.json; `recipe()` holds the data
(`recipes/node.yaml`)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from envpool.patches import added_lines
from envpool.toolchains import version_key


@lru_cache(maxsize=1)
def recipe() -> dict[str, Any]:
    """The data in `recipes/node.yaml` (LTS dates, package-manager floors, env, repairs)."""
    return yaml.safe_load((Path(__file__).parents[1] / "recipes" / "node.yaml").read_text())


# -- reading the tree ---------------------------------------------------------------------------

def read_json(tree, path: str) -> dict:
    text = tree.read(path)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def package_deps(pkg: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies"):
        section = pkg.get(key)
        if isinstance(section, dict):
            out.update({str(k): str(v) for k, v in section.items()})
    return out


def package_scripts(pkg: dict) -> dict[str, str]:
    s = pkg.get("scripts")
    return {str(k): str(v) for k, v in s.items()} if isinstance(s, dict) else {}


def package_manager(tree, pkg: dict) -> tuple[str, str | None, str | None, list[str]]:
    """(pm, pm_version, lockfile, notes) of the root package; see the module doc."""
    notes: list[str] = []
    field_pm = str(pkg.get("packageManager") or "")
    m = re.match(r"^(npm|yarn|pnpm)@v?([0-9][^+\s]*)", field_pm)
    locks = [p for p in ("pnpm-lock.yaml", "yarn.lock", "package-lock.json", "npm-shrinkwrap.json")
             if tree.exists(p)]
    if m:
        name, ver = m.group(1), m.group(2)
        if name == "yarn" and version_key(ver)[:1] != (1,):
            name = "yarn-berry"
        mine = {"pnpm": ("pnpm-lock.yaml",), "yarn": ("yarn.lock",), "yarn-berry": ("yarn.lock",),
                "npm": ("package-lock.json", "npm-shrinkwrap.json")}[name]
        lock = next((x for x in locks if x in mine), None)
        notes.append(f"package manager {name} {ver} from packageManager")
        return name, ver, lock, notes
    if "pnpm-lock.yaml" in locks:
        text = tree.read("pnpm-lock.yaml") or ""
        lv = re.search(r"^lockfileVersion:\s*'?\"?([0-9.]+)", text, re.M)
        major = None
        if lv:
            table = {str(k): v for k, v in recipe()["pnpm_lock_major"].items()}
            major = table.get(lv.group(1))
            if major is None:
                try:
                    major = 9 if float(lv.group(1)) >= 7 else 8 if float(lv.group(1)) >= 6 else 6
                except ValueError:
                    major = None
        notes.append(f"pnpm-lock.yaml (lockfileVersion {lv.group(1) if lv else '?'}) -> pnpm {major or 'latest'}")
        return "pnpm", str(major) if major else None, "pnpm-lock.yaml", notes
    if "yarn.lock" in locks:
        text = tree.read("yarn.lock") or ""
        if "__metadata:" in text or tree.exists(".yarnrc.yml"):
            notes.append("yarn.lock in the berry format -> yarn berry")
            return "yarn-berry", None, "yarn.lock", notes
        return "yarn", None, "yarn.lock", notes
    for lock in ("package-lock.json", "npm-shrinkwrap.json"):
        if lock in locks:
            return "npm", None, lock, notes
    notes.append("no lockfile: npm install resolves today's versions within package.json's ranges")
    return "npm", None, None, notes


# -- dependencies the patches add ---------------------------------------------------------------

_TOP_KEYS = {"name", "version", "description", "main", "module", "types", "typings", "browser", "type",
             "license", "node", "npm", "yarn", "pnpm", "packageManager", "private", "homepage",
             "author", "sideEffects", "exports", "bin", "unpkg", "jsdelivr"}
_RANGE = re.compile(r"^(?:[\^~]?\d[\w.+-]*|[<>]=?\s*\d[\w. <>=|-]*|\*|latest|npm:[\w@/.^~-]+)$")


def added_dependencies(patch_text: str, base_pkg: dict) -> list[str]:
    """``name@range`` for every dependency a diff adds to the root package.json that the base
    package.json lacks (version-range values only: scripts and fields are not dependencies)."""
    have = package_deps(base_pkg)
    out: list[str] = []
    for line in added_lines(patch_text).get("package.json", []):
        m = re.match(r'^\s*"(@?[a-z0-9][\w.-]*(?:/[\w.-]+)?)"\s*:\s*"([^"]+)"\s*,?\s*$', line)
        if not m:
            continue
        name, rng = m.group(1), m.group(2).strip()
        if name in _TOP_KEYS or name in have or not _RANGE.match(rng):
            continue
        out.append(f"{name}@{rng}")
    return list(dict.fromkeys(out))


