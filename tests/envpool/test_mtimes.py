"""`envpool.mtimes.whole_second_mtimes`: the bash the compile-once build runs before it builds,
run here by the host's bash and python3 on a folder the test writes."""

from __future__ import annotations

import os
import subprocess

from envpool.mtimes import whole_second_mtimes

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
    out = subprocess.run(["bash", "-c", whole_second_mtimes(str(root))], capture_output=True, text=True, check=True)
    assert os.stat(root / "src" / "lib.rs").st_mtime_ns == 1_700_000_000 * NS
    assert os.lstat(root / "link").st_mtime_ns == 1_650_000_000 * NS
    assert os.stat(root / "src").st_mtime_ns == 1_700_000_001 * NS
    assert os.stat(root).st_mtime_ns == 1_700_000_002 * NS
    assert os.stat(root / "old.txt").st_mtime_ns == 1_600_000_000 * NS
    assert os.stat(root / "old.txt").st_ctime_ns == before_old  # a whole time is not rewritten (no copy-up)
    assert "swemint: 4 modification time(s)" in out.stdout


def test_a_missing_root_changes_nothing_and_does_not_fail(tmp_path):
    out = subprocess.run(["bash", "-c", whole_second_mtimes(str(tmp_path / "absent"))], capture_output=True,
                         text=True)
    assert out.returncode == 0 and "swemint: 0 modification time(s)" in out.stdout
