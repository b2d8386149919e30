"""C/C++ projects: CMake (CTest / GoogleTest), autotools (``make check``) and plain Makefiles.

Analysis (from the tree at base_commit, no checkout): the build system (a root CMakeLists.txt
with tests wins over configure.ac; configure.ac / configure.in; a plain Makefile), the CMake
floor (``cmake_minimum_required``), the C++ standard (gcc floor), Debian packages for
``find_package`` / ``pkg_check_modules`` / ``PKG_CHECK_MODULES`` / ``AC_CHECK_LIB`` names
(recipes in ``recipes/cfamily.yaml``), git submodules the mirror lacks (replaced by Debian
libraries where the recipe knows them, e.g. jq's oniguruma -> libonig-dev,
``--with-oniguruma=yes``), the ``FetchContent_Declare`` downloads (a configure that fails to
fetch one from an unreachable host is repaired with Debian's source of that upstream:
`agents.ecosystems.fetchcontent`) and whether the tests are GoogleTest.

Toolchain: the Debian suite of the commit's era (the newest one released by ``created_at``, else
the oldest), raised to the gcc the C++ standard needs (`envpool.toolchains.cfamily`).

Setup compiles what the test runs use, so they (network none) only rebuild what the patches touched:
- CMake: configure into /opt/build with the File API codemodel query, build the targets owning
  the touched files (else every test target: ``cmake_tests.py --build-only``);
  test command: ``recipes/cmake_tests.py`` (installed at
  /usr/local/libexec/swemint/cmake_tests.py, with ``recipes/doctest_runs.py``,
  ``recipes/catch2_runs.py`` and ``recipes/ctest_reruns.py`` beside it) builds the targets
  owning the touched files and runs their CTest tests; parser ``gtest_log`` (``ctest -V``) for
  GoogleTest, else ``ctest_junit`` (cmake >= 3.21, every test's whole output kept) or
  ``ctest_log`` (``ctest -V``: every test's output); a CTest test printing a TAP stream is
  reported as its TAP tests (``uv_test::name``).
  Tests whose binary is a doctest binary run again with doctest's XML reporter, and their ids
  are its test cases and subcases (``envpool.testrun.polyglot.doctest_xml``); a Catch2 binary
  runs again with Catch2's XML reporter, its ids ``<ctest test>::<test case>[ > <section>]``
  (``envpool.testrun.polyglot.catch2_xml``).
- autotools: ``autoreconf -fi`` (when no configure is committed), ``./configure``, ``make``,
  ``make check TESTS=`` (builds the check programs, runs nothing); test command ``make check``
  (every test script; ids = script paths, ``tests/shtest``), parser ``automake_log``.
- plain Makefile: ``make``; ``make -k check`` (or ``test``), parser ``automake_log`` (only
  harnesses printing ``PASS: x`` lines give results; otherwise the run is "no tests"). A
  Makefile beside another build system is a route only when it has a check/test target (json's
  maintainer Makefile is not).
"""

from __future__ import annotations

import base64
import re
import shlex
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path, PurePosixPath

import yaml
from pydantic import BaseModel, Field

from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, Route
from agents.ecosystems.toolchain import constrained
from envpool.testrun.limits import per_test
from envpool.errors import EnvBuildError
from agents.ecosystems.debian import apt_install, era_time
from agents.ecosystems.drivers import ENV_FILE, driver_env_setup, driver_requirements, driver_tests, find_drivers, \
    make_build, driver_test_specs
from agents.ecosystems import fetchcontent
from agents.ecosystems.fetchcontent import Declaration
from envpool.images import DEBIAN_MIRROR, ImageConfig
from envpool.toolchains import version_key

__all__ = ["ECOSYSTEM", "CBuild", "CFamily", "analyze", "era_gcc"]

RECIPES = Path(__file__).parent / "recipes"
BUILD_DIR = "/opt/build"
HELPER = "/usr/local/libexec/swemint/cmake_tests.py"
HELPER_FILES = ("cmake_tests.py", "doctest_runs.py", "catch2_runs.py", "ctest_reruns.py")
"""`recipes/` files installed beside each other in HELPER's folder (cmake_tests.py imports the
runs modules, which import ctest_reruns.py)."""
JUNIT = "/tmp/swemint-ctest.xml"
JOBS = 2

SUITE_RELEASES: list[tuple[date, str]] = [(date(2021, 8, 14), "10"), (date(2023, 6, 10), "12"),
                                          (date(2025, 8, 9), "14")]
"""Debian release date -> its gcc major (bullseye, bookworm, trixie)."""

CXX_STD_GCC = {"17": "10", "20": "10", "23": "12", "26": "14"}
"""C++ standard -> the oldest gcc major available here that implements enough of it."""

C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".c++")


@lru_cache(maxsize=1)
def recipes() -> dict:
    """`recipes/cfamily.yaml`, parsed once."""
    return yaml.safe_load((RECIPES / "cfamily.yaml").read_text())


class CBuild(BaseModel):
    """What `analyze` found. `system`: cmake | autotools | make | driver:<id>. `cmake_min`: the
    ``cmake_minimum_required`` floor (None when absent). `cxx_std`: the highest C++ standard the
    build files name. `packages`: Debian packages to install at setup. `configure_flags` /
    `cmake_flags` / `make_flags`: extra arguments (make's: variables that switch off what a
    missing submodule would provide). `gtest`: GoogleTest output expected. `sources`: missing
    submodule path -> the Debian source package whose upstream tarball fills it (its own tests
    then run); `source_flags`: path -> (configure flags when it was filled, flags when not).
    `fetchcontent`: the ``FetchContent_Declare`` downloads of the CMake files (a failed one is
    provided from Debian's source, `agents.ecosystems.fetchcontent`). `notes`: decisions worth
    recording (missing submodules and their replacements)."""

    system: str
    cmake_min: str | None = None
    cxx_std: str | None = None
    packages: list[str] = Field(default_factory=list)
    configure_flags: list[str] = Field(default_factory=list)
    cmake_flags: list[str] = Field(default_factory=list)
    make_flags: list[str] = Field(default_factory=list)
    configure_committed: bool = False
    make_target: str = "check"
    gtest: bool = False
    missing_submodules: list[str] = Field(default_factory=list)
    sources: dict[str, str] = Field(default_factory=dict)
    source_flags: dict[str, tuple[list[str], list[str]]] = Field(default_factory=dict)
    fetchcontent: list[Declaration] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _add(out: list[str], items) -> None:
    for i in items or []:
        if i not in out:
            out.append(i)


def _cmake_files(tree: GitTree) -> list[str]:
    return [f for f in tree.files if PurePosixPath(f).name == "CMakeLists.txt" or f.endswith(".cmake")]


def _missing_submodules(tree: GitTree) -> list[tuple[str, str]]:
    """(path, url) of submodules in .gitmodules (`GitTree.submodules`) whose path has no file in
    the tree."""
    return [(m.path, m.url) for m in tree.submodules()
            if not any(f.startswith(m.path.rstrip("/") + "/") for f in tree.files)]


def _cmake_analysis(tree: GitTree, b: CBuild, project: str) -> None:
    rec = recipes()
    top = tree.read("CMakeLists.txt") or ""
    m = re.search(r"cmake_minimum_required\s*\(\s*VERSION\s+(\d+(?:\.\d+)*)", top, re.I)
    b.cmake_min = m.group(1) if m else None
    opts = rec["test_options"]
    stds: list[int] = []
    fetching: dict[str, str] = {}
    for path in _cmake_files(tree)[:400]:
        text = tree.read(path, limit=400_000) or ""
        if "fetchcontent_declare" in text.lower():
            fetching[path] = text
        for name in re.findall(r"find_package\s*\(\s*([\w.+-]+)", text, re.I):
            if name.lower() != project:  # the project's own package (an install test)
                _add(b.packages, rec["find_package"].get(name.lower()))
        for mods in re.findall(r"pkg_(?:check|search)_modules?\s*\(\s*\w+\s+([^)]*)\)", text, re.I):
            for mod in re.findall(r"[\w.+-]+", mods):
                _add(b.packages, rec["pkg_config"].get(re.split(r"[<>=]", mod)[0].lower()))
        for name in re.findall(r"option\s*\(\s*(\w+)", text, re.I):
            up = name.upper()
            if any(up.endswith(s) for s in opts["never"]):
                continue
            if up in opts["names"] or any(up.endswith(s) for s in opts["suffixes"]):
                flag = f"-D{name}=ON"
                if flag not in b.cmake_flags:
                    b.cmake_flags.append(flag)
        stds += [int(s) for s in re.findall(r"CMAKE_CXX_STANDARD\s+(\d+)", text)]
        stds += [int(s) for s in re.findall(r"cxx_std_(\d+)", text)]
        if any(mk in text for mk in rec["gtest_markers"]):
            b.gtest = True
    if "-DBUILD_TESTING=ON" not in b.cmake_flags:
        b.cmake_flags.insert(0, "-DBUILD_TESTING=ON")
    b.fetchcontent = fetchcontent.declarations(fetching)
    std = [s for s in stds if s < 90]  # 98 / 03 are old standards, not new ones
    b.cxx_std = str(max(std)) if std else None
    if any("gtest" in f.lower() or "googletest" in f.lower() for f in tree.files):
        b.gtest = True


def _autotools_analysis(tree: GitTree, b: CBuild, ac: str) -> None:
    rec = recipes()
    text = tree.read(ac) or ""
    for lib in re.findall(r"AC_(?:CHECK_LIB|SEARCH_LIBS)\s*\(\s*\[?([\w.+-]+)", text):
        _add(b.packages, rec["libs"].get(lib.lower()))
    for mods in re.findall(r"PKG_CHECK_MODULES\s*\(\s*\[?\w+\]?\s*,\s*\[?([^\],)]*)", text):
        for mod in re.findall(r"[\w.+-]+", mods):
            _add(b.packages, rec["pkg_config"].get(re.split(r"[<>=]", mod)[0].lower()))
    enables = {e.lower() for e in re.findall(r"AC_ARG_ENABLE\s*\(\s*\[?([\w-]+)", text)}
    for name in rec["configure_disable"]:
        if name in enables:
            b.configure_flags.append(f"--disable-{name}")
    b.configure_committed = tree.exists("configure")


def _makefile_target(tree: GitTree) -> str:
    text = tree.read("Makefile") or tree.read("makefile") or tree.read("GNUmakefile") or ""
    for target in ("check", "test", "tests"):
        if re.search(rf"^{target}\s*:", text, re.M):
            return target
    return "check"


def systems(tree: GitTree) -> list[str]:
    """The build systems `tree` offers, in the order `analyze` prefers them: cmake (a root
    CMakeLists.txt with tests wins over configure.ac), autotools, make."""
    top = tree.read("CMakeLists.txt")
    ac = next((f for f in ("configure.ac", "configure.in") if tree.exists(f)), None)
    out = []
    if top is not None and (ac is None or re.search(r"enable_testing|include\s*\(\s*CTest", top, re.I)):
        out.append("cmake")
    if ac is not None:
        out.append("autotools")
    if top is not None and "cmake" not in out:
        out.append("cmake")
    mk = next((m for m in ("Makefile", "makefile", "GNUmakefile") if tree.exists(m)), None)
    if mk is not None and (not out or re.search(r"^(?:check|test|tests)\s*:", tree.read(mk) or "", re.M)):
        out.append("make")
    return out


def analyze(tree: GitTree, touched: list[str], project: str = "", system: str | None = None) -> CBuild:
    """Read the build system of `tree` (see the module doc). `touched`: the test patch's paths
    (their contents refine the GoogleTest decision); `project`: the repository's name (its own
    ``find_package`` in install tests is not a dependency); `system`: use this build system
    (a route the loop chose; `driver:<id>`: the repository's test driver) instead of the
    preferred one. Raises nothing: an unknown layout is
    `system="make"`."""
    rec = recipes()
    top = tree.read("CMakeLists.txt")
    ac = next((f for f in ("configure.ac", "configure.in") if tree.exists(f)), None)
    if system == "cmake" and top is not None or system is None and top is not None and (
            ac is None or re.search(r"enable_testing|include\s*\(\s*CTest", top, re.I)):
        b = CBuild(system="cmake")
        _cmake_analysis(tree, b, project.lower())
    elif ac is not None and system in (None, "autotools"):
        b = CBuild(system="autotools")
        _autotools_analysis(tree, b, ac)
    elif system and system.startswith("driver:"):
        b = CBuild(system=system)
    else:
        b = CBuild(system="make", make_target=_makefile_target(tree))
    for path in touched:
        text = tree.read(path, limit=400_000) or ""
        if path.endswith(C_SUFFIXES) and re.search(r"^\s*(TEST|TEST_F|TEST_P|TYPED_TEST)\s*\(", text, re.M):
            b.gtest = True
    for path, url in _missing_submodules(tree):
        b.missing_submodules.append(path)
        key = f"{path} {url}".lower()
        hit = next((v for k, v in rec["submodules"].items() if k in key), None)
        if hit is None:
            b.notes.append(f"git submodule {path} ({url}) is missing from the mirror and no Debian "
                           "replacement is known: the build may fail")
            continue
        if hit.get("debian_source") and b.system == "autotools" and PLAIN_PATH.fullmatch(path) and ".." not in path:
            b.sources[path] = hit["debian_source"]
            b.source_flags[path] = (list(hit.get("source_configure") or []), list(hit.get("configure") or []))
            _add(b.packages, hit.get("packages"))  # the fallback when Debian's source cannot be fetched
            b.notes.append(f"{path} (a git submodule) is missing from the mirror: filled from Debian's source "
                           f"package {hit['debian_source']} (its own tests run, as in a full clone); where it "
                           f"cannot be fetched: {hit['note']}")
            continue
        _add(b.packages, hit.get("packages"))
        _add(b.configure_flags, hit.get("configure"))
        _add(b.cmake_flags, hit.get("cmake"))
        _add(b.make_flags, hit.get("make"))
        b.notes.append(hit["note"])
    return b


PLAIN_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,200}")
"""A submodule path that may enter a command unquoted (anything else keeps the Debian-library route)."""
SOURCE_FETCH = (
    "export DEBIAN_FRONTEND=noninteractive && "
    "for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do if [ -f \"$f\" ]; then "
    "sed -n 's/^deb /deb-src /p' \"$f\"; fi; done > /tmp/swemint-src.list && "
    "mv /tmp/swemint-src.list /etc/apt/sources.list.d/swemint-src.list && "
    "for f in /etc/apt/sources.list.d/*.sources; do case $f in *-swemint-src.sources) ;; *) if [ -f \"$f\" ]; then "
    "sed 's/^Types: deb$/Types: deb-src/' \"$f\" > \"${{f%.sources}}-swemint-src.sources\"; fi;; esac; done && "
    "apt-get update -qq && rm -rf /tmp/swemint-src && mkdir -p /tmp/swemint-src && cd /tmp/swemint-src && "
    "{{ apt-get source --download-only --tar-only -qq {package} && mkdir -p /testbed/{path} && "
    "tar -xf \"$(ls {package}_*.orig.tar.* | head -n 1)\" -C /testbed/{path} --strip-components=1 || "
    "echo 'swemint: Debian source {package} unavailable: the Debian library is used'; }}; "
    "cd / && rm -rf /tmp/swemint-src /etc/apt/sources.list.d/swemint-src.list /etc/apt/sources.list.d/*-swemint-src.sources "
    "/var/lib/apt/lists/*")
"""Fill a missing submodule's folder from the upstream tarball of Debian's source package (deb-src
lines derived from the image's own apt sources, removed again)."""


def configure_command(b: CBuild) -> str:
    """``./configure`` with `b.configure_flags`; with submodules filled from Debian source, their
    flags depend on whether the fetch filled them (``configure.ac`` there), so a source Debian
    no longer serves falls back to the Debian library."""
    plain = " ".join(["./configure", *b.configure_flags])
    if not b.source_flags:
        return plain
    test = " && ".join(f"[ -f {_q(p + '/configure.ac')} ]" for p in b.source_flags)
    filled = [f for fl, _ in b.source_flags.values() for f in fl]
    library = [f for _, fl in b.source_flags.values() for f in fl]
    return f"if {test}; then {' '.join([plain, *filled])}; else {' '.join([plain, *library])}; fi"


def source_fetch(path: str, package: str) -> str:
    """The setup command filling `path` (a missing submodule) from Debian source `package`."""
    from agents.debindex import DEBIAN_NAME

    if not DEBIAN_NAME.fullmatch(package) or not PLAIN_PATH.fullmatch(path) or ".." in path:
        raise ValueError(f"not a Debian package name and a plain path: {package!r} {path!r}")
    return SOURCE_FETCH.format(package=package, path=path)


def install_helpers() -> str:
    """The setup command writing `HELPER_FILES` verbatim (base64) into HELPER's folder."""
    folder = Path(HELPER).parent
    parts = [f"mkdir -p {folder}"]
    for name in HELPER_FILES:
        data = base64.b64encode((RECIPES / name).read_bytes()).decode()
        parts.append(f"echo {data} | base64 -d > {folder / name}")
    return " && ".join(parts + [f"chmod +x {HELPER}"])


def era_gcc(when: datetime | date | None) -> str:
    """gcc major of the newest Debian suite released on or before `when` (the oldest when none
    was; None -> the bookworm default "12")."""
    if when is None:
        return "12"
    d = when.date() if isinstance(when, datetime) else when
    chosen = SUITE_RELEASES[0][1]
    for released, gcc in SUITE_RELEASES:
        if released <= d:
            chosen = gcc
    return chosen


def _q(s: str) -> str:
    return shlex.quote(s)


SUITE_GCC = {"bullseye": "10", "bookworm": "12", "trixie": "14"}
"""Debian suite -> its gcc major (a memory `toolchain debian bookworm` action means gcc 12)."""


def _gcc_major(requested: str | None) -> str | None:
    """A gcc major from a request: a suite name, a major (`12`) or a constraint's version."""
    if not requested:
        return None
    if requested in SUITE_GCC:
        return SUITE_GCC[requested]
    m = re.search(r"\d+", requested)
    return m.group(0) if m else None


class CFamily(Ecosystem):
    """The C/C++ ecosystem (`agents.ecosystems.base.Ecosystem`)."""

    name = "cfamily"
    languages = ("c", "cpp")
    tools = ("gcc", "debian")
    parsers = ("ctest_junit", "ctest_log", "gtest_log", "automake_log", "script_status_log", "tcl_helper_log",
               "catch2_xml", "doctest_xml")
    toolchain_module = "envpool.toolchains.cfamily"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """12 for a C/C++-labelled tree with a build file at the root, 10 without the label
        (CMakeLists.txt / configure.ac), 6 for a root Makefile over C sources or for a C/C++
        tree whose own test driver is built by a Makefile below the root
        (`agents.ecosystems.drivers`), else 0."""
        lang = (language or "").lower()
        is_c = lang in ("c", "cpp", "c++", "cxx")
        if lang and not is_c and lang not in ("", "unknown"):
            return 0
        if tree.exists("CMakeLists.txt") or tree.exists("configure.ac") or tree.exists("configure.in"):
            return 12 if is_c else 10
        c_sources = is_c or sum(f.endswith(C_SUFFIXES) for f in tree.files[:5000]) >= 3
        if any(tree.exists(m) for m in ("Makefile", "makefile", "GNUmakefile")) and c_sources:
            return 6
        if c_sources and any(make_build(tree, d) for d in find_drivers(tree, self.name)):
            return 6
        return 0

    def routes(self, tree: GitTree, language: str | None) -> list[Route]:
        """The repository's own test drivers built by a Makefile (`driver:<id>`, first: they
        select single tests), then the build systems of the tree (`systems`); `make` when none
        is known."""
        drivers = [Route(name=d.route) for d in find_drivers(tree, self.name) if make_build(tree, d)]
        return drivers + ([Route(name=n) for n in systems(tree)] or [Route(name="make")])

    def language_of(self, tree: GitTree) -> str:
        """`cpp` when C++ sources outnumber C ones, else `c`."""
        cpp = sum(f.endswith((".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".c++")) for f in tree.files[:20000])
        c = sum(f.endswith(".c") for f in tree.files[:20000])
        return "cpp" if cpp > c else "c"

    def toolchain(self, requested: str | None, images: ImageConfig):
        """(ToolchainChoice, environment) of a gcc image at least `requested` (LLM plans)."""
        from envpool.toolchains.cfamily import ensure_image

        return ensure_image(_gcc_major(requested), images), {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """The build-and-test plan (module doc). `request.route` picks the build system,
        `request.toolchain` constrains the gcc major (a suite name such as `bookworm` means its
        gcc). Raises InfraError when the toolchain image cannot be built, EnvBuildError when no
        gcc here meets the constraint."""
        from envpool.toolchains.cfamily import cmake_of_suite, ensure_image, DEBIAN_GCC

        req = request or PlanRequest()
        b = analyze(tree, touched, instance.repo.rsplit("/", 1)[-1], system=req.route)
        _add(b.cmake_flags, [f for f in req.options.get("cmake_flags", []) if CMAKE_FLAG.fullmatch(f)])
        _add(b.configure_flags, [f for f in req.options.get("configure_flags", []) if CONFIGURE_FLAG.fullmatch(f)])
        from agents.debindex import DEBIAN_NAME

        ci_asked = [p for p in req.options.get("ci_packages", []) if DEBIAN_NAME.fullmatch(p)]
        gcc = era_gcc(era_time(instance, tree))
        floor = CXX_STD_GCC.get(b.cxx_std or "")
        if floor and int(floor) > int(gcc):
            gcc = floor
        if req.toolchain or req.avoid:
            try:
                gcc = constrained(sorted(DEBIAN_GCC, key=int), gcc, _gcc_major(req.toolchain) if
                                  req.toolchain and req.toolchain in SUITE_GCC else req.toolchain, req.avoid)
            except ValueError as e:
                raise EnvBuildError(f"cfamily: {e}", instance_id=instance.instance_id) from e
        choice = ensure_image(gcc, images, cmake=b.cmake_min if b.system == "cmake" else None)
        cmake_version = choice.version.rsplit("cmake ", 1)[-1] if "cmake" in choice.version else \
            cmake_of_suite(DEBIAN_GCC[gcc])
        notes = list(b.notes)
        setup: list[str] = []
        if b.packages:
            setup.append(apt_install(b.packages))
        if b.missing_submodules:  # as a clone without `submodule update` has them (automake wants SUBDIRS)
            setup.append("mkdir -p " + " ".join(_q(p) for p in b.missing_submodules))
        setup += [source_fetch(path, pkg) for path, pkg in b.sources.items()]
        tests = [f for f in touched]
        env = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        if b.system == "cmake":
            setup.append(install_helpers())
            setup.append(f"mkdir -p {BUILD_DIR}/.cmake/api/v1/query && touch {BUILD_DIR}/.cmake/api/v1/query/codemodel-v2"
                         f" && cmake -S /testbed -B {BUILD_DIR} -DCMAKE_BUILD_TYPE=None {' '.join(b.cmake_flags)}")
            # only the targets the test run will build (those owning the touched files, else the
            # test targets): a whole large project (json: hundreds of test binaries) outlasts the
            # setup step's time on a loaded host
            setup.append(f"python3 {HELPER} {BUILD_DIR} --build-only --jobs {JOBS} -- "
                         + " ".join(_q(t) for t in tests) + " || echo 'swemint: some targets do not build at base_commit'")
            junit = not b.gtest and version_key(cmake_version) >= (3, 21)
            args = f"--junit {JUNIT}" if junit else "--verbose"  # -V: a passing test's output (TAP) too
            # ctest's per-test limit (`envpool.testrun.limits`): a hanging test is that test's timeout
            test_command = (f"python3 {HELPER} {BUILD_DIR} {args} --jobs {JOBS} --timeout {per_test()} -- "
                            + " ".join(_q(t) for t in tests))
            parser = "gtest_log" if b.gtest else ("ctest_junit" if junit else "ctest_log")
            report = JUNIT if junit else None
        elif b.system == "autotools":
            if not b.configure_committed:
                setup.append("autoreconf -fi")
            setup.append(configure_command(b))
            setup.append(f"make -j{JOBS}")
            setup.append(f"make -j{JOBS} check TESTS=")
            test_command = f"make -j{JOBS} -k check"
            parser, report = "automake_log", None
            notes.append("make check runs every test script (ids: script paths as automake prints them)")
        elif b.system.startswith("driver:"):
            test_command, parser, alts, more, (needs, ci_packages) = self._driver_plan(tree, b, touched,
                                                                                       instance.instance_id)
            setup += more
            tests, report = list(alts[0].test_files), None
            notes.append(f"test driver {b.system[7:]}: {alts[0].test_command[:300]}")
            if needs or ci_packages:
                notes.append(f"the driver needs {', '.join(n.label for n in needs) or 'nothing named'}; its CI "
                             f"installs {', '.join(ci_packages) or 'nothing'}")
        else:
            setup.append(f"make -j{JOBS}")
            test_command = f"make -k {b.make_target}"
            parser, report = "automake_log", None
            notes.append(f"plain Makefile: 'make {b.make_target}' is parsed as automake PASS:/FAIL: "
                         "lines; a harness printing none gives no results")
        plan = PolyPlan(ecosystem=self.name, toolchain=choice.version, image=choice.image, route=choice.route,
                        build=b.system, substitutions=list(choice.substitutions), setup_commands=setup, env=env,
                        test_command=test_command, parser=parser, report_path=report, test_files=tests,
                        notes=notes + [f"build system: {b.system}"])
        if b.fetchcontent:
            plan.state["fetchcontent"] = {"declarations": [d.model_dump() for d in b.fetchcontent],
                                          "mirror": images.debian_mirror}
            plan.notes.append("FetchContent downloads: "
                              + ", ".join(f"{d.name} ({d.url})" for d in b.fetchcontent)[:400])
        if b.system.startswith("driver:"):
            plan = plan.with_test(alts[0])
            plan.test_alternatives = alts[1:]
            plan.needs, plan.ci_packages = needs, ci_packages
        plan.ci_packages = list(dict.fromkeys([*plan.ci_packages, *ci_asked]))
        return plan

    def _driver_plan(self, tree: GitTree, b: CBuild, touched: list[str], iid: str):
        """(test command, parser, ranked TestSpecs, setup commands, (needs, CI packages)) of a
        driver route: build with the Makefile that runs the driver (`drivers.make_build`), record
        the driver's environment from its make target, run it on the touched tests; what the
        driver needs (`drivers.driver_requirements`) goes into the plan. Raises EnvBuildError when the driver
        or its build is gone, or the test patch touches none of its tests."""
        driver = next((d for d in find_drivers(tree, self.name) if d.route == b.system), None)
        build = make_build(tree, driver) if driver else None
        if driver is None or build is None:
            raise EnvBuildError(f"cfamily: {b.system}: no such driver built by a Makefile here", instance_id=iid)
        build.flags = list(b.make_flags)
        tests = driver_tests(driver, touched)
        if not tests:
            raise EnvBuildError(f"cfamily: {b.system}: the test patch touches none of its tests "
                                f"({', '.join(touched[:5])})", instance_id=iid)
        make = " ".join(_q(w) for w in ["make", *(["-C", build.folder] if build.folder != "." else []),
                                          f"-j{JOBS}", *build.flags])
        log = "/tmp/swemint-build.log"
        prefix = (f"{make} > {log} 2>&1 || {{ tail -n 80 {log}; echo 'swemint: the build failed'; exit 2; }}; "
                  f"if [ -f {ENV_FILE} ]; then . {ENV_FILE}; fi; ")
        alts = driver_test_specs(driver, tests, prefix=prefix, files=tree.files)
        setup = [make, *driver_env_setup(build, driver)]
        return alts[0].test_command, driver.spec.parser, alts, setup, driver_requirements(tree, driver)

    def build_command(self, plan: PolyPlan) -> str | None:
        """Compile once (`verify.compile_once`): CMake plans build the test command's targets
        (the helper's ``--build-only``: no ctest); automake's ``make check`` builds its check
        programs with an empty ``TESTS=`` (no test script runs). None for a plain Makefile or a
        repository test driver, whose build and tests cannot be told apart."""
        cmd = plan.test_command
        helper = f"python3 {HELPER} {BUILD_DIR} "
        if plan.build == "cmake" and cmd.startswith(helper) and " -- " in cmd:
            return f"{helper}--build-only --jobs {JOBS} -- {cmd.split(' -- ', 1)[1]}; true"
        if plan.build == "autotools" and cmd == f"make -j{JOBS} -k check":
            return f"make -j{JOBS} -k check TESTS=; true"
        return None

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """A FetchContent download that failed (an unreachable host): its upstream tarball from
        Debian's source package and the configure again with ``FETCHCONTENT_SOURCE_DIR_<NAME>``
        (`fetch_repair`). Else install the Debian package of a dependency the configure step
        reports missing (CMake ``Could NOT find X`` / ``By not providing "FindX.cmake"``,
        pkg-config ``No package 'x' found``, autoconf's ``library 'x' is required``); None
        otherwise."""
        fetched = fetch_repair(plan, command, output, tried=tried)
        if fetched and not _tried(fetched, tried):
            return fetched
        rec = recipes()
        pkgs: list[str] = []
        for name in re.findall(r"Could NOT find (\w+)|Could not find a package configuration file provided by \"?(\w+)",
                                output):
            _add(pkgs, rec["find_package"].get((name[0] or name[1]).lower()))
        for mod in re.findall(r"No package '([\w.+-]+)' found", output):
            _add(pkgs, rec["pkg_config"].get(mod.lower()))
        for lib in re.findall(r"(?:library|lib)\s*'?([\w.+-]+)'? (?:is required|not found)", output):
            _add(pkgs, rec["libs"].get(lib.lower()))
        if re.search(r"(autoreconf|aclocal|libtoolize|autopoint): (command )?not found", output):
            _add(pkgs, ["autoconf", "automake", "libtool", "autopoint"])
        if not pkgs:
            return None
        fix = [apt_install(pkgs)]
        return None if _tried(fix, tried) else fix


    # -- the loop's generic next moves (agents.moves), fed with C/C++ data --------------------
    def next_moves(self, ctx) -> list:
        """Moves for a stalled C/C++ round (`agents.moves`): `test_option` (CMake: the OFF options
        the helper printed because no CTest test is defined -- those the configure output or the
        CI's ``cmake -DX=ON`` names first, then those whose name or help says test/check;
        autotools: the ``--enable-X`` / ``--with-X`` switches of configure.ac that say test/check),
        `rediscover` (a googletest test the test_patch adds never ran: the touched targets built
        again from clean, their discovery after the test_patch) and `status_units` (the run gave
        no per-test report: the scripts and make targets of the touched files graded by exit
        status, `agents.ecosystems.units`); after a failed build, `ci_setup` (the CI's apt packages
        and its configure options: ``cmake -DX=<bool>``, ``./configure --enable/--disable/--with/
        --without-X``, composite actions included). Each names its evidence."""
        from agents.ecosystems.moves import Move

        plan, out = ctx.plan, ctx.output or ""
        moves: list = []
        if ctx.why.startswith("setup failed"):
            return _ci_setup_moves(ctx.tree, plan)
        if plan.build == "cmake" and re.search(r"no CTest tests are defined|building the 0 test targets", out):
            moves += _cmake_option_moves(ctx.tree, plan, out)
        if plan.build == "autotools" and ctx.why.startswith("no test ran"):
            moves += _configure_option_moves(ctx.tree, plan)
        if plan.build == "cmake" and ctx.why.startswith("tests the test_patch adds never ran") and \
                HELPER in plan.test_command and "--rediscover" not in plan.test_command:
            spec = plan.test_spec().model_copy(update={"name": "rediscover", "test_command": plan.test_command.replace(
                f"python3 {HELPER} {BUILD_DIR} ", f"python3 {HELPER} {BUILD_DIR} --rediscover ", 1)})
            moves.append(Move(kind="rediscover", serves="tests discovered at build time", test=spec,
                              evidence=f"{ctx.why}: the touched targets built again from clean, so what their "
                                       "build registers is listed after the test_patch"))
        if ctx.why.startswith("no test ran") and (plan.parser == "automake_log" or plan.build in ("make", "autotools")):
            moves += _units_moves(ctx.tree, plan, ctx.touched)
        return moves

    def added_tests(self, test_patch: str) -> list[str]:
        """The googletest tests (``TEST(Suite, Name)``, ``TEST_F``, ``TYPED_TEST``: ``Suite.Name``)
        and Catch2 / doctest test cases (``TEST_CASE("name"``) a line the test_patch adds
        declares (not those a removed line declared too: a test moved or edited in place)."""
        from envpool.patches import added_lines, changed_lines

        def declared(lines: list[str]) -> list[str]:
            out = []
            for line in lines:
                m = _GTEST_DECL.match(line)
                name = f"{m.group(2)}.{m.group(3)}" if m else None
                if name is None and (m := _CASE_DECL.match(line)):
                    name = m.group(1)
                if name and name not in out:
                    out.append(name)
            return out

        changed = changed_lines(test_patch)
        names: list[str] = []
        for path, lines in added_lines(test_patch).items():
            if path.endswith(C_SUFFIXES):
                removed = set(declared([x for x in changed.get(path, []) if x not in lines]))
                names += [n for n in declared(lines) if n not in removed and n not in names]
        return names


_GTEST_DECL = re.compile(r"^\s*(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_CASE_DECL = re.compile(r"^\s*(?:TEST_CASE|SCENARIO|TEST_CASE_METHOD\s*\(\s*\w+\s*,)\s*\(?\s*\"([^\"]+)\"")
CMAKE_FLAG = re.compile(r"-D[A-Za-z_][A-Za-z0-9_]*=(?:ON|OFF|TRUE|FALSE|YES|NO|1|0)", re.I)
CONFIGURE_FLAG = re.compile(r"--(?:enable|disable|with|without)-[A-Za-z0-9][A-Za-z0-9_-]*(?:=(?:yes|no|auto))?")
_OPTION_LINE = re.compile(r"^swemint-cmake-tests: option ([A-Za-z_][A-Za-z0-9_]*)=OFF \((.*)\)\s*$", re.M)
_CONFIGURE_LINE = re.compile(r"^swemint-cmake-tests: configure says: (.*)$", re.M)


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


def _cmake_option_moves(tree: GitTree, plan: PolyPlan, output: str) -> list:
    """`test_option` moves of a CMake round that defined no test (`CFamily.next_moves`)."""
    from agents.ecosystems.moves import Move

    setup = "\n".join(plan.setup_commands)
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
    return moves


def _ci_configure_flags(tree: GitTree, system: str) -> list[tuple[str, str]]:
    """(flag, CI file) of the configure options the CI's run steps and composite actions pass:
    ``cmake ... -DX=<ON|OFF|TRUE|FALSE|YES|NO|0|1>`` for CMake, ``./configure --enable-x`` /
    ``--disable-x`` / ``--with-x`` / ``--without-x`` for autotools; each flag once."""
    from agents.ecosystems.ci import action_steps, ci_steps, command_lines, split_words

    out: list[tuple[str, str]] = []
    for step in ci_steps(tree) + action_steps(tree):
        for line in command_lines(step.resolved()):
            words = split_words(line)
            if system == "cmake" and any(PurePosixPath(w).name == "cmake" for w in words[:3]):
                flags = [re.sub(r"^-D\s*", "-D", w).replace(":BOOL=", "=") for w in words if w.startswith("-D")]
                out += [(f, step.path) for f in flags if CMAKE_FLAG.fullmatch(f)]
            elif system == "autotools" and any(PurePosixPath(w).name == "configure" for w in words[:3]):
                out += [(w, step.path) for w in words if CONFIGURE_FLAG.fullmatch(w)]
    seen: set[str] = set()
    return [(f, p) for f, p in out if not (f in seen or seen.add(f))]


def _ci_setup_moves(tree: GitTree, plan: PolyPlan) -> list:
    """The `ci_setup` move of a failed C/C++ build: the CI's apt packages not asked yet
    (`agents.ecosystems.ci.ci_apt_packages`; Execution installs those Debian has) and its
    configure options not in the setup yet (`_ci_configure_flags`), in one rebuild."""
    from agents.ecosystems.ci import ci_apt_packages
    from agents.ecosystems.moves import Move

    setup = "\n".join(plan.setup_commands)
    packages = [p for p in ci_apt_packages(tree) if p not in plan.ci_packages]
    system = plan.build if plan.build in ("cmake", "autotools") else ""
    flags = [(f, p) for f, p in _ci_configure_flags(tree, system) if f not in setup] if system else []
    if not packages and not flags:
        return []
    options: dict = {}
    why: list[str] = []
    if packages:
        options["ci_packages"] = packages
        why.append(f"the CI installs {' '.join(packages[:12])}")
    if flags:
        options["cmake_flags" if system == "cmake" else "configure_flags"] = [f for f, _ in flags]
        why.append("the CI configures with " + ", ".join(f"{f} ({p})" for f, p in flags[:8]))
    return [Move(kind="ci_setup", serves="a build that needs what the project's CI provides",
                 evidence="; ".join(why)[:600], request=PlanRequest(options=options))]


def _configure_option_moves(tree: GitTree, plan: PolyPlan) -> list:
    """`test_option` moves of an autotools round that ran no test: the configure.ac switches
    (``AC_ARG_ENABLE`` / ``AC_ARG_WITH``) whose name says test/check, not passed yet."""
    from agents.ecosystems.moves import Move

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
    """A `status_units` move: the touched files' scripts and make targets, graded by exit status."""
    from agents.ecosystems.base import TestSpec
    from agents.ecosystems.units import find_units, units_command
    from agents.ecosystems.moves import Move

    suite = find_units(tree, touched)
    if not suite.touched:
        return []
    spec = TestSpec(name="units", test_command=units_command(suite.all()), parser="script_status_log",
                    test_files=list(touched))
    evidence = "; ".join(f"{u.id}: {u.evidence}" for u in suite.touched)
    if suite.siblings:
        evidence += f"; PASS_TO_PASS candidates: {', '.join(u.id for u in suite.siblings)}"
    return [Move(kind="status_units", serves="suites with no per-test report", test=spec, evidence=evidence[:600])]


def _tried(fix: list[str], tried: set[str]) -> bool:
    """Whether Execution applied `fix` already (its keys are the commands plus the env as JSON)."""
    key = "\n".join(fix)
    return key in tried or key + "{}" in tried


def fetch_config() -> fetchcontent.FetchContentConfig:
    """`recipes/cfamily.yaml` ``fetchcontent``, validated."""
    return fetchcontent.FetchContentConfig.model_validate(recipes().get("fetchcontent") or {})


def fetch_repair(plan: PolyPlan | None, command: str, output: str, sources=None,
                 tried: set[str] | None = None) -> list[str] | None:
    """The FetchContent repair of a failed configure `command` (`fetchcontent.repair_commands`
    with the plan's declarations and Debian's Sources on the plan's mirror; `sources`: a
    `DebianSources` to use instead; `tried`: the repairs of this build), or None."""
    if not fetchcontent.failed_fetches(output):
        return None
    from agents.ecosystems.debsources import DebianSources

    cfg = fetch_config()
    state = (plan.state.get("fetchcontent") if plan is not None else None) or {}
    sources = sources or DebianSources(cfg.sources, state.get("mirror") or DEBIAN_MIRROR)
    got = fetchcontent.repair_commands(state, command, output, sources, cfg, tried or set())
    return got[0] if got else None


ECOSYSTEM = CFamily()
