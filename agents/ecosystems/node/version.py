"""Which Node a project gets: its pin, CI matrix or engines.node, narrowed to the LTS of the
project's era, raised to the floors its lockfile and package manager need (see the package doc)."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import yaml

from agents.ecosystems.node.manifest import read_json, recipe
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.toolchains import version_key
from envpool.toolchains.node_image import LTS_CODENAMES, NodeRange


def _lts_of(day: date | None) -> int:
    starts = {int(k): date.fromisoformat(v) for k, v in recipe()["lts_start"].items()}
    if day is None:
        return max(starts)
    eligible = [m for m, d in starts.items() if d <= day]
    return max(eligible) if eligible else min(starts)


def _pin(tree, pkg: dict) -> tuple[str | None, str | None]:
    """(pinned version text, where) from .nvmrc / .node-version / volta."""
    for f in (".nvmrc", ".node-version", ".tool-versions"):
        text = tree.read(f)
        if not text:
            continue
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if f == ".tool-versions":
                parts = line.split()
                if len(parts) >= 2 and parts[0] in ("nodejs", "node"):
                    return parts[1], f
                continue
            if line:
                return line, f
    volta = pkg.get("volta")
    if isinstance(volta, dict) and volta.get("node"):
        return str(volta["node"]), "volta.node"
    return None, None


def _pin_major(pin: str) -> int | None:
    low = pin.strip().lower()
    if low.startswith("lts/"):
        return LTS_CODENAMES.get(low[4:])
    k = version_key(low)
    return k[0] if k else None


def ci_node_versions(tree) -> list[str]:
    """node-version values in GitHub workflows (matrices and `with:`) and .travis.yml `node_js`,
    as written (``16.x``, ``18``, ``lts/*``); `${{ }}` expressions are skipped."""
    found: list[str] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if str(k) in ("node-version", "node_version", "node", "nodejs", "node-versions", "node_js"):
                    vals = v if isinstance(v, list) else [v]
                    for x in vals:
                        if isinstance(x, (str, int, float)) and "${{" not in str(x):
                            found.append(str(x))
                walk(v)
        elif isinstance(obj, list):
            for x in obj:
                walk(x)

    paths = [p for p in tree.files if p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml"))]
    paths += [p for p in (".travis.yml",) if tree.exists(p)]
    for p in paths:
        try:
            walk(load_untrusted_yaml(tree.read(p) or ""))
        except yaml.YAMLError:
            continue
    return list(dict.fromkeys(found))


def _majors_of(values: list[str]) -> list[int]:
    out = set()
    for v in values:
        low = v.strip().lower()
        if low.startswith("lts/"):
            m = LTS_CODENAMES.get(low[4:])
            if m:
                out.add(m)
            continue
        k = version_key(low.replace(".x", ""))
        if k and k[0] >= 4:
            out.add(k[0])
    return sorted(out)


def choose_node(tree, pkg: dict, pm: str, pm_version: str | None, lockfile: str | None,
                commit_day: date | None) -> tuple[str, str, list[str]]:
    """(request for `ensure_image`, reason, substitutions); see the module doc for the policy."""
    subs: list[str] = []
    floors: list[tuple[tuple[int, ...], str]] = []
    if lockfile in ("package-lock.json", "npm-shrinkwrap.json"):
        lv = read_json(tree, lockfile).get("lockfileVersion")
        need = {int(k): v for k, v in recipe()["npm_lock_min_node"].items()}.get(lv if isinstance(lv, int) else 0)
        if need:
            floors.append((version_key(need), f"{lockfile} lockfileVersion {lv} needs npm >= 7 (Node >= {need})"))
    pm_key = "yarn" if pm == "yarn-berry" else pm
    if pm_key in ("pnpm", "yarn") and pm_version:
        table = {int(k): v for k, v in recipe()["pm_min_node"][pm_key].items()}
        need = table.get(version_key(pm_version)[0]) if version_key(pm_version) else None
        if need:
            floors.append((version_key(need), f"{pm_key} {pm_version} needs Node >= {need}"))
    engines = pkg.get("engines") if isinstance(pkg.get("engines"), dict) else {}
    eng_range = None
    if engines.get("node"):
        try:
            eng_range = NodeRange(str(engines["node"]))
        except ValueError:
            eng_range = None
    era = _lts_of(commit_day)
    floor_key = max((f[0] for f in floors), default=(0,))
    floor_major = floor_key[0] if floor_key else 0

    def meets(major: int) -> bool:
        return major >= floor_major

    pin, where = _pin(tree, pkg)
    if pin and pin.strip().lower() in ("lts/*", "lts", "node", "stable", "latest", "current", "*"):
        subs.append(f"{where} says {pin!r} (moves with time): the project's era decides")
        pin = None
    if pin:
        major = _pin_major(pin)
        if major is not None and not meets(major):
            why = "; ".join(r for k, r in floors if k[0] > major)
            subs.append(f"node {pin} requested by {where}, {floor_major} used: {why}")
            return str(floor_major), f"{where} pin raised to a floor", subs
        return pin.lstrip("v") if re.fullmatch(r"v?\d+(\.\d+)*", pin) else pin, f"pinned by {where}", subs

    all_lts = sorted(int(k) for k in recipe()["lts_start"])

    def pick(cands: list[int], why: str) -> tuple[str, str, list[str]] | None:
        ok = [m for m in cands if meets(m) and (eng_range is None or eng_range.majors([m]))]
        if not ok:
            return None
        older = [m for m in ok if m <= era]
        chosen = max(older) if older else min(ok)
        if floors and chosen == floor_major and (not older or max(older) < floor_major):
            subs.append(f"node {chosen} chosen over older candidates: " + "; ".join(r for _, r in floors))
        return str(chosen), f"{why}, newest not after the era's LTS {era}", subs

    ci = _majors_of(ci_node_versions(tree))
    if ci:
        got = pick(ci, f"CI matrix {ci}")
        if got:
            return got
        subs.append(f"CI matrix {ci} below the floor ({'; '.join(r for _, r in floors)})")
    if eng_range is not None:
        got = pick(eng_range.majors(all_lts), f"engines.node {engines['node']!r}")
        if got:
            return got
    chosen = max(era, floor_major)
    if chosen != era:
        subs.append(f"node {chosen} instead of the era's LTS {era}: " + "; ".join(r for _, r in floors))
    return str(chosen), f"newest LTS at the base commit's date ({era})", subs


