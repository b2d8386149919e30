"""JavaScript/TypeScript: npm, yarn and pnpm projects tested with vitest, jest or mocha.

Analysis (`analyze`, pure: reads the tree only):
- package manager: ``packageManager`` (``pnpm@9.7.0``), else the lockfile (pnpm-lock.yaml,
  yarn.lock -- yarn berry when it has ``__metadata`` or a ``.yarnrc.yml`` --, package-lock.json /
  npm-shrinkwrap.json), else npm without a lockfile;
- Node: a pin (``.nvmrc``, ``.node-version``, ``volta.node``) is used as is; otherwise the CI
  workflow's node-version matrix, else ``engines.node``, each narrowed to the newest LTS of the
  project's era (base commit date; `recipes/node.yaml` ``lts_start``) so a 2022 project gets 16
  or 18, not today's Node; else that era's LTS. Floors always win and are recorded as
  substitutions: package-lock v3 needs npm >= 7 (Node 16), a pnpm/yarn major its own minimum
  (pnpm 9: Node 18.12);
- runner: the one the test scripts name (following ``npm run x`` one level), else the first of
  vitest, jest, mocha in the dependencies; run from the directory that holds its configuration
  (the root, or the touched files' workspace package);
- dependencies the patch or test_patch *adds* to the root package.json (tests run offline, so
  the after side's new packages are installed at setup without touching package.json).

Plan: toolchain image from `envpool.toolchains.node.ensure_image`; setup = the package manager
(pnpm at its pinned version), a frozen install (``npm ci``, ``yarn install --frozen-lockfile``,
``pnpm install --frozen-lockfile``), the added packages; test command = only the touched test
files with a machine-readable report (vitest/jest JSON file, mocha JSON on stdout). `repair`
answers a lockfile mismatch with a non-frozen install, engine checks with engine-strict off, a
failing lifecycle script with ignore-scripts, a network hiccup with a pause.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from agents.models import Instance
from agents.polyglot.base import PolyPlan
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.toolchains import ToolchainChoice, version_key
from envpool.toolchains.node import LTS_CODENAMES, NODE_PATH_ENV, NodeRange

__all__ = ["ECOSYSTEM", "NodeAnalysis", "NodeEcosystem", "added_dependencies", "analyze",
           "build_plan", "recipe", "select_test_files"]

REPORT_PATH = "/tmp/swemint-node/report.json"
"""Where vitest/jest write their JSON report (inside the test container)."""

TEST_EXTS = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".coffee")
_NOT_TESTS = re.compile(r"(^|/)(__snapshots__|__fixtures__|fixtures?|__mocks__|node_modules|dist|"
                        r"build|coverage)(/|$)")
_TEST_DIR = re.compile(r"(^|/)(__tests__|tests?|specs?|__test__)(/|$)")
_TEST_NAME = re.compile(r"[._-](test|spec)s?\.[cm]?[jt]sx?$|\.(test|spec)\.coffee$")
_CONFIG = {
    "vitest": ("vitest.config", "vitest.workspace", "vite.config", "vitest.projects"),
    "jest": ("jest.config",),
    "mocha": (".mocharc",),
}
_RUNNER_IN_SCRIPT = re.compile(r"(?<![\w@:.-])(vitest|jest|mocha|_mocha|react-scripts test|craco test|"
                               r"react-app-rewired test)(?![\w-])")


@lru_cache(maxsize=1)
def recipe() -> dict[str, Any]:
    """The data in `recipes/node.yaml` (LTS dates, package-manager floors, env, repairs)."""
    return yaml.safe_load((Path(__file__).parent / "recipes" / "node.yaml").read_text())


@dataclass
class NodeAnalysis:
    """What `analyze` found for one instance.

    - `pm`: ``npm`` | ``yarn`` | ``yarn-berry`` | ``pnpm``; `pm_version`: exact or major (``9.7.0``,
      ``8``) or None (the image's npm / yarn v1); `lockfile`: its path or None;
    - `node_request`: what to ask `ensure_image` for (a version or major); `node_reason`: why;
    - `runner`: ``vitest`` | ``jest`` | ``mocha``; `runner_dir`: where to run it ("" = root);
      `runner_options`: options taken from the project's script; `runner_env`: ``VAR=value``
      assignments that script sets; `cra`: jest is run through react-scripts (or craco);
    - `yarn_path`: yarn berry's vendored release (``.yarnrc.yml`` ``yarnPath``), run by yarn 1;
    - `test_files`: touched test files (repository relative);
    - `extra_packages`: ``name@range`` the patch/test_patch adds to the root package.json;
    - `substitutions`, `notes`: human-readable records.
    """

    pm: str
    pm_version: str | None
    lockfile: str | None
    node_request: str
    node_reason: str
    runner: str
    runner_dir: str
    test_files: list[str]
    runner_options: list[str] = field(default_factory=list)
    runner_env: list[str] = field(default_factory=list)
    cra: str | None = None
    yarn_path: str | None = None
    extra_packages: list[str] = field(default_factory=list)
    substitutions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- reading the tree ---------------------------------------------------------------------------

def _json(tree, path: str) -> dict:
    text = tree.read(path)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _deps(pkg: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies"):
        section = pkg.get(key)
        if isinstance(section, dict):
            out.update({str(k): str(v) for k, v in section.items()})
    return out


def _scripts(pkg: dict) -> dict[str, str]:
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
            walk(yaml.safe_load(tree.read(p) or ""))
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
        lv = _json(tree, lockfile).get("lockfileVersion")
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


# -- runner -------------------------------------------------------------------------------------

def _script_commands(scripts: dict[str, str], name: str, depth: int = 0) -> list[str]:
    """The text of script `name` and of the scripts it runs (``npm run x``, ``yarn x``,
    ``pnpm x``, ``run-s``/``run-p``/``npm-run-all`` names), two levels deep."""
    text = scripts.get(name)
    if text is None:
        return []
    out = [text]
    if depth >= 2:
        return out
    for m in re.finditer(r"(?:npm run|pnpm(?: run)?|yarn(?: run)?)\s+([\w:.-]+)", text):
        if m.group(1) in scripts and m.group(1) != name:
            out += _script_commands(scripts, m.group(1), depth + 1)
    for m in re.finditer(r"(?:run-s|run-p|npm-run-all)((?:\s+(?:\"[^\"]+\"|'[^']+'|[\w:.*-]+))+)", text):
        for n in shlex.split(m.group(1)):
            if n.startswith("-"):
                continue
            pat = re.compile("^" + re.escape(n).replace(r"\*", ".*") + "$")
            for s in scripts:
                if pat.match(s) and s != name:
                    out += _script_commands(scripts, s, depth + 1)
    return out


def _test_scripts(scripts: dict[str, str]) -> list[str]:
    names = ["test"] + [s for s in scripts if s != "test" and re.match(r"^(test|unit|spec)([:_-]|$)", s)]
    out: list[str] = []
    for n in names:
        out += _script_commands(scripts, n)
    return out


def runner_of(pkg: dict, tree, pkg_dir: str) -> tuple[str | None, str | None, str | None]:
    """(runner, the script text naming it or None, react-scripts-like wrapper) for the package
    at `pkg_dir` ("" = root)."""
    scripts = _scripts(pkg)
    deps = _deps(pkg)
    for text in _test_scripts(scripts):
        for m in _RUNNER_IN_SCRIPT.finditer(text):
            word = m.group(1)
            if word.endswith(" test"):
                return "jest", text, word.split()[0]
            return ("mocha" if word == "_mocha" else word), text, None
    for r in recipe()["runners"]:
        if r in deps:
            return r, None, None
    if "react-scripts" in deps:
        return "jest", None, "react-scripts"
    prefix = f"{pkg_dir}/" if pkg_dir else ""
    for r, names in _CONFIG.items():
        if any(tree.exists(f"{prefix}{n}{ext}") for n in names
               for ext in (".js", ".ts", ".mjs", ".cjs", ".mts", ".cts", ".json", ".yml", ".yaml", "")):
            return r, None, None
    if isinstance(pkg.get("jest"), dict):
        return "jest", None, None
    return None, None, None


def _has_config(tree, pkg: dict, pkg_dir: str, runner: str) -> bool:
    prefix = f"{pkg_dir}/" if pkg_dir else ""
    if runner == "jest" and isinstance(pkg.get("jest"), dict):
        return True
    if runner == "mocha" and isinstance(pkg.get("mocha"), dict):
        return True
    return any(p.startswith(prefix) and "/" not in p[len(prefix):] and
               p[len(prefix):].startswith(_CONFIG.get(runner, ())) for p in tree.files) if _CONFIG.get(runner) else False


def select_test_files(touched: list[str]) -> list[str]:
    """The touched paths that are JS/TS test files (under a test directory or named
    ``*.test.*``/``*.spec.*``; never snapshots, fixtures, mocks or build output)."""
    out = []
    for p in touched:
        if not p.endswith(TEST_EXTS) or p.endswith(".d.ts") or _NOT_TESTS.search(p):
            continue
        if _TEST_NAME.search(p) or _TEST_DIR.search(p):
            out.append(p)
    return out


def _package_dir(tree, path: str) -> str:
    """The directory of the nearest package.json above `path` ("" = root)."""
    parts = PurePosixPath(path).parts[:-1]
    for i in range(len(parts), 0, -1):
        d = "/".join(parts[:i])
        if tree.exists(f"{d}/package.json"):
            return d
    return ""


_OPT_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")


def glob_regex(pattern: str) -> re.Pattern:
    """A shell glob with ``**`` (any directories), ``*``, ``?`` and ``{a,b}`` as a regex over
    repository-relative paths (a leading ``./`` is ignored)."""
    pat = pattern[2:] if pattern.startswith("./") else pattern
    out, i = "", 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
            continue
        if pat.startswith("**", i):
            out, i = out + ".*", i + 2
            continue
        if c == "{" and "}" in pat[i:]:
            j = pat.index("}", i)
            out += "(?:" + "|".join(re.escape(x) for x in pat[i + 1:j].split(",")) + ")"
            i = j + 1
            continue
        out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        i += 1
    return re.compile(out + "$")


def mocha_spec_globs(script: str | None) -> list[str]:
    """The positional spec paths/globs of a script's mocha invocation (``test/unit/**/*.js``)."""
    if not script:
        return []
    keep = recipe()["mocha_keep_options"]
    skip_value = {"--reporter", "-R", "--reporter-option", "--reporter-options", "-O", "--grep", "-g",
                  "--fgrep", "-f", "--spec", "--ignore", "--exclude", "--jobs", "-j"}
    for part in _OPT_SPLIT.split(script):
        try:
            toks = shlex.split(part)
        except ValueError:
            toks = part.split()
        idx = next((i for i, t in enumerate(toks) if PurePosixPath(t).name in ("mocha", "_mocha")), None)
        if idx is None:
            continue
        out, rest, i = [], toks[idx + 1:], 0
        while i < len(rest):
            t = rest[i]
            if t.startswith("-"):
                name, eq, _ = t.partition("=")
                if not eq and (keep.get(name) or name in skip_value):
                    i += 1
                if name == "--spec" and not eq and i < len(rest):
                    out.append(rest[i])
            else:
                out.append(t)
            i += 1
        return out
    return []


_RUNNER_BINS = {"mocha": ("mocha", "_mocha"), "jest": ("jest", "jest.js"),
                "vitest": ("vitest", "vitest.mjs")}


def mocha_options(script: str | None) -> tuple[list[str], list[str]]:
    """(mocha options to keep, VAR=value assignments) from a script's mocha invocation."""
    return runner_options(script, "mocha")


def runner_options(script: str | None, runner: str) -> tuple[list[str], list[str]]:
    """(options to keep, ``VAR=value`` assignments before it) from a script's invocation of
    `runner` (mocha, jest, vitest; kept options: `recipes/node.yaml` ``<runner>_keep_options``).
    ``NODE_OPTIONS=--experimental-vm-modules jest -c jest.unit.js`` ->
    (["-c", "jest.unit.js"], ["NODE_OPTIONS=--experimental-vm-modules"])."""
    if not script:
        return [], []
    keep = recipe().get(f"{runner}_keep_options") or {}
    for part in _OPT_SPLIT.split(script):
        try:
            toks = shlex.split(part)
        except ValueError:
            toks = part.split()
        idx = next((i for i, t in enumerate(toks) if PurePosixPath(t).name in _RUNNER_BINS[runner]), None)
        if idx is None:
            continue
        env = [t for t in toks[:idx] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", t)]
        opts: list[str] = []
        rest = toks[idx + 1:]
        i = 0
        while i < len(rest):
            t = rest[i]
            name, eq, _val = t.partition("=")
            if name in keep:
                opts.append(t)
                if keep[name] and not eq and i + 1 < len(rest):
                    opts.append(rest[i + 1])
                    i += 1
            i += 1
        return opts, env
    return [], []


# -- dependencies the patches add ---------------------------------------------------------------

_TOP_KEYS = {"name", "version", "description", "main", "module", "types", "typings", "browser", "type",
             "license", "node", "npm", "yarn", "pnpm", "packageManager", "private", "homepage",
             "author", "sideEffects", "exports", "bin", "unpkg", "jsdelivr"}
_RANGE = re.compile(r"^(?:[\^~]?\d[\w.+-]*|[<>]=?\s*\d[\w. <>=|-]*|\*|latest|npm:[\w@/.^~-]+)$")


def added_dependencies(patch_text: str, base_pkg: dict) -> list[str]:
    """``name@range`` for every dependency a diff adds to the root package.json that the base
    package.json lacks (version-range values only: scripts and fields are not dependencies)."""
    have = _deps(base_pkg)
    out: list[str] = []
    in_root = False
    for line in patch_text.splitlines():
        if line.startswith("diff --git "):
            in_root = line.split()[-1] in ("b/package.json",)
            continue
        if not in_root or not line.startswith("+") or line.startswith("+++"):
            continue
        m = re.match(r'^\+\s*"(@?[a-z0-9][\w.-]*(?:/[\w.-]+)?)"\s*:\s*"([^"]+)"\s*,?\s*$', line)
        if not m:
            continue
        name, rng = m.group(1), m.group(2).strip()
        if name in _TOP_KEYS or name in have or not _RANGE.match(rng):
            continue
        out.append(f"{name}@{rng}")
    return list(dict.fromkeys(out))


# -- analysis -----------------------------------------------------------------------------------

def _commit_day(tree, instance: Instance) -> date | None:
    try:
        return tree.commit_time.date()
    except Exception:
        created = instance.created
        return created.date() if isinstance(created, datetime) else None


def analyze(tree, instance: Instance, touched: list[str]) -> NodeAnalysis:
    """Decide package manager, Node, runner, test files and extra packages for `instance`.

    `tree`: an `agents.gitrepo.GitTree` (or anything with `files`, `exists`, `read`,
    `commit_time`). Raises EnvBuildError when there is no root package.json, no touched test
    file, or no supported runner (vitest, jest, mocha)."""
    iid = instance.instance_id
    pkg = _json(tree, "package.json")
    if not pkg:
        raise EnvBuildError("no readable package.json at the repository root", instance_id=iid)
    pm, pm_version, lockfile, notes = package_manager(tree, pkg)
    request, reason, subs = choose_node(tree, pkg, pm, pm_version, lockfile, _commit_day(tree, instance))
    notes.append(f"node {request}: {reason}")
    files = select_test_files(touched)
    if not files:
        raise EnvBuildError(f"test_patch touches no JS/TS test file ({', '.join(touched[:5])})", instance_id=iid)
    # the runner: the root's when it has one, else the touched files' workspace package's
    runner, script, cra = runner_of(pkg, tree, "")
    runner_dir = ""
    pkg_dirs = {_package_dir(tree, f) for f in files} - {""}
    if len(pkg_dirs) == 1:
        d = next(iter(pkg_dirs))
        sub = _json(tree, f"{d}/package.json")
        r2, s2, c2 = runner_of(sub, tree, d)
        root_configured = runner is not None and (script is not None or _has_config(tree, pkg, "", runner))
        if r2 is not None and (not root_configured or (s2 is not None and _has_config(tree, sub, d, r2))):
            runner, script, cra, runner_dir = r2, s2, c2, d
            notes.append(f"{r2} run from workspace package {d}")
    if runner is None:
        deps = _deps(pkg)
        other = [r for r in ("karma", "ava", "tap", "jasmine", "qunit", "uvu", "tape") if r in deps]
        raise EnvBuildError("no supported JS test runner (vitest, jest, mocha) in package.json"
                            + (f"; found {', '.join(other)}" if other else ""), instance_id=iid)
    opts, env_assign = runner_options(script, runner) if not cra else ([], [])
    if runner == "mocha":
        # touched files outside the script's spec globs belong to another runner (karma specs)
        globs = [glob_regex(g) for g in mocha_spec_globs(script)]
        base = f"{runner_dir}/" if runner_dir else ""
        inside = [f for f in files if any(g.match(f[len(base):]) for g in globs)]
        if globs and inside and len(inside) < len(files):
            notes.append(f"left out (not mocha specs by the test script): {', '.join(sorted(set(files) - set(inside)))}")
            files = inside
    extra: list[str] = []
    for text in (instance.test_patch, instance.patch):
        extra += added_dependencies(text, pkg)
    extra = list(dict.fromkeys(extra))
    if extra:
        notes.append(f"installed for the patched package.json: {', '.join(extra)}")
    if runner == "mocha" and not any(o.startswith(("--timeout", "-t")) or o == "--no-timeouts" for o in opts):
        rc = [p for p in tree.files if PurePosixPath(p).name.startswith(".mocharc")
              and "/" not in p[len(runner_dir) + 1 if runner_dir else 0:]]
        has_rc_timeout = any("timeout" in (tree.read(p) or "") for p in rc) or "timeout" in json.dumps(pkg.get("mocha") or {})
        if not has_rc_timeout:
            opts += ["--timeout", str(recipe()["mocha_default_timeout"])]
    mocha_spec = _deps(_json(tree, f"{runner_dir}/package.json") if runner_dir else pkg).get("mocha") or \
        _deps(pkg).get("mocha", "")
    mocha_major = version_key(re.sub(r"^[\^~>=<v\s]+", "", mocha_spec))[:1]
    if runner == "mocha" and "--exit" not in opts and not (mocha_major and mocha_major[0] < 4):
        opts.append("--exit")  # mocha >= 4 waits for open handles (servers) otherwise
    yarn_path = None
    if pm == "yarn-berry":
        rc = yaml.safe_load(tree.read(".yarnrc.yml") or "") or {}
        yarn_path = str(rc.get("yarnPath")) if isinstance(rc, dict) and rc.get("yarnPath") else None
    return NodeAnalysis(pm=pm, pm_version=pm_version, lockfile=lockfile, node_request=request, yarn_path=yarn_path,
                        node_reason=reason, runner=runner, runner_dir=runner_dir, test_files=files,
                        runner_options=opts, runner_env=env_assign, cra=cra, extra_packages=extra,
                        substitutions=subs, notes=notes)


# -- plan ---------------------------------------------------------------------------------------

def _install_commands(a: NodeAnalysis) -> list[str]:
    cmds: list[str] = []
    if a.pm == "pnpm":
        cmds.append(f"npm install -g --no-audit --no-fund pnpm@{a.pm_version or 'latest'} && pnpm --version")
        cmds.append("pnpm install --frozen-lockfile" if a.lockfile else "pnpm install")
    elif a.pm == "yarn":
        cmds.append("yarn install --frozen-lockfile --non-interactive --network-timeout 600000"
                    if a.lockfile else "yarn install --non-interactive --network-timeout 600000")
    elif a.pm == "yarn-berry":
        if not a.yarn_path:  # a vendored release (.yarnrc.yml yarnPath) is run by yarn 1 itself
            cmds.append("npm install -g --no-audit --no-fund corepack@latest && rm -f /opt/node/bin/yarn "
                        "/opt/node/bin/yarnpkg /usr/local/bin/yarn /usr/local/bin/yarnpkg && "
                        "corepack enable --install-directory /opt/node/bin yarn && "
                        f"corepack prepare yarn@{a.pm_version or 'stable'} --activate && yarn --version")
        cmds.append("yarn install --immutable" if a.lockfile else "yarn install")
    else:
        cmds.append("npm ci --no-audit --no-fund" if a.lockfile else "npm install --no-audit --no-fund")
    if a.extra_packages:
        pkgs = " ".join(shlex.quote(p) for p in a.extra_packages)
        if a.pm == "npm":
            cmds.append(f"npm install --no-save --no-audit --no-fund {pkgs}")
        else:
            lock = a.lockfile or "package.json"
            add = {"pnpm": f"pnpm add -D -w {pkgs}", "yarn": f"yarn add -D -W --non-interactive {pkgs}",
                   "yarn-berry": f"yarn add -D {pkgs}"}[a.pm]
            cmds.append(f"cp package.json /tmp/swemint-package.json && cp {lock} /tmp/swemint-lock && "
                        f"{{ {add}; rc=$?; cp /tmp/swemint-package.json package.json; cp /tmp/swemint-lock {lock}; "
                        f"exit $rc; }}")
    return cmds


def _bin_path(a: NodeAnalysis) -> str:
    dirs = ["$PWD/node_modules/.bin"] + (["/testbed/node_modules/.bin"] if a.runner_dir else [])
    return ":".join(dirs) + ":$PATH"


def test_command(a: NodeAnalysis) -> tuple[str, str | None, str]:
    """(bash command run in /testbed, report path or None = its output, parser name)."""
    cd = f"cd {shlex.quote(a.runner_dir)} && " if a.runner_dir else ""
    prefix = f"{cd}mkdir -p {PurePosixPath(REPORT_PATH).parent} && export PATH={_bin_path(a)} && "
    rel = [str(PurePosixPath(f).relative_to(a.runner_dir)) if a.runner_dir else f for f in a.test_files]
    files = " ".join(shlex.quote(f) for f in rel)
    env = "".join(f"{k}={shlex.quote(v)} " for k, _, v in (e.partition("=") for e in a.runner_env))
    berry = a.pm == "yarn-berry"
    run = (lambda b: f"yarn {b}") if berry else (lambda b: b)
    opts = " ".join(shlex.quote(o) for o in a.runner_options)
    opts = f"{opts} " if opts else ""
    if a.runner == "vitest":
        return (f"{prefix}{env}{run('vitest')} run {opts}{files} --reporter=json --outputFile={REPORT_PATH}",
                REPORT_PATH, "vitest_json")
    if a.runner == "jest":
        jest = f"{run(a.cra)} test --watchAll=false" if a.cra else run("jest")
        return (f"{prefix}{env}{jest} {opts}--json --outputFile={REPORT_PATH} --runTestsByPath {files}",
                REPORT_PATH, "jest_json")
    return (f"{prefix}{env}{run('mocha')} {opts}--reporter json {files}", None, "mocha_json")


def build_plan(a: NodeAnalysis, choice: ToolchainChoice) -> PolyPlan:
    """The PolyPlan for analysis `a` on toolchain image `choice` (pure)."""
    env = {str(k): str(v) for k, v in recipe()["env"].items()}
    env["PATH"] = NODE_PATH_ENV
    command, report, parser = test_command(a)
    pm = f"{a.pm} {a.pm_version}" if a.pm_version else a.pm
    return PolyPlan(ecosystem="node", toolchain=f"node {choice.version}", image=choice.image, route=choice.route,
                    substitutions=[*choice.substitutions, *a.substitutions],
                    setup_commands=_install_commands(a), env=env, test_command=command, parser=parser,
                    report_path=report, test_files=list(a.test_files),
                    notes=[*a.notes, f"package manager: {pm}" + (f" ({a.lockfile})" if a.lockfile else ""),
                           f"runner: {a.runner}" + (f" in {a.runner_dir}" if a.runner_dir else "")])


def _matches(kind: str, output: str) -> bool:
    return any(re.search(p, output, re.I) for p in recipe()["repairs"][kind])


class NodeEcosystem:
    """`agents.polyglot.base.Ecosystem` for JavaScript/TypeScript (npm, yarn, pnpm)."""

    name = "node"

    def detect(self, tree, language: str | None) -> int:
        """10 with a root package.json and a JS/TS language hint (or no hint); 6 for a root
        package.json beside another ecosystem's manifest; 2 for a JS/TS hint alone; else 0."""
        lang = (language or "").lower()
        js = lang in ("javascript", "typescript", "js", "ts", "node", "nodejs")
        if tree.exists("package.json"):
            if js:
                return 10
            if lang:
                return 0 if lang not in ("", "unknown") else 6
            others = ("go.mod", "Cargo.toml", "pom.xml", "build.gradle", "setup.py", "pyproject.toml",
                      "composer.json", "Gemfile", "CMakeLists.txt")
            return 6 if any(tree.exists(o) for o in others) else 10
        return 2 if js else 0

    def plan(self, tree, instance: Instance, touched: list[str], images: ImageConfig) -> PolyPlan:
        """Analyse (`analyze`), build or reuse the Node image (`ensure_image`), plan (`build_plan`).
        Raises EnvBuildError (no package.json/test file/runner; no Node build fits)."""
        from envpool.errors import InfraError
        from envpool.toolchains.node import ensure_image
        a = analyze(tree, instance, touched)
        try:
            choice = ensure_image(a.node_request, images)
        except InfraError as e:
            if "satisfies" in e.message:
                raise EnvBuildError(e.message, instance_id=instance.instance_id) from e
            raise
        return build_plan(a, choice)

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """Fixes for a failed install step (see the module doc); None when none applies."""
        fix: list[str] | None = None
        if _matches("unfrozen", output):
            if command.startswith("npm ci"):
                fix = ["npm install --no-audit --no-fund"]
            elif "pnpm install" in command:
                fix = ["pnpm install --no-frozen-lockfile"]
            elif "yarn install --immutable" in command:
                fix = ["yarn install --no-immutable"]
            elif "yarn install" in command:
                fix = ["yarn install --no-frozen-lockfile --non-interactive --network-timeout 600000"]
        if fix is None and _matches("engines", output):
            fix = ["npm config set engine-strict false", "yarn config set ignore-engines true >/dev/null 2>&1 || true"]
        if fix is None and _matches("peer_deps", output) and "npm " in command:
            fix = ["npm config set legacy-peer-deps true"]
        if fix is None and _matches("network", output):
            fix = ["sleep 15"]
        if fix is None and _matches("scripts", output):
            fix = ["npm config set ignore-scripts true",
                   "yarn config set ignore-scripts true >/dev/null 2>&1 || true"]
        if fix is None or "\n".join(fix) in tried:
            return None
        return fix


ECOSYSTEM = NodeEcosystem()
"""The object `agents.polyglot` registers (module name ``node``)."""
