"""The FetchContent repair for real, on this host's cmake (no Docker): a CMake project the test
writes fetches its library from a git host that cannot be reached (``git.invalid``, RFC 6761:
never resolves); a local stand-in for Debian's archive (a ``file://`` mirror with
``dists/<suite>/main/source/Sources.xz`` naming that host as the package's Homepage, and its
``.orig.tar.gz`` in the pool) answers the lookup; the repair's commands run in bash, download
(apt-helper, SHA-256 checked), unpack and configure again with FETCHCONTENT_SOURCE_DIR, after
which the retried configure, the build and ctest pass."""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from agents.ecosystems.cfamily import fetchcontent
from agents.ecosystems.cfamily.debsources import DebianSources, SourcesConfig
from agents.ecosystems.cfamily.fetchcontent import FetchContentConfig, declarations
from tests.fakes.debian_archive import paragraph, sources_xz

pytestmark = pytest.mark.slow

PROJECT = """cmake_minimum_required(VERSION 3.14)
project(calc C)
include(FetchContent)
FetchContent_Declare(MathLib
  GIT_REPOSITORY https://git.invalid/acme/mathlib.git
  GIT_TAG 0123456789abcdef0123456789abcdef01234567 # v1.2.0
)
FetchContent_MakeAvailable(MathLib)
enable_testing()
add_executable(calc_test calc_test.c)
target_link_libraries(calc_test mathlib)
add_test(NAME calc_add COMMAND calc_test)
"""
LIBRARY = {
    "CMakeLists.txt": "add_library(mathlib mathlib.c)\ntarget_include_directories(mathlib PUBLIC .)\n",
    "mathlib.h": "int math_add(int a, int b);\n",
    "mathlib.c": '#include "mathlib.h"\nint math_add(int a, int b) { return a + b; }\n',
}


def _tarball(version: str, files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"mathlib-{version}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _mirror(root: Path) -> None:
    """A Debian archive stand-in on disk: mathlib 1.1.0 in bookworm, 1.3.0 in trixie (Homepage:
    the unreachable repository), each with its upstream tarball in the pool."""
    pool = root / "pool/main/m/mathlib"
    pool.mkdir(parents=True)
    for suite, version in (("bookworm", "1.1.0"), ("trixie", "1.3.0")):
        name = f"mathlib_{version}.orig.tar.gz"
        data = _tarball(version, LIBRARY)
        (pool / name).write_bytes(data)
        index = root / f"dists/{suite}/main/source"
        index.mkdir(parents=True)
        entry = paragraph("mathlib", f"{version}-1", [(name, hashlib.sha256(data).hexdigest())],
                          "https://git.invalid/acme/mathlib")
        (index / "Sources.xz").write_bytes(sources_xz([entry]))


def _run(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_unreachable_fetch_is_provided_from_the_debian_source_and_the_build_passes(tmp_path):
    if not (shutil.which("cmake") and shutil.which("ctest") and shutil.which("cc")
            and Path("/usr/lib/apt/apt-helper").exists() and shutil.which("git")):
        pytest.skip("cmake, ctest, a C compiler, git and apt's apt-helper are needed on the host")
    src, build, mirror = tmp_path / "src", tmp_path / "build", tmp_path / "mirror"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(PROJECT)
    (src / "calc_test.c").write_text('#include "mathlib.h"\nint main(void) { return math_add(2, 3) != 5; }\n')
    _mirror(mirror)
    configure = f"cmake -S {src} -B {build}"
    first = _run(configure, tmp_path)
    assert first.returncode != 0
    output = first.stdout + first.stderr
    assert fetchcontent.failed_fetches(output)[0].url == "https://git.invalid/acme/mathlib.git"

    state = {"declarations": [d.model_dump() for d in declarations({"CMakeLists.txt": PROJECT})]}
    sources = DebianSources(SourcesConfig(suites=["bookworm", "trixie"], cache_dir=str(tmp_path / "cache")),
                            f"file://{mirror}")
    commands, notes = fetchcontent.repair_commands(state, configure, output, sources,
                                                   FetchContentConfig(root=str(tmp_path / "fc")))
    # found through the Sources Homepage (no data entry names git.invalid); 1.2.0 asked -> 1.3.0
    assert "mathlib 1.3.0-1 (trixie" in notes[0] and "Homepage/Vcs of mathlib" in notes[0]
    for cmd in commands:
        r = _run(cmd, tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "fc/mathlib/mathlib.c").is_file()  # the tarball's top folder stripped
    assert _run(configure, tmp_path).returncode == 0  # the retried step: the cache keeps the source dir
    assert "FETCHCONTENT_SOURCE_DIR_MATHLIB:PATH=" + str(tmp_path / "fc/mathlib") in \
        (build / "CMakeCache.txt").read_text()
    assert _run(f"cmake --build {build}", tmp_path).returncode == 0
    test = _run(f"ctest --test-dir {build} --output-on-failure", tmp_path)
    assert test.returncode == 0 and "100% tests passed" in test.stdout

    # a tarball that does not match the index's SHA-256 is refused
    (mirror / "pool/main/m/mathlib/mathlib_1.3.0.orig.tar.gz").write_bytes(_tarball("1.3.0", {"x": "evil"}))
    r = _run(commands[0], tmp_path)
    assert r.returncode != 0 and "Hash Sum mismatch" in r.stdout + r.stderr
