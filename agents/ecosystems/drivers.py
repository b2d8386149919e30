"""Repository test drivers found from the tree: a script that runs the project's tests and prints
one result per test (``tests/run-tests.py``, ``runtest`` -> ``tests/test_helper.tcl``, Django-style
``tests/runtests.py``), used as a build route when the project itself uses it.

What a driver is comes from data (`recipes/drivers.yaml`: file names, how it is started, how
touched test files become its arguments, the parser of its console); no repository name is
involved. `find_drivers(tree, ecosystem)` returns the drivers present whose file name the
project's own CI files (and the scripts they run), Makefiles or tox.ini mention (the evidence is
kept). For a compiled project (`cfamily`) `make_build` finds how to build before the driver runs:
the root Makefile when there is one, else the folder of a Makefile whose recipe runs the driver,
ranked by how often CI builds there (`make -C <dir>`), and that recipe's target; the flow's
setup then records the driver's environment from ``make -n <target>`` (`recipes/driver_env.py`:
the ``NAME=value`` words before the driver on the line that runs it, e.g. the interpreter
binary a port's Makefile passes).

`driver_requirements(tree, driver)` reads, at analysis time, what the driver needs that an image
may lack: the messages it prints when a tool is missing (the shared diagnosis rules:
``You need tcl 8.5 or newer`` -> command tclsh), the literal programs it probes for (``which X``,
``command -v X``), its ``#!`` interpreter, and the Debian packages the CI jobs that run it
install (``apt-get install ...`` lines); Execution answers them from Debian's file index before
round 1 (`Plan.needs`, `Plan.ci_packages`).
"""

from __future__ import annotations

import base64
import fnmatch
import re
import shlex
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.layout import layout
from agents.ecosystems.base import TestSpec
from agents.gitrepo import GitTree

__all__ = ["Driver", "DriverSpec", "MakeBuild", "driver_env_setup", "driver_requirements", "driver_tests", "find_drivers",
           "make_build", "driver_test_specs", "ENV_FILE"]

RECIPES = Path(__file__).parent / "recipes"
ENV_HELPER = "/usr/local/libexec/swemint/driver_env.py"
ENV_FILE = "/opt/swemint/driver.env"
MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
MAX_SCANNED = 300
"""At most this many Makefiles / CI scripts are read for evidence."""


class DriverSelection(BaseModel):
    """How touched test files become arguments (see `recipes/drivers.yaml`)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: str
    flag: str = ""
    root: str | None = None
    prefix: str = ""
    skip: list[str] = Field(default_factory=list)


class DriverSpec(BaseModel):
    """One entry of `recipes/drivers.yaml`."""

    model_config = ConfigDict(extra="forbid")
    id: str
    files: list[str]
    ecosystems: list[str]
    run: str
    interpreter: str = "sh"
    args: list[str] = Field(default_factory=list)
    select: list[DriverSelection]
    root: str | None = None
    suffixes: list[str] = Field(default_factory=list)
    parser: str
    marker: str | None = None
    mention: str | None = None
    from_root: bool = False
    role: Literal["route", "alternative"] = "route"


class Driver(BaseModel):
    """A driver found in a tree: its spec, its path, its folder (where it runs) and the files
    that show the project uses it."""

    model_config = ConfigDict(extra="forbid")
    spec: DriverSpec
    path: str
    evidence: list[str] = Field(default_factory=list)
    interpreter: str = ""

    @property
    def folder(self) -> str:
        """The driver's folder, repository relative (`.` at the root)."""
        return str(PurePosixPath(self.path).parent)

    @property
    def route(self) -> str:
        """The build route naming it: `driver:<id>`."""
        return f"driver:{self.spec.id}"


class MakeBuild(BaseModel):
    """How a compiled project is built before its driver runs: `make -C <folder> [flags]`;
    `target` is the Makefile target whose recipe runs the driver (for the ``make -n`` env)."""

    model_config = ConfigDict(extra="forbid")
    folder: str = "."
    target: str = ""
    flags: list[str] = Field(default_factory=list)
    evidence: str = ""


@lru_cache(maxsize=1)
def specs() -> list[DriverSpec]:
    """The driver data, validated (a malformed entry is a pydantic ValidationError)."""
    data = yaml.safe_load((RECIPES / "drivers.yaml").read_text(encoding="utf-8"))
    return [DriverSpec.model_validate(d) for d in data["drivers"]]


def _mentions(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")


def _ci_texts(tree: GitTree) -> list[tuple[str, str]]:
    """(path, text) of the CI files near the root and of the tree's scripts they run."""
    ci = [f for f in tree.files if f.count("/") <= 2 and any(fnmatch.fnmatch(f, g) for g in layout()["ci"])]
    out = [(f, tree.read(f, limit=200_000) or "") for f in ci[:40]]
    scripts: list[str] = []
    for _, text in out:
        for word in re.findall(r"[\w./-]+\.(?:sh|bash|py|mk)\b", text):
            path = word[2:] if word.startswith("./") else word
            if path not in scripts and tree.exists(path):
                scripts.append(path)
    out += [(f, tree.read(f, limit=400_000) or "") for f in scripts[:20]]
    if tree.exists("tox.ini"):
        out.append(("tox.ini", tree.read("tox.ini") or ""))
    return out


def _makefiles(tree: GitTree) -> list[str]:
    return [f for f in tree.files if f.count("/") <= 3 and PurePosixPath(f).name in MAKEFILES][:MAX_SCANNED]


def find_drivers(tree: GitTree, ecosystem: str) -> list[Driver]:
    """The drivers of `recipes/drivers.yaml` offered by `ecosystem` that `tree` holds and uses
    (its file name -- or the spec's `mention`, for a generic name such as ``bin/test`` -- is
    mentioned by a CI file, a script a CI file runs, tox.ini or a Makefile;
    a spec with a `marker` also needs that regex in the driver's own text)."""
    found: list[Driver] = []
    texts: list[tuple[str, str]] | None = None
    for spec in specs():
        if ecosystem not in spec.ecosystems:
            continue
        path = next((f for f in spec.files if tree.exists(f)), None)
        if path is None:
            continue
        if spec.marker and not re.search(spec.marker, tree.read(path, limit=400_000) or ""):
            continue
        if texts is None:
            texts = _ci_texts(tree) + [(m, tree.read(m, limit=400_000) or "") for m in _makefiles(tree)]
        pat = _mentions(spec.mention or PurePosixPath(path).name)
        evidence = [f for f, text in texts if f != path and pat.search(text)]
        if evidence:
            found.append(Driver(spec=spec, path=path, evidence=evidence[:5],
                                interpreter=shebang(tree.read(path, limit=400_000) or "")))
    return found


def shebang(text: str) -> str:
    """The interpreter a script's ``#!`` line names (``#!/usr/bin/env python3`` -> ``python3``,
    ``#!/bin/sh`` -> ``sh``), or '' (none, or not a plain program name)."""
    first = text.split("\n", 1)[0]
    if not first.startswith("#!"):
        return ""
    words = first[2:].split()
    if words and PurePosixPath(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    name = PurePosixPath(words[0]).name if words else ""
    return name if re.fullmatch(r"[A-Za-z][\w.+-]*", name) else ""


def _target_running(text: str, name: str) -> str:
    """The Makefile target whose recipe mentions `name` (the first), or ''."""
    pat = _mentions(name)
    target = ""
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_][\w.-]*)\s*:(?!=)", line)
        if m:
            target = m.group(1)
        elif line.startswith("\t") and target and pat.search(line):
            return target
    return ""


def make_build(tree: GitTree, driver: Driver) -> MakeBuild | None:
    """The build before `driver` runs (module docstring), or None when no Makefile is found."""
    name = PurePosixPath(driver.path).name
    running = []
    for mk in _makefiles(tree):
        target = _target_running(tree.read(mk, limit=400_000) or "", name)
        if target:
            running.append((mk, target))
    root = next((m for m in MAKEFILES if tree.exists(m)), None)
    if root is not None:
        target = next((t for m, t in running if m.count("/") <= 1), "") or next((t for _, t in running), "")
        return MakeBuild(folder=".", target=target, evidence=f"root {root}")
    if not running:
        return None
    ci = "\n".join(text for _, text in _ci_texts(tree))

    def rank(item: tuple[str, str]) -> tuple[int, int, str]:
        folder = str(PurePosixPath(item[0]).parent)
        used = len(re.findall(rf"-C\s+{re.escape(folder)}(?![\w/-])|cd\s+{re.escape(folder)}(?![\w/-])", ci))
        return (-used, folder.count("/"), folder)

    mk, target = sorted(running, key=rank)[0]
    return MakeBuild(folder=str(PurePosixPath(mk).parent), target=target,
                     evidence=f"{mk}: target {target!r} runs {name}")


def driver_tests(driver: Driver, touched: list[str]) -> list[str]:
    """The touched files that are the driver's tests (under its root -- the repository for a
    `from_root` driver -- with a test suffix)."""
    root = (driver.spec.root or ("." if driver.spec.from_root else driver.folder)).rstrip("/")
    prefix = "" if root in ("", ".") else root + "/"
    return [f for f in touched if f.startswith(prefix) and f != driver.path
            and any(f.endswith(s) for s in driver.spec.suffixes)]


def _rel(path: str, root: str) -> str:
    root = root.rstrip("/")
    return path[len(root) + 1:] if root not in ("", ".") and path.startswith(root + "/") else path


def _strip_suffix(path: str, suffixes: list[str]) -> str:
    return next((path[: -len(s)] for s in suffixes if path.endswith(s)), path)


def _stem(path: str, suffixes: list[str]) -> str:
    """A test file's first name word, digits dropped (`basics/try_finally_return.py` -> `try`)."""
    return re.sub(r"\d+$", "", _strip_suffix(PurePosixPath(path).name, suffixes).split("_")[0]).lower()


def related_tests(driver: Driver, sel: DriverSelection, tests: list[str], files: list[str]) -> list[str]:
    """Every test file (`files`: the tree's) in the touched tests' folders, plus the test files
    elsewhere under the driver's root whose name has a touched test's first word as a word
    (`try_finally_return.py` -> `viper_try.py`, `import/try_module.py`): the touched tests'
    regression neighbours. Folders named in the selection's `skip` are left out; stems shorter
    than 3 characters add nothing beyond the folders."""
    spec = driver.spec
    root = (sel.root or spec.root or driver.folder).rstrip("/")
    prefix = "" if root in ("", ".") else root + "/"
    folders = {str(PurePosixPath(t).parent) for t in tests}
    stems = {st for t in tests if len(st := _stem(t, spec.suffixes)) >= 3}
    out: list[str] = []
    for f in files:
        if not f.startswith(prefix) or f == driver.path or not any(f.endswith(x) for x in spec.suffixes):
            continue
        parts = PurePosixPath(f[len(prefix):]).parts
        if len(parts) < 2 or parts[0] in sel.skip or PurePosixPath(f).name.startswith(("_", ".")):
            continue
        words = {re.sub(r"\d+$", "", w).lower() for w in _strip_suffix(parts[-1], spec.suffixes).split("_")}
        if str(PurePosixPath(f).parent) in folders or stems & words:
            out.append(f)
    return sorted(set(out) | set(tests))


def _arguments(driver: Driver, sel: DriverSelection, tests: list[str], files: list[str] | None = None) -> list[str]:
    spec = driver.spec
    base = "." if spec.from_root else driver.folder
    root = sel.root or spec.root or base
    if sel.kind == "files":
        return [_rel(t, base) for t in tests]
    if sel.kind == "related":
        return [_rel(t, base) for t in related_tests(driver, sel, tests, files)] if files else []
    if sel.kind == "dirs":
        dirs = list(dict.fromkeys(str(PurePosixPath(_rel(t, base)).parent) for t in tests))
        return ([sel.flag] if sel.flag else []) + [d for d in dirs if d != "."]
    units = [sel.prefix + _strip_suffix(_rel(t, root), spec.suffixes) for t in tests]
    if sel.kind == "units":
        return [w for u in units for w in ([sel.flag, u] if sel.flag else [u])]
    if sel.kind == "labels":
        return [u.replace("/", ".") for u in units]
    if sel.kind == "packages":
        return list(dict.fromkeys(str(PurePosixPath(u).parent).replace("/", ".") for u in units
                                  if str(PurePosixPath(u).parent) != "."))
    raise ValueError(f"driver {spec.id}: unknown selection kind {sel.kind!r}")


def driver_test_specs(driver: Driver, tests: list[str], prefix: str = "", interpreter: str = "python3",
                      files: list[str] | None = None) -> list[TestSpec]:
    """One TestSpec per selection of the driver (ranked as the data lists them), running it from
    its folder (from the repository root, paths relative to it, when the spec says `from_root`)
    after `prefix` (a build step, an env file). The driver's `run` gets
    ``{interpreter}`` from its ``#!`` line (the spec's default without one), so it runs whether
    or not the tree kept its executable bit; `interpreter` replaces ``python3`` / ``python`` at
    the start of the command. `files`: the tree's files (the `related` selection reads them; without
    them it is left out). Every word from the tree is shell-quoted."""
    spec = driver.spec
    run = shlex.split(spec.run.format(driver=driver.path if spec.from_root else PurePosixPath(driver.path).name,
                                      interpreter=driver.interpreter or spec.interpreter))
    if run and run[0] in ("python", "python3"):
        run[0] = interpreter
    out: list[TestSpec] = []
    for sel in spec.select:
        args = _arguments(driver, sel, tests, files)
        if not [a for a in args if a != sel.flag]:
            continue
        words = " ".join(shlex.quote(w) for w in [*run, *spec.args, *args])
        cd = "" if driver.folder == "." or spec.from_root else f"cd {shlex.quote(driver.folder)} && "
        spec_ = TestSpec(name=sel.name, test_command=f"{prefix}{cd}{words}", parser=spec.parser,
                         test_files=list(tests))
        if all(s.test_command != spec_.test_command for s in out):
            out.append(spec_)
    return out


def driver_env_setup(build: MakeBuild, driver: Driver) -> list[str]:
    """Setup commands recording the driver's environment from ``make -n <target>`` into
    `ENV_FILE` (empty when the build has no target running the driver)."""
    if not build.target:
        return []
    helper = base64.b64encode((RECIPES / "driver_env.py").read_bytes()).decode()
    make = " ".join(shlex.quote(w) for w in ["make", "-C", build.folder, "-n", *build.flags, build.target])
    return [f"mkdir -p {Path(ENV_HELPER).parent} {Path(ENV_FILE).parent} && echo {helper} | base64 -d > {ENV_HELPER}"
            f" && {{ {make} 2>/dev/null || true; }} | python3 {ENV_HELPER} "
            f"{shlex.quote(PurePosixPath(driver.path).name)} > {ENV_FILE}"]


_SHELL_PROBE = re.compile(r"(?:^|[`;&|(!]|\$\(|\bif|\bthen|\bdo)[ \t!]*(?:which|command[ \t]+-v|type[ \t]+-p|hash)[ \t]+"
                          r"([A-Za-z][\w.+-]*)(?![\w.+$-])", re.M)
_PY_PROBE = re.compile(r"\bwhich\(\s*['\"]([A-Za-z][\w.+-]*)['\"]\s*\)")
_SHELLS = frozenset({"sh", "bash", "dash", "ksh", "zsh"})
_APT = re.compile(r"\bapt(?:-get)?\s+(?:-\S+\s+)*install\b((?:[ \t]+[^\s;&|#]+)+)")
_BASE_PROGRAMS = _SHELLS | {"env", "python", "python3"}


def apt_packages(text: str) -> list[str]:
    """Debian package names of the ``apt-get install`` / ``apt install`` commands in `text`
    (flags and version pins dropped; names that are not Debian package names left out)."""
    from agents.debindex import DEBIAN_NAME

    out: list[str] = []
    for m in _APT.finditer(text.replace("\\\n", " ")):
        for word in m.group(1).split():
            name = word.split("=", 1)[0]
            if not word.startswith("-") and DEBIAN_NAME.fullmatch(name) and name not in out:
                out.append(name)
    return out


def _ci_jobs(path: str, text: str) -> list[str]:
    """The jobs of a CI file as texts (a GitHub workflow: one per job; any other file: itself)."""
    if not path.startswith(".github/workflows/"):
        return [text]
    from agents.untrusted_yaml import load_untrusted_yaml

    try:
        data = load_untrusted_yaml(text)
    except yaml.YAMLError:
        return [text]
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, dict):
        return [text]

    def strings(node) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [s for v in node.values() for s in strings(v)]
        if isinstance(node, list):
            return [s for v in node for s in strings(v)]
        return []

    return ["\n".join(strings(job)) for job in jobs.values()]


def driver_requirements(tree: GitTree, driver: Driver) -> tuple[list, list[str]]:
    """(needs, CI packages) of `driver` (module docstring): `agents.debindex.Need`s from its own
    text (messages the diagnosis rules recognise; programs a shell driver probes with ``which``
    / ``command -v`` / ``type -p`` / ``hash``, a Python one with ``shutil.which("x")``; its ``#!``
    interpreter unless a shell or Python), and the Debian package names that every CI job running
    the driver installs (GitHub workflow jobs and other CI files; a job installing nothing with
    apt is not counted)."""
    from agents.debindex import Need
    from agents.diagnosis import needs_in

    text = tree.read(driver.path, limit=400_000) or ""
    needs = needs_in(text)
    shell = (driver.interpreter or driver.spec.interpreter) in _SHELLS
    names = [m.group(1) for m in (_SHELL_PROBE if shell else _PY_PROBE).finditer(text)]
    if driver.interpreter and driver.interpreter not in _BASE_PROGRAMS:
        names.insert(0, driver.interpreter)
    for name in names:
        try:
            need = Need(kind="command", name=name)
        except ValueError:
            continue
        if need not in needs:
            needs.append(need)
    pat = _mentions(PurePosixPath(driver.path).name)
    common: list[str] | None = None
    for path, ci in _ci_texts(tree):
        if not any(fnmatch.fnmatch(path, g) for g in layout()["ci"]):
            continue  # a script a CI file runs: its functions serve many jobs
        for job in _ci_jobs(path, ci):
            pkgs = apt_packages(job) if pat.search(job) else []
            if pkgs:
                common = pkgs if common is None else [p for p in common if p in pkgs]
    return needs, common or []
