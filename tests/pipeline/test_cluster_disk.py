"""The local cluster demo refuses to start on a disk too small for its node engines, in one line."""

from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from scripts.localcluster import GIB, check_disk, disk_needed

Usage = namedtuple("Usage", "total used free")


def test_the_need_grows_with_nodes_slots_and_seeded_images():
    assert disk_needed(3, 1, 2 * GIB) == 7 * GIB
    assert disk_needed(3, 2, 2 * GIB) > disk_needed(3, 1, 2 * GIB)
    assert disk_needed(5, 1, 2 * GIB) > disk_needed(3, 1, 2 * GIB)
    assert disk_needed(3, 1, 0) == disk_needed(3, 1, 2 * GIB)  # unknown sizes: 2 GiB assumed


def test_low_disk_is_one_line_naming_the_folder_and_both_figures(tmp_path, monkeypatch):
    seen = []

    def usage(p):
        seen.append(Path(p))
        return Usage(100 * GIB, 95 * GIB, 5 * GIB)

    monkeypatch.setattr(shutil, "disk_usage", usage)
    with pytest.raises(SystemExit) as e:
        check_disk(tmp_path / "not" / "yet", 7 * GIB)
    msg = str(e.value)
    assert "low disk: 5.0 GiB free" in msg and "7.0 GiB" in msg and str(tmp_path) in msg
    assert "\n" not in msg
    assert seen == [tmp_path]  # the nearest existing folder is measured
    check_disk(tmp_path, 4 * GIB)  # enough: no error
