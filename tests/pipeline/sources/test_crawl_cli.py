"""`swemint crawl` through the CLI, against the fake GitHub."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from pipeline.cli import app
from tests.pipeline.sources.support import TOKEN, make_config


def test_crawl_command_writes_rows_and_rejects_and_never_prints_the_token(server, env, tmp_path):
    cfg = make_config(server)
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    r = CliRunner().invoke(app, ["crawl", "-c", str(path), "-w", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    assert "accepted 2" in r.output and "reject: not_merged: 2" in r.output
    assert TOKEN not in r.output
    rows = (tmp_path / "w" / "crawl" / "instances.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["instance_id"] for x in rows) == ["acme__widgets-10", "acme__widgets-11"]
    # a second, incremental run finds nothing new
    r = CliRunner().invoke(app, ["crawl", "-c", str(path), "-w", str(tmp_path / "w"), "--since-last"])
    assert r.exit_code == 0 and "accepted 0" in r.output


def test_crawl_command_rejects_an_unknown_config_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("githbu: {}\n")
    r = CliRunner().invoke(app, ["crawl", "-c", str(path), "-w", str(tmp_path / "w")])
    assert r.exit_code == 2 and "configuration error" in r.output
