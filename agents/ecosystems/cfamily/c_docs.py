"""Class S37: a C/C++ build that fails only in its documentation.

The library and the tests build, but the setup's build step fails in the documentation: the man
pages need a program Debian does not package (``c2man``), or one whose package did not help
(gtk-doc, help2man, Doxygen, sphinx-build, xsltproc / DocBook, asciidoc / a2x, pandoc, ronn,
makeinfo: ``cfamily.yaml`` ``docs.tools``); the row would end ``env_failed`` with the test
suite never run.

Recognised from the failed setup step's output (`docs_failure`): make's own failures
(`make_failures.failures`: a failed sub-make's report in its parent dropped) all lie in a
documentation folder (``doc``, ``docs``, ``man``, ``manual``, ``documentation`` ... at any
depth: ``docs.dirs``) or are documentation targets (a man page, ``.html``, ``.info``, ``.pdf``,
Doxygen output: `make_failures.docs_target`); a failure anywhere else and it is no S37. A
configure that failed (CMake, Meson: no make failure) is S37 when the output says a
documentation tool is missing (`missing_tools`) or its errors name project files, and every
project file its errors name lies in a documentation folder (an optional ``find_package(Doxygen)``
printing ``Could NOT find Doxygen`` beside an error in ``src/CMakeLists.txt`` is no S37).

The loop asks for this move only after a build failed and Execution's repairs (the Debian
package of a missing program, when Debian's index names one), the other candidate routes and
their own packages are used up (`agents.planner.Planner.setup_move`). The move (`docs_moves`,
kind ``docs_off``): switch the documentation off by the project's own switch when it has one --
autotools: the ``AC_ARG_ENABLE`` / ``AC_ARG_WITH`` switches of configure.ac (or the option lines
of a committed ``configure``'s ``--help`` text) named like documentation (``--disable-man``,
``--disable-gtk-doc``, ``--without-docs`` ...; ``GTK_DOC_CHECK``: ``--disable-gtk-doc``);
CMake: ``option()`` / ``cmake_dependent_option()`` names saying DOC / DOCS / MAN / DOXYGEN /
MANPAGES -> ``-DX=OFF``; Meson: boolean / feature options named docs / man / gtk_doc /
documentation / manpages -> ``-Dx=false`` / ``-Dx=disabled``. Without a switch (or after it did
not help), an autotools or plain-Makefile build is built with ``make -k`` (`keep_going`):
everything else builds, and its failure is tolerated only when every failure make reports is
the documentation's, which the container checks from make's output with `make_failures`
itself; the tests then run as usual (``make -k check``). A failure outside the documentation is
never tolerated.
"""

from __future__ import annotations

import base64
import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agents.gitrepo import GitTree
from agents.ecosystems.base import PlanRequest, PolyPlan
import agents.ecosystems.cfamily.make_failures as make_failures
from agents.ecosystems.cfamily.cfamily_recipe import recipes
from agents.ecosystems.cfamily.c_setup import HELPER, JOBS
from envpool.quoting import shell_word

__all__ = ["CHECKER", "DocsConfig", "DocsFailure", "autotools_switches", "cmake_switches", "docs_config",
           "docs_failure", "docs_moves", "docs_name", "keep_going", "meson_switches", "missing_tools"]

CHECKER = str(Path(HELPER).parent / "make_failures.py")
"""Where the ``make -k`` route installs `make_failures` (beside the CMake helper)."""
LOG = "/tmp/swemint-make.log"
"""make's output of a ``make -k`` step, read by the checker."""
KEEP_GOING = "docs_keep_going"
"""The plan option (`PlanRequest.options`) of the ``make -k`` route: True."""


class DocsConfig(BaseModel):
    """``cfamily.yaml`` ``docs``: documentation `tools` (program names), documentation folder
    names `dirs`, the option-name parts that say documentation (`words`) and those that rule an
    option out (`never`); all compared in lower case."""

    model_config = ConfigDict(extra="forbid")
    tools: list[str] = Field(default_factory=list)
    dirs: list[str] = Field(default_factory=list)
    words: list[str] = Field(default_factory=list)
    never: list[str] = Field(default_factory=list)


@lru_cache(maxsize=1)
def docs_config() -> DocsConfig:
    """`cfamily.yaml` ``docs``, validated once."""
    return DocsConfig.model_validate(recipes().get("docs") or {})


class DocsFailure(BaseModel):
    """Why a failed setup step is S37: make's own `failures` (its lines; all the
    documentation's), the documentation `folders` and `targets` they failed in, the
    documentation `tools` the output says are missing, the project `files` a failed configure
    names (all in documentation folders)."""

    model_config = ConfigDict(extra="forbid")
    failures: list[str] = Field(default_factory=list)
    folders: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)

    def evidence(self) -> str:
        """One line: where it failed, which tools are missing."""
        parts = []
        if self.folders or self.targets:
            parts.append("make failed only in the documentation (" + ", ".join(
                [*(f"{f}/" for f in self.folders), *self.targets][:6]) + ")")
        if self.files:
            parts.append("the configure errors are in " + ", ".join(self.files[:4]))
        if self.tools:
            parts.append("missing documentation tool " + ", ".join(self.tools[:4]))
        return "; ".join(parts)


def _tool_pattern(tool: str) -> re.Pattern[str]:
    t = re.escape(tool)
    edge = r"(?<![\w.+-])"
    return re.compile(
        rf"{edge}{t}:\s*(?:command\s+)?not found|{edge}{t}:\s*No such file or directory|"
        rf"[`'\u2018\"]{t}['\u2019\"] is missing|Program [`'\"]?{t}[`'\"]? not found|Could NOT find {t}\b|"
        rf"{edge}{t}\s+(?:is\s+)?(?:not found|missing|required|not installed)|"
        rf"configure: error:[^\n]*{edge}{t}(?![\w.+-])", re.I)


def missing_tools(output: str) -> list[str]:
    """The documentation tools (``docs.tools``) `output` says are missing: ``c2man: command not
    found``, ``make: c2man: No such file or directory``, automake's ``'makeinfo' is missing on
    your system``, meson's ``Program 'sphinx-build' not found``, CMake's ``Could NOT find
    Doxygen``, ``configure: error: ... help2man ...``. In the list's order."""
    return [t for t in docs_config().tools if t.lower() in output.lower() and _tool_pattern(t).search(output)]


_CMAKE_ERROR = re.compile(r"CMake Error at (\S+?):\d+")
_MESON_ERROR = re.compile(r"^(\S*meson\.build):\d+:\d+: ERROR", re.M)


def _project_file(path: str) -> str | None:
    """`path` relative to /testbed, None for a file outside the project (CMake's own modules)."""
    if path.startswith("/testbed/"):
        return path[len("/testbed/"):]
    return None if path.startswith("/") else path


def docs_failure(output: str, root: str = "/testbed") -> DocsFailure | None:
    """The S37 reading of a failed setup step's `output` (module doc), or None: make reports a
    failure outside the documentation, a failed configure names a project file outside it, or
    nothing says documentation. `root`: the folder the
    build's top make ran in."""
    names = {d.lower() for d in docs_config().dirs}
    tools = missing_tools(output)
    found = make_failures.failures(output, root)
    if found:
        if not all(make_failures.is_docs(f, names) for f in found):
            return None
        return DocsFailure(failures=[f.line for f in found][:8], tools=tools,
                           folders=list(dict.fromkeys(f.folder for f in found
                                                      if make_failures.docs_folder(f.folder, names))),
                           targets=list(dict.fromkeys(f.target for f in found
                                                      if not make_failures.docs_folder(f.folder, names))))
    files = [p for p in (_project_file(x) for x in _CMAKE_ERROR.findall(output) + _MESON_ERROR.findall(output)) if p]
    files = list(dict.fromkeys(files))
    in_docs = [f for f in files if make_failures.docs_folder(f.rsplit("/", 1)[0] if "/" in f else "", names)]
    if len(in_docs) < len(files):  # an error in a project file outside the documentation
        return None
    if tools:
        return DocsFailure(tools=tools, files=in_docs)
    if files:
        return DocsFailure(files=in_docs)
    return None


def docs_name(name: str) -> bool:
    """Whether an option's `name` says documentation: a part of it (split on ``-``, ``_``, ``.``;
    lower case) is one of ``docs.words`` and none is one of ``docs.never`` (documentation
    tests, examples, installs are not the documentation's build)."""
    cfg = docs_config()
    parts = [p for p in re.split(r"[-_.]", name.lower()) if p]
    return any(p in cfg.words for p in parts) and not any(p in cfg.never for p in parts)


_AC_ARG = re.compile(r"AC_ARG_(ENABLE|WITH)\s*\(\s*\[?\s*([\w-]+)")
_HELP_LINE = re.compile(r"^\s{2,}--(enable|disable|with|without)-([A-Za-z0-9][\w-]*)", re.M)


def autotools_switches(tree: GitTree, setup: str = "") -> list[tuple[str, str]]:
    """(flag, evidence) of an autotools project's documentation switches not in `setup` yet:
    configure.ac's (or configure.in's) ``AC_ARG_ENABLE([x])`` -> ``--disable-x``,
    ``AC_ARG_WITH([x])`` -> ``--without-x`` for names `docs_name` accepts, ``GTK_DOC_CHECK`` ->
    ``--disable-gtk-doc``; then the option lines of a committed ``configure``'s ``--help`` text
    (``  --enable-man``, ``  --disable-docs``). Each flag once, in that order."""
    from agents.ecosystems.cfamily.c_moves import CONFIGURE_FLAG

    out: list[tuple[str, str]] = []

    def add(flag: str, why: str) -> None:
        if CONFIGURE_FLAG.fullmatch(flag) and flag not in setup and all(f != flag for f, _ in out):
            out.append((flag, why))

    ac = next((f for f in ("configure.ac", "configure.in") if tree.exists(f)), None)
    text = (tree.read(ac) or "") if ac else ""
    for kind, name in _AC_ARG.findall(text):
        if docs_name(name):
            flag = f"--{'disable' if kind == 'ENABLE' else 'without'}-{name}"
            add(flag, f"{ac} declares AC_ARG_{kind}({name})")
    if ac and re.search(r"^\s*GTK_DOC_CHECK\s*\(", text, re.M):
        add("--disable-gtk-doc", f"{ac} calls GTK_DOC_CHECK (gtk-doc's --enable-gtk-doc)")
    if tree.exists("configure"):
        for kind, name in _HELP_LINE.findall(tree.read("configure", limit=3_000_000) or ""):
            if docs_name(name):
                add(f"--{'disable' if kind in ('enable', 'disable') else 'without'}-{name}",
                    f"./configure --help lists --{kind}-{name}")
    return out


_CMAKE_OPTION = re.compile(r"(?:^|[^\w])(?:option|cmake_dependent_option)\s*\(\s*([A-Za-z_]\w*)\s*"
                           r"(?:\"(?:[^\"\\]|\\.)*\"\s*)?([^\s)]*)", re.I)
_OFF = ("OFF", "FALSE", "NO", "N", "0")


def cmake_switches(tree: GitTree, setup: str = "", folder: str = "") -> list[tuple[str, str]]:
    """(``-DX=OFF``, evidence) of the CMake project's documentation options (``option(X ...)`` /
    ``cmake_dependent_option(X ...)`` with a name `docs_name` accepts: ``BUILD_DOCS``,
    ``ENABLE_MANPAGES``, ``X_BUILD_DOXYGEN``) in the CMake files below `folder`, not OFF
    already: a literal OFF default is left out unless `setup` switched it on; one set OFF in
    `setup` is left out."""
    prefix = f"{folder}/" if folder else ""
    out: list[tuple[str, str]] = []
    files = [f for f in tree.files if f.startswith(prefix) and (f.endswith("CMakeLists.txt") or f.endswith(".cmake"))]
    for path in files[:400]:
        for name, default in _CMAKE_OPTION.findall(tree.read(path, limit=400_000) or ""):
            flag = f"-D{name}=OFF"
            if not docs_name(name) or flag in setup or any(f == flag for f, _ in out):
                continue
            if default.upper() in _OFF and f"-D{name}=ON" not in setup:
                continue
            out.append((flag, f"{path}: option {name} (default {default or 'OFF'})"))
    return out


def meson_switches(tree: GitTree, folder: str = "", setup: str = "") -> list[tuple[str, str]]:
    """(``-Dx=false`` / ``-Dx=disabled``, evidence) of the Meson project's boolean and feature
    options (meson.options / meson_options.txt of `folder`) with a name `docs_name` accepts
    (``docs``, ``man``, ``gtk_doc``, ``documentation``, ``manpages``), unless their default is off
    already (and `setup` did not switch them on) or `setup` sets them."""
    from agents.ecosystems.cfamily.c_meson import switch_options

    out: list[tuple[str, str]] = []
    for path, name, kind, default in switch_options(tree, folder):
        if not docs_name(name):
            continue
        if f"-D{name}=" in setup and not re.search(rf"-D{re.escape(name)}=(?:true|enabled)", setup):
            continue
        if default in ("false", "disabled") and f"-D{name}=" not in setup:
            continue
        flag = f"-D{name}={'false' if kind == 'boolean' else 'disabled'}"
        if all(f != flag for f, _ in out):
            out.append((flag, f"{path}: option {name} ({kind}, default {default})"))
    return out


def docs_moves(tree: GitTree, plan: PolyPlan, output: str) -> list:
    """S37's ``docs_off`` moves after a failed build whose output `docs_failure` reads as the
    documentation's (module doc): the project's switches (autotools configure flags, CMake
    ``-DX=OFF``, Meson ``-Dx=false|disabled``) in one rebuild; then, for an autotools or plain
    Makefile build whose make failed only there, the ``make -k`` route (`keep_going`). Each
    names the failure and the switch's source. [] for any other failure."""
    from agents.ecosystems.move_types import Move

    failure = docs_failure(output)
    if failure is None:
        return []
    setup = "\n".join(plan.setup_commands)
    if plan.build == "autotools":
        found, option = autotools_switches(tree, setup), "configure_flags"
    elif plan.build == "cmake":
        found, option = cmake_switches(tree, setup), "cmake_flags"
    elif plan.build == "meson":
        found, option = meson_switches(tree, plan.state.get("meson_folder", ""), setup), "meson_flags"
    else:
        found, option = [], ""
    why = failure.evidence()
    moves = []
    if found:
        flags = [f for f, _ in found]
        moves.append(Move(kind="docs_off", serves="a build that fails only in its documentation (S37)",
                          evidence=f"{why}; the project's switch: " + "; ".join(f"{f} ({w})" for f, w in found)[:400],
                          request=PlanRequest(options={option: flags}), key=" ".join(flags)))
    if plan.build in ("autotools", "make") and failure.failures and f"make -k -j{JOBS}" not in setup:
        moves.append(Move(kind="docs_off", serves="a build that fails only in its documentation (S37)",
                          evidence=f"{why}; " + ("no documentation switch left to try" if not found else
                                                 "if its switch does not help") + ": make -k builds everything "
                                                 "else, a failure outside the documentation is not tolerated",
                          request=PlanRequest(options={KEEP_GOING: True}), key="make -k"))
    return moves


def _tolerant(cmd: str) -> str:
    """`cmd` (``make -jN ...``) as ``make -k -jN ...`` whose failure is tolerated when the
    checker finds only documentation failures in its output (exit status kept otherwise)."""
    dirs = ",".join(docs_config().dirs)
    keep = cmd.replace("make ", "make -k ", 1)
    return (f"{keep} > {LOG} 2>&1; rc=$?; tail -n 300 {LOG}; if [ $rc -ne 0 ]; then "
            f"python3 {CHECKER} --root /testbed --dirs {shell_word(dirs)} < {LOG} || exit $rc; fi")


def keep_going(setup: list[str]) -> list[str]:
    """`setup` of an autotools / plain-Makefile plan with its build steps (``make -jN`` and
    automake's ``make -jN check TESTS=``) as tolerant ``make -k`` steps (`_tolerant`), the checker
    (`make_failures`, verbatim) installed before the first. Other commands unchanged; `setup`
    without such a step is returned as it is."""
    steps = {f"make -j{JOBS}", f"make -j{JOBS} check TESTS="}
    if not any(c in steps for c in setup):
        return list(setup)
    data = base64.b64encode(Path(make_failures.__file__).read_bytes()).decode()
    install = f"mkdir -p {Path(CHECKER).parent} && echo {data} | base64 -d > {CHECKER}"
    out: list[str] = []
    for cmd in setup:
        if cmd in steps:
            if install not in out:
                out.append(install)
            out.append(_tolerant(cmd))
        else:
            out.append(cmd)
    return out
