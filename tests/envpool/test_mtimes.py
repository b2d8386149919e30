"""`envpool.mtimes.snapshot_ready`: the bash the compile-once build runs before it builds,
run here by the host's bash, python3 and git on folders the test writes."""

from __future__ import annotations

import os
import subprocess
import time

from envpool.mtimes import snapshot_ready

NS = 1_000_000_000


def test_fractional_times_are_truncated_and_whole_ones_left(tmp_path):
    root = tmp_path / "it's a tree"  # a quote in the path: the root is one shell word
    (root / "src").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text("x")
    (root / "old.txt").write_text("y")
    (root / "link").symlink_to("missing-target")
    os.utime(root / "src" / "lib.rs", ns=(1_700_000_000 * NS + 817_046_017, 1_700_000_000 * NS + 817_046_017))
    os.utime(root / "old.txt", ns=(1_600_000_000 * NS, 1_600_000_000 * NS))
    os.utime(root / "link", ns=(5 * NS + 3, 1_650_000_000 * NS + 999_999_999), follow_symlinks=False)
    os.utime(root / "src", ns=(0, 1_700_000_001 * NS + 1))
    os.utime(root, ns=(0, 1_700_000_002 * NS + 5))
    before_old = os.stat(root / "old.txt").st_ctime_ns
    out = subprocess.run(["bash", "-c", snapshot_ready(str(root))], capture_output=True, text=True, check=True)
    assert os.stat(root / "src" / "lib.rs").st_mtime_ns == 1_700_000_000 * NS
    assert os.lstat(root / "link").st_mtime_ns == 1_650_000_000 * NS
    assert os.stat(root / "src").st_mtime_ns == 1_700_000_001 * NS
    assert os.stat(root).st_mtime_ns == 1_700_000_002 * NS
    assert os.stat(root / "old.txt").st_mtime_ns == 1_600_000_000 * NS
    assert os.stat(root / "old.txt").st_ctime_ns == before_old  # a whole time is not rewritten (no copy-up)
    assert "swemint: 4 modification time(s)" in out.stdout


def test_a_missing_root_changes_nothing_and_does_not_fail(tmp_path):
    out = subprocess.run(["bash", "-c", snapshot_ready(str(tmp_path / "absent"))], capture_output=True,
                         text=True)
    assert out.returncode == 0 and "swemint: 0 modification time(s)" in out.stdout


def test_a_git_work_tree_gets_a_fresh_index_in_a_later_second(tmp_path):
    """A later `git status` (a build's version step) finds nothing to refresh: it leaves the
    index as it is, so nothing that depends on the index looks changed."""
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True).stdout

    (tmp_path / "a.txt").write_text("a")
    git("init", "-q")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    (tmp_path / "a.txt").write_text("b")  # a patched file: new stat data, truncated below
    index = tmp_path / ".git" / "index"
    began = time.time()
    out = subprocess.run(["bash", "-c", snapshot_ready(str(tmp_path))], capture_output=True, text=True, check=True)
    assert "swemint: git index refreshed" in out.stdout
    after = os.stat(index).st_mtime_ns
    assert after // NS > os.stat(tmp_path / "a.txt").st_mtime_ns // NS  # no racily clean entry
    assert after / NS >= int(began) + 1
    assert git("status", "--porcelain") == " M a.txt\n"
    assert os.stat(index).st_mtime_ns == after  # git status did not rewrite the index
