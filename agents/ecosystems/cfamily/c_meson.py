"""Class S35: a C/C++ project built with Meson (a ``meson.build`` holding ``project(...)``).

Analysis from the tree (no checkout): the Meson project's folder (the root's, else the one owning
the touched files by the nearest-ancestor rule, `agents.ecosystems.owners.owner_build`), its
``meson_version: '>=X'`` floor (`meson_floor`; newer than the Debian suite's meson: PyPI's meson
instead, `meson_install`), the Debian packages of its ``dependency('name')`` calls
(`dependencies`, `dependency_packages`: meson's own dependency names and pkg-config names from
``cfamily.yaml``; a required name neither table knows becomes a pkg-config `Need` the Debian
index answers before setup), the options gating its tests (`test_options`:
``meson_options.txt`` / ``meson.options`` booleans and features named like tests) and whether the
project's CI builds with Meson (`ci_systems`). The test run itself is ``recipes/meson_tests.py``
(installed beside the CMake helper); its report is ``meson-logs/testlog.json``
(`envpool.testrun.polyglot.meson`)."""

from __future__ import annotations

import posixpath
import re
from pathlib import PurePosixPath

from agents.gitrepo import GitTree
from agents.ecosystems.cfamily.cfamily_recipe import recipes
from envpool.quoting import shell_word

MESON_HELPER = "/usr/local/libexec/swemint/meson_tests.py"
"""Where the setup installs ``recipes/meson_tests.py`` (beside the CMake helper)."""
MESON_FILES = ("meson_tests.py", "unbuilt_rules.py")
"""`recipes/` files the Meson route installs beside each other in MESON_HELPER's folder
(meson_tests.py imports unbuilt_rules.py, which cmake_tests.py imports too)."""
MESON_FLAG = re.compile(r"-D[A-Za-z_][A-Za-z0-9_.:-]*=(?:true|false|enabled|disabled|auto)")
"""A ``-Dname=value`` of a boolean or feature option (the only values a move or the CI may pass)."""
TESTLOG = "meson-logs/testlog.json"

_PROJECT = re.compile(r"^\s*project\s*\(", re.M)
_DEPENDENCY = re.compile(r"(?<![\w.])dependency\s*\(")
_OPTION = re.compile(r"(?<![\w.])option\s*\(")
_STRING_ARG = re.compile(r"\s*'([^'\\\n]*)'\s*(?:,|$)")


def call_args(text: str, start: int) -> str:
    """The argument text of the call whose ``(`` is at `start` - 1 (up to its closing paren,
    parens inside strings ignored; the rest of `text` when unbalanced)."""
    depth, i, quote = 1, start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c == "'":
            quote = c
        elif c == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return text[start:]


def positional(args: str) -> list[str]:
    """The leading positional string arguments of a call's argument text, before the first
    keyword or non-string argument (``'a', 'b', required: false`` -> [a, b])."""
    out: list[str] = []
    pos = 0
    while True:
        m = _STRING_ARG.match(args, pos)
        if not m:
            return out
        out.append(m.group(1))
        pos = m.end()


def keyword(args: str, name: str) -> str | None:
    """The text of keyword argument `name` (``required: get_option('x')`` -> ``get_option('x')``),
    up to the next top-level comma; None when absent."""
    m = re.search(rf"(?<![\w.]){re.escape(name)}\s*:\s*", args)
    if not m:
        return None
    depth, i = 0, m.end()
    while i < len(args):
        c = args[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            break
        i += 1
    return args[m.end():i].strip()


def meson_projects(tree: GitTree, limit: int = 60) -> list[str]:
    """Folders ("" = the root) whose meson.build declares a project (``project(``), root first,
    then by depth; at most `limit` meson.build files are read."""
    paths = sorted((f for f in tree.files if PurePosixPath(f).name == "meson.build"),
                   key=lambda f: (f.count("/"), f))[:limit]
    return [posixpath.dirname(p) for p in paths if _PROJECT.search(tree.read(p, limit=400_000) or "")]


def meson_folder(tree: GitTree, touched: list[str]) -> str | None:
    """The Meson project to build: the root's when the root declares one, else the project whose
    folder is the nearest ancestor of a touched file (`owners.owner_build` over the project
    folders' meson.build files), else the shallowest project; None without one."""
    from agents.ecosystems.owners import owner_build

    projects = meson_projects(tree)
    if not projects:
        return None
    if "" in projects:
        return ""
    files = [posixpath.join(p, "meson.build") for p in projects]
    for path in touched:
        owner = owner_build(files, path, {"meson": ("meson.build",)})
        if owner is not None:
            return owner[1]
    return projects[0]


def meson_floor(text: str) -> str | None:
    """The ``meson_version`` floor of a project() call in `text` (``'>=0.60.0'`` -> ``0.60.0``;
    the highest of several ``>=`` constraints); None when absent."""
    m = _PROJECT.search(text)
    if not m:
        return None
    kw = keyword(call_args(text, m.end()), "meson_version") or ""
    floors = re.findall(r">=?\s*(\d+(?:\.\d+)*)", kw)
    if not floors:
        return None
    return max(floors, key=lambda v: tuple(int(x) for x in v.split(".")))


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def meson_install(floor: str | None, suite: str) -> tuple[list[str], list[str], str]:
    """(Debian packages, extra shell commands, note) installing meson and ninja for a project
    whose floor is `floor` on Debian `suite`: Debian's ``meson ninja-build pkg-config`` always
    (ninja and pkg-config for the build; Debian's meson when it meets the floor), and PyPI's
    ``meson>=floor`` with the system's pip when the suite's meson (``cfamily.yaml``
    ``meson.debian``) is older than the floor (an unknown suite: Debian's)."""
    have = (recipes().get("meson") or {}).get("debian", {}).get(suite)
    packages = ["meson", "ninja-build", "pkg-config"]
    if floor is None or have is None or _key(have) >= _key(floor):
        return packages, [], f"meson from Debian {suite} ({have or 'version unknown'})"
    return packages + ["python3-pip"], [pypi_meson(floor)], \
        f"the project needs meson >= {floor}, Debian {suite} has {have}: meson from PyPI"


def pypi_meson(floor: str) -> str:
    """The command installing PyPI's ``meson>=floor`` with the system's pip (into /usr/local,
    ahead of Debian's on PATH; python3-pip must be installed)."""
    # the variable, not the flag: pip before 23 (bullseye's) has no --break-system-packages
    return "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir " + shell_word(f"meson>={floor}")


def dependencies(tree: GitTree, folder: str = "") -> list[tuple[str, bool]]:
    """(name, required) of each ``dependency('name', ...)`` call of the project's meson.build
    files (every name of a call with fallback names; each once, required winning). Required:
    no ``required:`` keyword or ``required: true``; ``false`` or an expression (an option, a
    feature) is optional."""
    prefix = f"{folder}/" if folder else ""
    out: dict[str, bool] = {}
    for path in [f for f in tree.files if f.startswith(prefix) and PurePosixPath(f).name == "meson.build"][:400]:
        text = tree.read(path, limit=400_000) or ""
        for m in _DEPENDENCY.finditer(text):
            args = call_args(text, m.end())
            req = keyword(args, "required")
            required = req is None or req == "true"
            for name in positional(args):
                if name:
                    out[name] = out.get(name, False) or required
    return list(out.items())


def dependency_packages(deps: list[tuple[str, bool]]) -> tuple[list[str], list[str], list[str]]:
    """(Debian packages, required names to ask Debian's index for as pkg-config modules, names
    left out) of `deps`: meson's own dependency names (``cfamily.yaml`` ``meson.dependencies``:
    threads, gtest, boost, ...; an empty list: nothing to install) and pkg-config names
    (``pkg_config``) give packages, required or not; a required name neither table knows is a
    pkg-config module for the index (`agents.debindex`), an optional one is left out."""
    rec = recipes()
    own = (rec.get("meson") or {}).get("dependencies") or {}
    packages: list[str] = []
    ask: list[str] = []
    left: list[str] = []
    for name, required in deps:
        low = name.lower()
        hit = own.get(low) if low in own else rec["pkg_config"].get(low)
        if hit is not None:
            packages += [p for p in hit if p not in packages]
        elif required:
            ask.append(name)
        else:
            left.append(name)
    return packages, ask, left


def _option_files(tree: GitTree, folder: str) -> list[str]:
    prefix = f"{folder}/" if folder else ""
    return [prefix + n for n in ("meson.options", "meson_options.txt") if tree.exists(prefix + n)]


def switch_options(tree: GitTree, folder: str = "") -> list[tuple[str, str, str, str]]:
    """(file, name, type, default) of every boolean and feature option of the Meson project in
    `folder` (meson.options / meson_options.txt, in that order; each name once); `default` lower
    case, a missing ``value`` read as meson's default (``true`` / ``auto``). Shared by the test
    options (S35) and the documentation switches (S37)."""
    out: list[tuple[str, str, str, str]] = []
    for path in _option_files(tree, folder):
        text = tree.read(path) or ""
        for m in _OPTION.finditer(text):
            args = call_args(text, m.end())
            pos = positional(args)
            kind = (keyword(args, "type") or "").strip("'")
            if not pos or kind not in ("boolean", "feature") or any(n == pos[0] for _, n, _, _ in out):
                continue
            default = (keyword(args, "value") or ("true" if kind == "boolean" else "auto")).strip("'").lower()
            out.append((path, pos[0], kind, default))
    return out


def test_options(tree: GitTree, folder: str = "") -> list[tuple[str, str, str]]:
    """(name, type, default) of the project's boolean and feature options that gate tests: named
    like tests (``cfamily.yaml`` ``meson.test_options``: ``tests``, ``build_tests``, names ending
    ``_tests`` ...; never installed tests, fuzzers, benchmarks), from meson.options or
    meson_options.txt."""
    cfg = (recipes().get("meson") or {}).get("test_options") or {}
    names = {n.lower() for n in cfg.get("names") or []}
    suffixes = tuple(s.lower() for s in cfg.get("suffixes") or [])
    never = [w.lower() for w in cfg.get("never") or []]
    out: list[tuple[str, str, str]] = []
    for _path, name, kind, default in switch_options(tree, folder):
        low = name.lower().replace("-", "_")
        if any(w in low for w in never) or not (low in names or low.endswith(suffixes)):
            continue
        out.append((name, kind, default))
    return out


def option_flag(name: str, kind: str) -> str:
    """``-Dname=true`` (boolean) or ``-Dname=enabled`` (feature)."""
    return f"-D{name}={'true' if kind == 'boolean' else 'enabled'}"


def setup_flags(tree: GitTree, folder: str = "") -> list[str]:
    """The test options the setup switches on: those whose default is off (``false`` /
    ``disabled``); features left at ``auto`` stay (``enabled`` would make their dependencies
    required: the `test_option` move offers it)."""
    return [option_flag(n, k) for n, k, d in test_options(tree, folder) if d in ("false", "disabled")]


def ci_systems(tree: GitTree) -> list[str]:
    """The C/C++ build systems the CI's run steps invoke (not on a macOS/Windows runner), in
    order of first use: ``meson`` (``meson setup|test|compile|configure``, or ``meson <dir>``),
    ``cmake`` (a ``cmake`` call), ``autotools`` (``./configure``, ``autogen.sh``, ``autoreconf``).
    Installing a tool (``pip install meson``, ``apt-get install cmake``) is no use of it."""
    from agents.ecosystems.ci import action_steps, ci_steps, command_lines, split_words

    out: list[str] = []
    for step in ci_steps(tree) + action_steps(tree):
        if step.foreign():
            continue
        for line in command_lines(step.resolved()):
            words = [PurePosixPath(w).name for w in split_words(line)]
            if not words or words[0] in ("pip", "pip3", "pipx", "apt", "apt-get", "brew", "dnf", "yum") or \
                    "install" in words[:3] and words[0] not in ("meson", "cmake", "make", "ninja"):
                continue
            head = words[:3]
            found = None
            if "meson" in head:
                i = words.index("meson")
                nxt = words[i + 1] if i + 1 < len(words) else ""
                if nxt in ("setup", "test", "compile", "configure") or (i == 0 and nxt and not nxt.startswith("-")
                                                                         and nxt not in ("--version", "install")):
                    found = "meson"
            elif "cmake" in head:
                found = "cmake"
            elif any(w in ("configure", "autogen.sh", "autoreconf", "bootstrap") for w in head):
                found = "autotools"
            if found and found not in out:
                out.append(found)
    return out

