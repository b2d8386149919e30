"""Compile once in Docker (issue 26, item 3): each side is built once, snapshotted, and every test
run started from the snapshot finds nothing to compile -- on a small cargo crate the test writes,
with a build script that prints no ``rerun-if`` line (cargo then fingerprints it by the newest
modification time of the package's files, compared for equality) and with one that does. The
snapshot (``docker commit``) keeps modification times in whole seconds (`envpool.mtimes`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.ecosystems import rust
from tests.agents.test_cost_docker import CARGO_LOCK, CARGO_TOML, mint  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TESTS = "#[test]\nfn zero() {\n    assert_eq!(calc::add(0, 0), 0);\n}\n"
NEW_TESTS = TESTS + "\n#[test]\nfn adds_two_numbers() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n"
BUILD_RS = {"bare": "fn main() {\n    println!(\"cargo:rustc-env=CALC_BUILT=1\");\n}\n",
            "rerun_if": "fn main() {\n    println!(\"cargo:rerun-if-changed=build.rs\");\n}\n"}


def sections(log: str) -> list[tuple[str, str]]:
    """(label, output) of each command of a run log (``$ [label] command`` ... ``[exit N, T s]``)."""
    parts = re.split(r"^\$ \[([^\]]+)\] ", log, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


@pytest.mark.parametrize("script", sorted(BUILD_RS))
def test_runs_from_a_cargo_snapshot_compile_nothing(mint, script):  # noqa: F811
    files = {"Cargo.toml": CARGO_TOML, "Cargo.lock": CARGO_LOCK, "build.rs": BUILD_RS[script],
             "src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n", "tests/basic.rs": TESTS}
    res = mint(rust.ECOSYSTEM, files, {"tests/basic.rs": NEW_TESTS},
               {"src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n"}, f"once-{script}", "Rust")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["adds_two_numbers"] and res.PASS_TO_PASS == ["zero"]
    steps = sections(Path(res.log_path).read_text(errors="replace"))
    builds = [(label, out) for label, out in steps if label in ("before:build", "after:build")]
    runs = [(label, out) for label, out in steps if re.fullmatch(r"(before|after)#\d+", label)]
    assert [label for label, _ in builds] == ["before:build", "after:build"]
    assert all("Compiling calc v0.1.0" in out for _, out in builds), builds  # the side's patch: built once
    assert len(runs) >= 2 and all("test result:" in out for _, out in runs), runs
    assert [label for label, out in runs if "Compiling calc" in out] == [], runs
