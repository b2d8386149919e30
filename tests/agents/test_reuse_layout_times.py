"""A reused environment's tree (`agents.dockerfile.layout_command`, issue 26's reuse) gives every
file it writes one time: a tracked generated file and its source that both changed between the
two commits (the class: bison's `parser.c` committed beside `parser.y`, generated sources in
general) stay equal for make, so the setup's build does not regenerate the committed output --
which would then no longer take the row's patch. Run on this host's bash, git, tar and make (the
same shell the Dockerfile runs), in a folder the test writes; both the changed-files update and
the full layout."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile

import pytest

from agents.dockerfile import layout_command

pytestmark = pytest.mark.skipif(not all(shutil.which(t) for t in ("git", "tar", "make", "bash")),
                                reason="needs git, tar, make and bash")

MAKEFILE = "all: gen.o\ngen.c: gen.y\n\tcp gen.y gen.c\ngen.o: gen.c\n\tcp gen.c gen.o\n"


def _old_tree(w, commit: bool = True) -> None:
    w.mkdir()
    (w / ".gitignore").write_text("*.o\n")
    (w / "Makefile").write_text(MAKEFILE)
    (w / "gen.y").write_text("grammar 1\n")
    (w / "gen.c").write_text("grammar 1 (bison 3.0)\n")  # committed output, another generator's
    if commit:
        subprocess.run("git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm 'base old'",
                       shell=True, cwd=w, check=True)
    subprocess.run(["make", "-s"], cwd=w, check=True, capture_output=True)
    for f in ("gen.y", "gen.c", "Makefile", ".gitignore", "gen.o"):
        os.utime(w / f, (978307200, 978307200))  # 2001: the image's build


MANY = 2000  # changed files besides: writing them spans many of the kernel's file-time ticks


def _new_tar(path) -> None:
    with tarfile.open(path, "w") as tar:
        for name, text in ((".gitignore", "*.o\n"), ("Makefile", MAKEFILE), ("gen.y", "grammar 2\n"),
                           ("gen.c", "grammar 2 (bison 3.0)\n"),
                           *((f"src/f{i:04d}.c", f"int f{i};\n") for i in range(MANY))):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(text.encode()), 1000000000
            tar.addfile(info, io.BytesIO(text.encode()))


@pytest.mark.parametrize("update", [True, False], ids=["changed-files", "full"])
def test_a_generated_file_and_its_source_that_both_changed_stay_equal_for_make(tmp_path, update):
    w = tmp_path / "testbed"
    _old_tree(w, commit=update)  # no commit: the update cannot run, the full layout does
    _new_tar(tmp_path / "new.tar")
    r = subprocess.run(["bash", "-c", layout_command(str(tmp_path / "new.tar"), "new", replace=True,
                                                     keep_ignored=True, workdir=str(w))],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("path(s) differ" in r.stdout) is update
    y, c = (w / "gen.y").stat().st_mtime_ns, (w / "gen.c").stat().st_mtime_ns
    assert y == c and y > 978307200 * 10**9
    assert (w / "gen.c").read_text() == "grammar 2 (bison 3.0)\n"
    times = {p.stat().st_mtime_ns for p in (w / "src").iterdir()}
    assert times == {y}  # one time for every file written, whatever the order and the time it took
    # make takes the committed gen.c as up to date (equal to gen.y) and rebuilds only what uses it
    assert subprocess.run(["make", "-q", "gen.c"], cwd=w).returncode == 0
    assert subprocess.run(["make", "-q", "gen.o"], cwd=w).returncode == 1  # the kept artifact is older
