"""The build systems of a C/C++ tree (`analyze`, `systems`): CMake (its project, options, the
googletest / Catch2 / doctest it uses, submodules the mirror lacks), Meson (class S35,
`c_meson`), autotools, a plain Makefile."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from pydantic import BaseModel, Field
from agents.gitrepo import GitTree
import agents.ecosystems.cfamily.fetchcontent as fetchcontent
from agents.ecosystems.cfamily.fetchcontent import Declaration
from agents.ecosystems.cfamily.cfamily_recipe import recipes


C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".c++")


class CBuild(BaseModel):
    """What `analyze` found. `system`: cmake | meson | autotools | make | driver:<id>. `cmake_min`: the
    ``cmake_minimum_required`` floor (None when absent). `cxx_std`: the highest C++ standard the
    build files name. `packages`: Debian packages to install at setup. `configure_flags` /
    `cmake_flags` / `make_flags`: extra arguments (make's: variables that switch off what a
    missing submodule would provide). `gtest`: GoogleTest output expected. `boost_test`: Boost.Test
    sources or a Boost.Test link (S36: libboost-test-dev installed). `sources`: missing
    submodule path -> the Debian source package whose upstream tarball fills it (its own tests
    then run); `source_flags`: path -> (configure flags when it was filled, flags when not).
    `fetchcontent`: the ``FetchContent_Declare`` downloads of the CMake files (a failed one is
    provided from Debian's source, `agents.ecosystems.cfamily.fetchcontent`). `build_type`: the
    ``CMAKE_BUILD_TYPE`` to configure with (``None``: no optimisation flags, the cheapest compile;
    a project that accepts only a list of build types gets one of its list, `build_type`).
    `notes`: decisions worth recording (missing submodules and their replacements).
    Meson (S35): `folder` the project's folder ("" = the root), `meson_min` its ``meson_version``
    floor, `meson_flags` the ``-Dname=value`` options of the setup, `pkgconfig_needs` the required
    ``dependency()`` names no table knows (asked of Debian's index as pkg-config modules)."""

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
    boost_test: bool = False
    missing_submodules: list[str] = Field(default_factory=list)
    sources: dict[str, str] = Field(default_factory=dict)
    source_flags: dict[str, tuple[list[str], list[str]]] = Field(default_factory=dict)
    fetchcontent: list[Declaration] = Field(default_factory=list)
    build_type: str = "None"
    folder: str = ""
    meson_min: str | None = None
    meson_flags: list[str] = Field(default_factory=list)
    pkgconfig_needs: list[str] = Field(default_factory=list)
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


STANDARD_BUILD_TYPES = ("Debug", "Release", "RelWithDebInfo", "MinSizeRel")
_BUILD_TYPE_GATE = re.compile(r"if\s*\(\s*NOT\s+\"?(?:\$\{)?CMAKE_BUILD_TYPE\}?\"?\s+IN_LIST\s+\"?(?:\$\{)?(\w+)", re.I)


def build_type(text: str) -> str | None:
    """The build type to configure a project with whose top-level CMake file `text` refuses any
    ``CMAKE_BUILD_TYPE`` outside a list (``if(NOT CMAKE_BUILD_TYPE IN_LIST SUPPORTED_BUILD_TYPES)``
    then a ``FATAL_ERROR``: ``None`` is "Bad CMAKE_BUILD_TYPE"), or None when it accepts any.
    The class: projects that validate the build type. From the list (``set(VAR Debug Release
    ...)``): ``None`` when listed, else ``Debug`` (no optimisation: the cheapest compile, and
    the assertions tests expect), else its first entry; a list not found: ``Debug``."""
    m = _BUILD_TYPE_GATE.search(text)
    if not m:
        return None
    listed = re.search(rf"set\s*\(\s*{re.escape(m.group(1))}\s+([^)]*)\)", text, re.I)
    types = [w.strip('"') for w in listed.group(1).split()] if listed else []
    types = [t for t in types if re.fullmatch(r"\w+", t)]
    if "None" in types:
        return None
    return "Debug" if "Debug" in types or not types else types[0]


_BOOST_TEST_SOURCE = re.compile(r"#\s*include\s*[<\"]boost/test/|^\s*BOOST_(?:AUTO|FIXTURE|DATA)_TEST_(?:CASE|SUITE)\w*\s*\(",
                                re.M)
"""A Boost.Test source (class S36): a ``boost/test/`` include (``unit_test.hpp``, the header-only
``included/unit_test.hpp``) or a test unit macro."""
_BOOST_PACKAGE = re.compile(r"find_package\s*\(\s*Boost\b([^)]*)\)", re.I)
_BOOST_WORDS = {"required", "components", "optional_components", "quiet", "config", "no_module", "module", "exact",
                "no_policy_scope", "global"}


def boost_packages(text: str) -> list[str]:
    """The Debian packages of the Boost components a CMake file's ``find_package(Boost [version]
    [REQUIRED] [COMPONENTS] a b ...)`` calls ask for (`cfamily.yaml` ``boost_components``; a
    versioned name, ``python311``, as its family; components it does not know and variables are
    left out), and libboost-test-dev for a ``Boost::unit_test_framework`` /
    ``boost_unit_test_framework`` link (S36). In order, each once."""
    table = recipes()["boost_components"]
    out: list[str] = []
    for args in _BOOST_PACKAGE.findall(text):
        for word in re.findall(r"(?<![\w${])([A-Za-z_]\w*)", re.sub(r"\$\{[^}]*\}", " ", args)):
            if word.lower() not in _BOOST_WORDS:
                _add(out, table.get(word.lower()) or table.get(re.sub(r"\d+$", "", word.lower())))
    if re.search(r"\bBoost::unit_test_framework\b|\bboost_unit_test_framework\b", text):
        _add(out, table["unit_test_framework"])
    return out


def _cmake_analysis(tree: GitTree, b: CBuild, project: str, folder: str = "", tests: bool = True) -> None:
    """Fill `b` from the CMake project whose top-level CMakeLists.txt is in `folder` ("" = the
    repository root; only the CMake files below it are read): the build type a validating project
    accepts, the cmake floor, Debian packages of its ``find_package`` / ``pkg_check_modules``,
    the C++ standard, FetchContent declarations, GoogleTest; with `tests`, the options that
    switch tests on (``-DBUILD_TESTING=ON`` ...). Without `tests`: a library the repository
    builds for another ecosystem's code (a cgo package's, `c_setup.library_build`)."""
    rec = recipes()
    prefix = f"{folder}/" if folder else ""
    top = tree.read(prefix + "CMakeLists.txt") or ""
    if (bt := build_type(top)) is not None:
        b.build_type = bt
        b.notes.append(f"{prefix}CMakeLists.txt refuses build types outside a list: CMAKE_BUILD_TYPE={bt}")
    m = re.search(r"cmake_minimum_required\s*\(\s*VERSION\s+(\d+(?:\.\d+)*)", top, re.I)
    b.cmake_min = m.group(1) if m else None
    opts = rec["test_options"]
    stds: list[int] = []
    fetching: dict[str, str] = {}
    for path in [f for f in _cmake_files(tree) if f.startswith(prefix)][:400]:
        text = tree.read(path, limit=400_000) or ""
        if "fetchcontent_declare" in text.lower():
            fetching[path] = text
        for name in re.findall(r"find_package\s*\(\s*([\w.+-]+)", text, re.I):
            if name.lower() != project:  # the project's own package (an install test)
                _add(b.packages, rec["find_package"].get(name.lower()))
        if "boost" in text.lower():  # S36: the Boost components (Boost.Test's among them)
            _add(b.packages, boost_packages(text))
        for mods in re.findall(r"pkg_(?:check|search)_modules?\s*\(\s*\w+\s+([^)]*)\)", text, re.I):
            for mod in re.findall(r"[\w.+-]+", mods):
                _add(b.packages, rec["pkg_config"].get(re.split(r"[<>=]", mod)[0].lower()))
        for name in (re.findall(r"option\s*\(\s*(\w+)", text, re.I) if tests else []):
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
    if tests and "-DBUILD_TESTING=ON" not in b.cmake_flags:
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
    CMakeLists.txt with tests wins over configure.ac), autotools, make; meson (S35) ranked as
    the CI suggests when the root has a meson.build (`_rank_meson`), else last when a Meson
    project lies below the root (`c_meson.meson_projects`; after a root Makefile too: it may be
    a vendored library's)."""
    top = tree.read("CMakeLists.txt")
    ac = next((f for f in ("configure.ac", "configure.in") if tree.exists(f)), None)
    out = []
    if top is not None and (ac is None or re.search(r"enable_testing|include\s*\(\s*CTest", top, re.I)):
        out.append("cmake")
    if ac is not None:
        out.append("autotools")
    if top is not None and "cmake" not in out:
        out.append("cmake")
    root_meson = tree.exists("meson.build")
    if root_meson:
        out = _rank_meson(tree, out, top)
    mk = next((m for m in ("Makefile", "makefile", "GNUmakefile") if tree.exists(m)), None)
    if mk is not None and (not out or re.search(r"^(?:check|test|tests)\s*:", tree.read(mk) or "", re.M)):
        out.append("make")
    return out if root_meson else _rank_meson(tree, out, top)


def _rank_meson(tree: GitTree, out: list[str], top: str | None) -> list[str]:
    """`out` with ``meson`` placed (S35): none without a Meson project; after the others for a
    project only below the root; with a root meson.build, first when the CI builds with Meson and
    with none of the others (`c_meson.ci_systems`), last when the CI builds with another one and
    not Meson, else after a CMake build that has tests and before the rest (a tree carrying
    autotools or an untested CMake beside Meson is mostly moving to Meson)."""
    from agents.ecosystems.cfamily.c_meson import ci_systems, meson_projects

    if not tree.exists("meson.build"):
        return out + (["meson"] if meson_projects(tree) else [])
    if not out:
        return ["meson"]
    ci = ci_systems(tree)
    if "meson" in ci and not set(ci) & set(out):
        return ["meson", *out]
    if "meson" not in ci and set(ci) & set(out):
        return [*out, "meson"]
    tested = out[0] == "cmake" and top is not None and re.search(r"enable_testing|include\s*\(\s*CTest", top, re.I)
    return [out[0], "meson", *out[1:]] if tested else ["meson", *out]


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
    if system is None and systems(tree)[:1] == ["meson"]:
        system = "meson"
    if system == "meson" and (folder := _meson_folder(tree, touched)) is not None:
        b = CBuild(system="meson")
        _meson_analysis(tree, b, folder)
    elif system == "cmake" and top is not None or system is None and top is not None and (
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
        if path.endswith(C_SUFFIXES) and _BOOST_TEST_SOURCE.search(text):
            b.boost_test = True
    if any(p in b.packages for p in rec["boost_components"]["unit_test_framework"]):
        b.boost_test = True
    if b.boost_test:  # S36: its headers and library (a header-only ``included/`` build needs only the headers)
        _add(b.packages, rec["boost_components"]["unit_test_framework"])
        b.notes.append("Boost.Test sources: each Boost.Test binary runs again with its JUnit logger (ids suite/case)")
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


def _meson_folder(tree: GitTree, touched: list[str]) -> str | None:
    from agents.ecosystems.cfamily.c_meson import meson_folder

    return meson_folder(tree, touched)


def _meson_analysis(tree: GitTree, b: CBuild, folder: str) -> None:
    """Fill `b` from the Meson project in `folder` (S35, `c_meson`): its floor, the packages of
    its dependencies (required names no table knows: `pkgconfig_needs`), the test options the
    setup switches on; C++ standard from ``cpp_std=c++NN`` (the gcc floor)."""
    from agents.ecosystems.cfamily.c_meson import dependencies, dependency_packages, meson_floor, setup_flags

    prefix = f"{folder}/" if folder else ""
    top = tree.read(prefix + "meson.build") or ""
    b.folder = folder
    b.meson_min = meson_floor(top)
    packages, ask, left = dependency_packages(dependencies(tree, folder))
    _add(b.packages, packages)
    b.pkgconfig_needs = ask
    b.meson_flags = setup_flags(tree, folder)
    stds = [int(s) for s in re.findall(r"cpp_std\s*=\s*(?:c|gnu)\+\+(\d+)", top)]
    std = [s for s in stds if s < 90]
    b.cxx_std = str(max(std)) if std else None
    b.notes.append(f"meson project in {folder or 'the root'} (floor {b.meson_min or 'none'})"
                   + (f"; optional dependencies not installed: {', '.join(left[:20])}" if left else ""))


PLAIN_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,200}")
"""A submodule path that may enter a command unquoted (anything else keeps the Debian-library route)."""

