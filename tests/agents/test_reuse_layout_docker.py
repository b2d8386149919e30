"""A reused environment's /testbed becomes the new commit's tree writing only the files that differ
(issue 26, item 6): an unchanged source keeps its old time (older than the artifacts kept in an
ignored top-level folder), a changed or new one gets the current time, a removed one goes; the
result is one commit, clean, with the kept folder still ignored. When the update cannot run (a
tracked file where a kept ignored one is), the full layout runs instead."""

from __future__ import annotations

import io
import tarfile
import uuid

import pytest

from agents.dockerfile import layout_command
from envpool.docker_sandbox import DockerSandboxFactory
from envpool.sandbox import SandboxSpec

pytestmark = pytest.mark.docker

OLD = "cd /testbed && git init -q && printf 'target/\\n*.o\\n' > .gitignore && printf 'same\\n' > a.c && " \
      "printf 'old\\n' > b.c && printf 'gone\\n' > c.c && mkdir -p target sub && printf bin > target/artifact && " \
      "printf obj > sub/x.o && printf 'y\\n' > sub/y.c && git add -A && git -c user.name=t -c user.email=t@t commit -qm 'base old' && " \
      "touch -d '2001-01-01 00:00:00' a.c b.c c.c .gitignore target/artifact"


def _tar(files: dict[str, str]) -> bytes:
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(text.encode()), 1000000000
            tar.addfile(info, io.BytesIO(text.encode()))
    return bio.getvalue()


@pytest.fixture
def box(debian_image):
    factory = DockerSandboxFactory(run_id=f"test-layout-{uuid.uuid4().hex[:8]}")
    with factory.sandbox(SandboxSpec(image=debian_image, network="none", cpus=1, memory=512 * 1024**2)) as sb:
        yield sb


def _mtime(sb, path: str) -> int:
    r = sb.exec(f"stat -c %Y /testbed/{path}")
    return int(r.output.strip()) if r.ok else -1


def test_only_the_files_that_differ_are_written(box):
    assert box.exec(OLD).ok
    box.put_file("/tmp/new.tar", _tar({".gitignore": "target/\n*.o\n", "a.c": "same\n", "b.c": "new\n",
                                        "d.c": "added\n", "sub/y.c": "y\n"}))
    r = box.exec(layout_command("/tmp/new.tar", "new", replace=True, keep_ignored=True))
    assert r.ok, r.output
    assert "swemint: reuse: 3 path(s) differ" in r.output  # b.c changed, c.c removed, d.c added
    old = 978307200  # 2001-01-01
    assert _mtime(box, "a.c") == old and _mtime(box, ".gitignore") == old  # untouched
    assert _mtime(box, "b.c") > old and _mtime(box, "d.c") > old and _mtime(box, "c.c") == -1
    assert box.exec("cat /testbed/b.c").output == "new\n"
    assert _mtime(box, "target/artifact") == old  # the kept artifact, still older than b.c
    assert not box.exec("test -e /testbed/sub/x.o").ok  # nested ignored files go, as before
    st = box.exec("cd /testbed && git status --porcelain --ignored && git log --format=%s && grep -v '^#' .git/info/exclude")
    assert st.output.splitlines() == ["!! target/", "base new", "/target/"], st.output
    assert not box.exec("test -e /tmp/swemint-layout -o -e /tmp/new.tar").ok


def test_the_full_layout_runs_when_the_update_cannot(box):
    """No previous commit to compare with (its repository is gone): every file is written."""
    assert box.exec(OLD + " && rm -rf .git/refs/heads/* .git/HEAD && echo 'ref: refs/heads/none' > .git/HEAD").ok
    box.put_file("/tmp/new.tar", _tar({"a.c": "same\n", "e.c": "e\n"}))
    r = box.exec(layout_command("/tmp/new.tar", "new", replace=True, keep_ignored=True))
    assert r.ok, r.output
    assert "path(s) differ" not in r.output
    assert _mtime(box, "a.c") > 978307200  # every file of the tree touched
    st = box.exec("cd /testbed && ls && git log --format=%s")
    assert st.output.split() == ["a.c", "e.c", "target", "base", "new"], st.output  # target/ kept
