"""The next moves C/C++ feeds with data when a round gave nothing to grade: the CMake options
and configure flags that gate tests (the CI's first), the CI's setup, the units of a
Makefile graded by exit status."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from agents.gitrepo import GitTree
from agents.ecosystems.base import PlanRequest, PolyPlan
from agents.ecosystems.cfamily.cfamily_recipe import recipes


_GTEST_DECL = re.compile(r"^\s*(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")


_BOOST_DECL = re.compile(r"^\s*BOOST_(?:AUTO_TEST_CASE(?:_TEMPLATE)?|FIXTURE_TEST_CASE(?:_TEMPLATE)?|DATA_TEST_CASE)"
                         r"\s*\(\s*([A-Za-z_]\w*)")
"""A Boost.Test case a line declares (S36; its name: the last component of its ids ``suite/name``)."""


_CASE_DECL = re.compile(r"^\s*(?:TEST_CASE|SCENARIO|TEST_CASE_METHOD\s*\(\s*\w+\s*,)\s*\(?\s*\"([^\"]+)\"")


CMAKE_FLAG = re.compile(r"-D[A-Za-z_][A-Za-z0-9_]*=(?:ON|OFF|TRUE|FALSE|YES|NO|1|0)", re.I)


CONFIGURE_FLAG = re.compile(r"--(?:enable|disable|with|without)-[A-Za-z0-9][A-Za-z0-9_-]*(?:=(?:yes|no|auto))?")


_OPTION_LINE = re.compile(r"^swemint-cmake-tests: option ([A-Za-z_][A-Za-z0-9_]*)=OFF \((.*)\)\s*$", re.M)


_CONFIGURE_LINE = re.compile(r"^swemint-cmake-tests: configure says: (.*)$", re.M)


GATE_LINE = re.compile(r"^swemint-cmake-tests: option ([A-Za-z_][A-Za-z0-9_]*)=OFF gates (\S+): (.*)$", re.M)
"""The helper's line after S38's (a touched test source no target compiles): an OFF option whose
``if`` guards the command adding the file's folder (`cmake_tests.folder_gates`)."""


def _never(name: str) -> bool:
    up = name.upper()
    return any(up.endswith(sfx) for sfx in recipes()["test_options"]["never"])


def _ci_cmake_options(tree: GitTree) -> dict[str, str]:
    """NAME -> CI file of each ``-DNAME=ON`` (TRUE / YES / 1) of a ``cmake`` call in the CI's run steps."""
    from agents.ecosystems.ci import ci_steps, command_lines

    out: dict[str, str] = {}
    for step in ci_steps(tree):
        for line in command_lines(step.resolved()):
            if not re.search(r"(?:^|[\s/])cmake\s", line):
                continue
            for name in re.findall(r"-D\s*([A-Za-z_][A-Za-z0-9_]*)(?::BOOL)?=(?:ON|TRUE|YES|1)\b", line, re.I):
                out.setdefault(name, step.path)
    return out


def _cmake_option_moves(tree: GitTree, plan: PolyPlan, output: str, touched: list[str] | None = None) -> list:
    """`test_option` moves of a CMake round that defined no test (`CFamily.next_moves`), or whose
    touched test sources no target compiles while an OFF option gates their folder (S38's
    `GATE_LINE`s: one move with every such option, first -- nested guards need them all; only for
    a file of `touched`, and no file whose gates include an option never switched on here: a
    hardware backend, a lint/fuzz/coverage build, `_never`)."""
    from agents.ecosystems.move_types import Move

    setup = "\n".join(plan.setup_commands)
    gated: list[tuple[str, str]] = []
    gates: dict[str, list[tuple[str, str]]] = {}
    for m in GATE_LINE.finditer(output):
        gates.setdefault(m.group(2), []).append((m.group(1), m.group(3)))
    for f, named in gates.items():  # a file's gates are nested guards: all needed, or the file is not built here
        if f not in (touched or []) or any(_never(n) or HARDWARE_OPTION.search(n) or STRICT_OPTION.search(n) for n, _ in named):
            continue
        for n, where in named:
            if all(n != g for g, _ in gated):
                gated.append((n, f"{f} is compiled by no target; {where.strip()[:240]}"))
    gate_flags = [f"-D{n}=ON" for n, _ in gated if f"-D{n}=ON" not in setup]
    gate_moves = [Move(kind="test_option", serves="tests behind a project option",
                       evidence="; ".join(why for _, why in gated)[:600],
                       request=PlanRequest(options={"cmake_flags": gate_flags}), key=" ".join(gate_flags))] \
        if gate_flags else []
    off = {m.group(1): m.group(2) for m in _OPTION_LINE.finditer(output)}
    said = [line for line in _CONFIGURE_LINE.findall(output)]
    ci = _ci_cmake_options(tree)
    strong: list[tuple[str, str]] = []
    for line in said:
        for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", line):
            if (name in off or name in ci) and not _never(name) and all(n != name for n, _ in strong):
                strong.append((name, f"configure says: {line.strip()[:200]}"))
    for name, path in ci.items():
        if name in off and all(n != name for n, _ in strong) and not _never(name):
            strong.append((name, f"CI {path} configures -D{name}=ON"))
    weak = [(n, f"option {n} is OFF ({h[:120]})") for n, h in off.items()
            if not _never(n) and all(n != s for s, _ in strong)]
    moves = []
    for group in (strong, weak):
        flags = [f"-D{n}=ON" for n, _ in group if f"-D{n}=ON" not in setup]
        if flags:
            moves.append(Move(kind="test_option", serves="tests behind a project option",
                              evidence="; ".join(why for _, why in group)[:600],
                              request=PlanRequest(options={"cmake_flags": flags}), key=" ".join(flags)))
    return gate_moves + [m for m in moves if m.key not in {g.key for g in gate_moves}]


HARDWARE_OPTION = re.compile(r"(?:^|_)(?:GPU|CUDA|CUVS|METAL|MPS|ROCM|HIP|SYCL|OPENCL|VULKAN|TPU|NPU)(?:_|$)", re.I)
"""Options that switch on a hardware backend a build container has no toolkit or device for."""
STRICT_OPTION = re.compile(r"WERROR|WARNINGS?_AS_ERRORS?|LINTER|CLANG_TIDY|CPPCHECK|SANITI[SZ]E|FUZZ|COVERAGE",
                           re.I)
"""Options of a lint, fuzz or coverage job: they make the build stricter than its compiler here
allows (warnings as errors under a newer compiler) or instrument it; not what tests need."""


def _ci_configure_flags(tree: GitTree, system: str) -> list[tuple[str, str]]:
    """(flag, CI file) of the configure options the CI's run steps and composite actions pass:
    ``cmake ... -DX=<ON|OFF|TRUE|FALSE|YES|NO|0|1>`` for CMake, ``./configure --enable-x`` /
    ``--disable-x`` / ``--with-x`` / ``--without-x`` for autotools, ``meson ... -Dx=<true|false|
    enabled|disabled|auto>`` for Meson (S35). The CI's jobs are
    alternatives, not one build, so: steps of another platform (`CiStep.foreign`: macOS,
    Windows, PowerShell) are left out; each option once, with the first value met (not ON from
    one job and OFF from another, the last silently winning); an option that switches a
    hardware backend on (`HARDWARE_OPTION`: GPU, CUDA, Metal, ROCm, ...) or a lint, fuzz or
    coverage build on (`STRICT_OPTION`: warnings as errors, linters, sanitizers) is left out."""
    from agents.ecosystems.ci import action_steps, ci_steps, command_lines, split_words

    out: list[tuple[str, str]] = []
    for step in ci_steps(tree) + action_steps(tree):
        if step.foreign():
            continue
        for line in command_lines(step.resolved()):
            words = split_words(line)
            if system == "cmake" and any(PurePosixPath(w).name == "cmake" for w in words[:3]):
                flags = [re.sub(r"^-D\s*", "-D", w).replace(":BOOL=", "=") for w in words if w.startswith("-D")]
                out += [(f, step.path) for f in flags if CMAKE_FLAG.fullmatch(f)]
            elif system == "autotools" and any(PurePosixPath(w).name == "configure" for w in words[:3]):
                out += [(w, step.path) for w in words if CONFIGURE_FLAG.fullmatch(w)]
            elif system == "meson" and any(PurePosixPath(w).name == "meson" for w in words[:3]):  # S35
                from agents.ecosystems.cfamily.c_meson import MESON_FLAG

                flags = [re.sub(r"^-D\s*", "-D", w) for w in words if w.startswith("-D")]
                out += [(f, step.path) for f in flags if MESON_FLAG.fullmatch(f)]
    seen: set[str] = set()
    kept: list[tuple[str, str]] = []
    for f, p in out:
        name, on = _option(f)
        if name in seen or (on and (HARDWARE_OPTION.search(name) or STRICT_OPTION.search(name))):
            continue
        seen.add(name)
        kept.append((f, p))
    return kept


def _option(flag: str) -> tuple[str, bool]:
    """(option name, whether the flag turns it on) of ``-DX=<bool>`` (Meson's ``enabled`` too) or
    ``--enable-x`` / ``--disable-x`` / ``--with-x`` / ``--without-x`` (``--with-x=v`` counts as on)."""
    if flag.startswith("-D"):
        name, _, value = flag[2:].partition("=")
        return name, value.upper() in ("ON", "TRUE", "YES", "1", "Y", "ENABLED")
    m = re.match(r"--(enable|disable|with|without)-([\w.+-]+)", flag)
    if not m:
        return flag, False
    return m.group(2), m.group(1) in ("enable", "with")


def _ci_setup_moves(tree: GitTree, plan: PolyPlan) -> list:
    """The `ci_setup` move of a failed C/C++ build: the CI's apt packages not asked yet
    (`agents.ecosystems.ci.ci_apt_packages`; Execution installs those Debian has) and its
    configure options not in the setup yet (`_ci_configure_flags`), in one rebuild."""
    from agents.ecosystems.ci import ci_apt_packages
    from agents.ecosystems.move_types import Move

    setup = "\n".join(plan.setup_commands)
    packages = [p for p in ci_apt_packages(tree) if p not in plan.ci_packages]
    system = plan.build if plan.build in ("cmake", "autotools", "meson") else ""
    flags = [(f, p) for f, p in _ci_configure_flags(tree, system) if f not in setup] if system else []
    if not packages and not flags:
        return []
    options: dict = {}
    why: list[str] = []
    if packages:
        options["ci_packages"] = packages
        why.append(f"the CI installs {' '.join(packages[:12])}")
    if flags:
        options[{"cmake": "cmake_flags", "meson": "meson_flags"}.get(system, "configure_flags")] = [f for f, _ in flags]
        why.append("the CI configures with " + ", ".join(f"{f} ({p})" for f, p in flags[:8]))
    return [Move(kind="ci_setup", serves="a build that needs what the project's CI provides",
                 evidence="; ".join(why)[:600], request=PlanRequest(options=options))]


def _configure_option_moves(tree: GitTree, plan: PolyPlan) -> list:
    """`test_option` moves of an autotools round that ran no test: the configure.ac switches
    (``AC_ARG_ENABLE`` / ``AC_ARG_WITH``) whose name says test/check, not passed yet."""
    from agents.ecosystems.move_types import Move

    ac = next((f for f in ("configure.ac", "configure.in") if tree.exists(f)), None)
    text = tree.read(ac) or "" if ac else ""
    setup = "\n".join(plan.setup_commands)
    flags = []
    for kind, name in re.findall(r"AC_ARG_(ENABLE|WITH)\s*\(\s*\[?([\w-]+)", text):
        flag = f"--{kind.lower()}-{name}"
        if re.search(r"test|check", name, re.I) and flag not in setup and CONFIGURE_FLAG.fullmatch(flag):
            flags.append(flag)
    if not flags:
        return []
    return [Move(kind="test_option", serves="tests behind a project option", key=" ".join(flags),
                 evidence=f"{ac} declares {', '.join(flags)}", request=PlanRequest(options={"configure_flags": flags}))]


def _units_moves(tree: GitTree, plan: PolyPlan, touched: list[str]) -> list:
    """A `status_units` move: the touched files' scripts and make targets, graded per file where their
    tool reports each file (`unit_report_log`), else by exit status."""
    from agents.ecosystems.base import TestSpec
    from agents.ecosystems.cfamily.units import find_units, units_command
    from agents.ecosystems.move_types import Move

    suite = find_units(tree, touched)
    if not suite.touched:
        return []
    spec = TestSpec(name="units", test_command=units_command(suite.all()), parser="unit_report_log",
                    test_files=list(touched))
    evidence = "; ".join(f"{u.id}: {u.evidence}" for u in suite.touched)
    if suite.siblings:
        evidence += f"; PASS_TO_PASS candidates: {', '.join(u.id for u in suite.siblings)}"
    return [Move(kind="status_units", serves="suites with no per-test report", test=spec, evidence=evidence[:600])]



def _meson_option_moves(tree: GitTree, plan: PolyPlan) -> list:
    """S35: `test_option` moves of a Meson round that ran no test: the project's test-gating
    options (`c_meson.test_options`) as ``-Dname=true`` (boolean) / ``-Dname=enabled`` (feature),
    not in the setup yet -- those the CI passes on first (its own value of them), then the rest."""
    from agents.ecosystems.cfamily.c_meson import MESON_FLAG, option_flag, test_options
    from agents.ecosystems.move_types import Move

    setup = "\n".join(plan.setup_commands)
    folder = plan.state.get("meson_folder", "")
    ci = {_option(f)[0]: (f, p) for f, p in _ci_configure_flags(tree, "meson")}
    strong, weak = [], []
    for name, kind, default in test_options(tree, folder):
        flag = option_flag(name, kind)
        if f"-D{name}=" in setup or not MESON_FLAG.fullmatch(flag):
            continue
        if name in ci and _option(ci[name][0])[1]:
            strong.append((ci[name][0], f"CI {ci[name][1]} configures {ci[name][0]}"))
        else:
            weak.append((flag, f"option {name} ({kind}, default {default})"))
    return [Move(kind="test_option", serves="tests behind a project option", key=" ".join(f for f, _ in group),
                 evidence="; ".join(why for _, why in group)[:600],
                 request=PlanRequest(options={"meson_flags": [f for f, _ in group]}))
            for group in (strong, weak) if group]
