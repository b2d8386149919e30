"""The setup commands of a C/C++ plan: the configure command, the sources fetched for a
build's FetchContent declarations, the helper scripts installed, and where the build and its
reports live."""

from __future__ import annotations

import base64
import gzip
import shlex
from pathlib import Path
from agents.ecosystems.cfamily.cfamily_recipe import RECIPES
from agents.ecosystems.cfamily.c_builds import CBuild, PLAIN_PATH
from envpool.quoting import shell_word


BUILD_DIR = "/opt/build"


HELPER = "/usr/local/libexec/swemint/cmake_tests.py"


HELPER_FILES = ("cmake_tests.py", "doctest_runs.py", "catch2_runs.py", "boost_runs.py", "gtest_suites.py",
                "boost_suites.py", "ctest_reruns.py", "unbuilt_rules.py")
"""`recipes/` files installed beside each other in HELPER's folder (cmake_tests.py imports the
runs modules, gtest_suites.py and boost_suites.py, which import ctest_reruns.py; boost_suites.py
reads sources with gtest_suites.py's helpers; cmake_tests.py and meson_tests.py share
unbuilt_rules.py)."""


JUNIT = "/tmp/swemint-ctest.xml"


JOBS = 2


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


def cmake_configure(source: str = "/testbed", build_dir: str = BUILD_DIR, build_type: str | None = None,
                    flags=()) -> str:
    """The CMake configure command: ``cmake -S <source> -B <build_dir>``, then
    ``-DCMAKE_BUILD_TYPE=<build_type>`` when `build_type` is given (None: none, CMake's default),
    then `flags` (``-DX=ON``, ...; each once, in order). Every value is one quoted word
    (`envpool.quoting.shell_word`; ValueError for a NUL)."""
    words = ["cmake", "-S", shell_word(source), "-B", shell_word(build_dir)]
    if build_type is not None:
        words.append(f"-DCMAKE_BUILD_TYPE={shell_word(build_type)}")
    return " ".join(words + [shell_word(f) for f in dict.fromkeys(flags)])


def source_fetch(path: str, package: str) -> str:
    """The setup command filling `path` (a missing submodule) from Debian source `package`."""
    from agents.debindex import DEBIAN_NAME

    if not DEBIAN_NAME.fullmatch(package) or not PLAIN_PATH.fullmatch(path) or ".." in path:
        raise ValueError(f"not a Debian package name and a plain path: {package!r} {path!r}")
    return SOURCE_FETCH.format(package=package, path=path)


ARG_LIMIT = 131072
"""Bytes one argument of a command may hold on Linux (MAX_ARG_STRLEN): a setup step is one
`sh -c` argument (a Dockerfile RUN line too), so the helpers' command must stay below it."""


def install_helpers(names: tuple[str, ...] = HELPER_FILES) -> str:
    """The setup command writing the `recipes/` files `names` (default `HELPER_FILES`; the
    Meson route's: `c_meson.MESON_FILES`) verbatim into HELPER's folder, each gzip-compressed and
    base64-encoded (`echo <b64> | base64 -d | gzip -dc > <file>`; gzip is in every Debian base).
    Plain base64 of the helpers passed MAX_ARG_STRLEN once they reached ~100 KB (`exec
    /usr/bin/timeout: argument list too long`). Raises ValueError if the command would still
    exceed `ARG_LIMIT`."""
    folder = Path(HELPER).parent
    parts = [f"mkdir -p {folder}"]
    for name in names:
        data = base64.b64encode(gzip.compress((RECIPES / name).read_bytes(), mtime=0)).decode()
        parts.append(f"echo {data} | base64 -d | gzip -dc > {folder / name}")
    cmd = " && ".join(parts + ([f"chmod +x {HELPER}"] if names == HELPER_FILES else []))
    if len(cmd.encode()) >= ARG_LIMIT - 4096:  # room for the step's own wrapping
        raise ValueError(f"the C-family helpers' install command is {len(cmd)} bytes, over the "
                         f"{ARG_LIMIT}-byte argument limit: split it")
    return cmd


def _q(s: str) -> str:
    return shlex.quote(s)

