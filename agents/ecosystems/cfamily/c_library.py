"""A C/C++ library the repository builds with its own CMake project or Makefile for another
ecosystem's code (class S31: a cgo package whose ``#cgo LDFLAGS`` name
``${SRCDIR}/../cpp/cmake-build-release/libfoo.a``, a file no checkout has until that build ran).

`library_build` turns a `LibraryBuild` (which project, which build folder and type, which targets,
which files it must leave) into setup commands for the other ecosystem's plan and the command
that brings the library up to date before each test run. The CMake project is read by the same
analysis as a C/C++ plan's (`c_builds._cmake_analysis`, without the test options): its
``find_package`` / ``pkg_check_modules`` packages from Debian, its ``cmake_minimum_required``
(PyPI's cmake wheel when the image's cmake is older, as the C/C++ toolchain images do), a build
type the project validates. Every repository value in a command is quoted.
"""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.cfamily.c_builds import CBuild, _cmake_analysis
from agents.ecosystems.cfamily.c_setup import JOBS, cmake_configure
from agents.ecosystems.debian import apt_install
from envpool.toolchains.cfamily_image import OLDEST_CMAKE, cmake_wheel_script, cmake_wheel_series

__all__ = ["LOG", "LibraryBuild", "library_build"]

LOG = "/tmp/swemint-library-build.log"
"""Where a test run's rebuild of the library writes its output."""


class LibraryBuild(BaseModel):
    """One build of the repository's own library. `system`: ``cmake`` (configure `folder`'s
    CMakeLists.txt into `build_dir`, ``CMAKE_BUILD_TYPE`` `build_type` when set) or ``make``
    (``make -C folder``); `folder` / `build_dir` repository-relative ("" = the root; make:
    `build_dir` is `folder`); `targets`: CMake targets / make goals built first (the whole
    build when they fail); `outputs`: repository paths that must exist after it; `why`: who
    needs them (for the messages: ``pkg links path``)."""

    model_config = ConfigDict(extra="forbid")
    system: Literal["cmake", "make"]
    folder: str
    build_dir: str
    build_type: str | None = None
    targets: list[str] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    why: str = ""

    def label(self) -> str:
        """``cpp (cmake, Release, into cpp/cmake-build-release)``."""
        where = self.folder or "the repository root"
        if self.system == "make":
            return f"{where} (make{' ' + ' '.join(self.targets) if self.targets else ''})"
        return f"{where} (cmake{', ' + self.build_type if self.build_type else ''}, into {self.build_dir or '.'})"


def _path(path: str) -> str:
    return f"/testbed/{path}" if path else "/testbed"


def _abs(path: str) -> str:
    return shlex.quote(_path(path))


def _build(lib: LibraryBuild) -> str:
    """The build of `lib`'s targets, the whole build when they fail (a target named after the
    library's file that the project calls otherwise)."""
    q = " ".join(shlex.quote(t) for t in lib.targets)
    if lib.system == "cmake":
        whole = f"cmake --build {_abs(lib.build_dir)} -j{JOBS}"
        return f"{{ cmake --build {_abs(lib.build_dir)} --target {q} -j{JOBS} || {whole}; }}" if q else whole
    whole = f"make -C {_abs(lib.folder)} -j{JOBS}"
    return f"{{ make -C {_abs(lib.folder)} -j{JOBS} {q} || {whole}; }}" if q else whole


def library_build(tree, lib: LibraryBuild) -> tuple[list[str], str, list[str]]:
    """(setup commands, test-run rebuild command, notes) of `lib` (module doc).

    Setup: Debian's cmake / g++ / make and the packages the CMake files ask for; PyPI's cmake
    of the project's ``cmake_minimum_required`` series when the installed one is older; the
    configure and build (a failure prints which file the build was for and exits 1); a check
    that each of `outputs` exists (else ``swemint: ... did not produce <path>``, exit 1: the row
    ends naming the path). The rebuild (before each test run, offline): the same build,
    incremental, so a fix to the library's sources is what the tests link; when it fails the
    outputs are removed (the tests then fail to build rather than link the base commit's
    library)."""
    notes: list[str] = []
    packages = ["g++", "make"]
    steps: list[str] = []
    if lib.system == "cmake":
        b = CBuild(system="cmake")
        _cmake_analysis(tree, b, "", folder=lib.folder, tests=False)
        packages = ["cmake", *packages, *(p for p in b.packages if p not in ("cmake", "g++", "make"))]
        steps.append(apt_install(packages))
        # PyPI's cmake when the image's is older; the oldest Debian suite's cmake serving, every one does
        if want := cmake_wheel_series(b.cmake_min, OLDEST_CMAKE):
            steps.append(f"want={shlex.quote(want)}; have=$(cmake --version | sed -n '1s/^cmake version //p'); "
                         "if [ \"$(printf '%s\\n' \"$want\" \"$have\" | sort -V | head -n 1)\" != \"$want\" ]; then "
                         f"{apt_install(['python3-venv'])} && {cmake_wheel_script(want)}; fi")
            notes.append(f"{lib.folder or '.'}/CMakeLists.txt: cmake_minimum_required {b.cmake_min}")
        build_type = lib.build_type or (b.build_type if b.build_type != "None" else None) or None
        configure = cmake_configure(_path(lib.folder), _path(lib.build_dir), build_type)
        if b.fetchcontent:
            notes.append("its CMake files fetch " + ", ".join(d.name for d in b.fetchcontent)[:200]
                         + " at configure time (not provided from Debian here)")
        build = f"{configure} && {_build(lib)}"
    else:
        steps.append(apt_install(packages))
        build = _build(lib)
    said = f"swemint: the repository's own build of {lib.label()} failed"
    steps.append(f"{build} || {{ echo {shlex.quote(said + (' (' + lib.why + ')' if lib.why else ''))}; exit 1; }}")
    # the path first: a failed step's command opens the row's reason
    checks = [f"[ -e {_abs(p)} ] || {{ echo {shlex.quote(f'swemint: {p}: not produced by the build of {lib.label()}' + (f'; {lib.why}' if lib.why else ''))}; exit 1; }}"
              for p in lib.outputs]
    if checks:
        steps.append("; ".join(checks))
    gone = " ".join(_abs(p) for p in lib.outputs)
    rebuild = (f"{{ {_build(lib)} > {LOG} 2>&1 || {{ echo {shlex.quote(f'swemint: the rebuild of {lib.label()} failed ({LOG}); its outputs removed')}; "
               f"tail -n 20 {LOG}; {'rm -rf -- ' + gone + '; ' if gone else ''}}}; }}")
    return steps, rebuild, notes
