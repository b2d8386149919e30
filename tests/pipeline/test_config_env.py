"""`SWEMINT_SET`: overrides from the environment, between the config file and `--set`."""

from __future__ import annotations

import pytest

from pipeline.pipeline_config import load_config


def test_env_overrides_sit_between_the_file_and_set(tmp_path, monkeypatch):
    f = tmp_path / "c.yaml"
    f.write_text("mint:\n  llm_max_steps: 11\n")
    monkeypatch.setenv("SWEMINT_SET", "mint.llm_max_steps=22 'mint.run_id=a b'")
    cfg = load_config(f, ["mint.llm_max_steps=33"])
    assert cfg.mint.llm_max_steps == 33  # --set wins over the environment
    assert cfg.mint.run_id == "a b"  # shell quoting keeps a value with a space whole
    monkeypatch.setenv("SWEMINT_SET", "mint.llm_max_steps=22")
    assert load_config(f, []).mint.llm_max_steps == 22  # the environment wins over the file


def test_a_bad_env_override_names_the_variable(monkeypatch):
    monkeypatch.setenv("SWEMINT_SET", "mint.llm_max_steps")
    with pytest.raises(ValueError, match="SWEMINT_SET"):
        load_config(None, [])


def test_the_suite_runs_without_the_hosts_disk_guard():
    # tests/conftest.py sets it for every test and the commands they start
    assert load_config(None, []).mint.limits.min_free_disk_bytes == 0
