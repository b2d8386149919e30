"""The cluster demo's command line (a fresh user's stumbles): `-h`/`--help` print the help, and
the rows' images, which name the demo's own registry, can be kept on this host's engine for
`swemint eval` after the teardown (`--keep-images`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]


def test_cluster_demo_help_prints_the_usage_and_exits_0():
    for flag in ("-h", "--help"):
        r = subprocess.run(["bash", str(ROOT / "scripts" / "cluster_demo.sh"), flag], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert "--registry" in r.stdout and "--remove-images" in r.stdout and "--keep-images" in r.stdout
        assert "unknown option" not in r.stderr
    r = subprocess.run(["bash", str(ROOT / "scripts" / "cluster_demo.sh"), "--bogus"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "unknown option --bogus" in r.stderr


def test_keep_images_pulls_the_verified_rows_images_with_the_demos_credentials(tmp_path, capsys):
    sys.path.insert(0, str(ROOT))
    from scripts.localcluster import keep_images

    (tmp_path / "dataset").mkdir()
    rows = [{"instance_id": "o__p-1", "outcome": "verified", "image": "127.0.0.1:5001/swemint/env@sha256:" + "a" * 64},
            {"instance_id": "o__p-2", "outcome": "verified", "image": "127.0.0.1:5001/swemint/env@sha256:" + "b" * 64},
            {"instance_id": "o__p-3", "outcome": "env_build_failed", "image": ""}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "dataset" / "all.parquet")
    pulled = []

    class Api:
        def pull(self, ref, auth_config=None):
            if ref.endswith("b" * 64):
                raise RuntimeError("manifest unknown")
            pulled.append((ref, auth_config))

    class Client:
        api = Api()

    class Cluster:
        with_registry, user, password = True, "swemint", "s3cret"

    assert keep_images(Cluster(), tmp_path, client=Client()) == 1
    assert pulled == [(rows[0]["image"], {"username": "swemint", "password": "s3cret"})]
    out = capsys.readouterr().out
    assert "not kept on this host's engine: " + rows[1]["image"] in out and "manifest unknown" in out
    assert "kept 1 of 2 verified rows' images" in out and "s3cret" not in out
