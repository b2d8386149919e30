"""The per-test limit of ``cargo test`` without Docker: the watchdog (``recipes/cargo_watchdog.py``)
runs a stand-in for a libtest binary the test writes (libtest's console lines, ``--list``,
``--exact``), ends it when no test finishes within the limit, and completes its output so the
``cargo_test`` parser grades every test; the Rust plan installs it as cargo's runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.ecosystems import rust
from agents.ecosystems.rust import cargo_limits
from envpool.testrun.polyglot.rust import parse_cargo_test
from envpool.testrun.status import TestStatus
from tests.agents.ecosystems.conftest import make_instance, make_tree

# A libtest stand-in: tests `a::passes`, `a::hangs` (sleeps for ever), `b::queued`; multi-threaded
# style (results only) or, with THREADS1 in its folder, single-threaded (`test x ... ` first).
FAKE = r'''#!/usr/bin/env python3
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "calls.log"), "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
tests = ["a::passes", "a::hangs", "b::queued"]
args = sys.argv[1:]
if "--list" in args:
    print("\n".join(t + ": test" for t in tests) + "\n\n3 tests, 0 benchmarks")
    sys.exit(0)
def out(s):
    sys.stdout.write(s); sys.stdout.flush()
if "--exact" in args:
    name = args[-1]
    out("\nrunning 1 test\n")
    if name == "a::hangs":
        out("test a::hangs ... " if os.path.exists(os.path.join(here, "THREADS1")) else "")
        time.sleep(3600)
    out("test %s ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out\n\n" % name)
    sys.exit(0)
if os.path.exists(os.path.join(here, "CUSTOM")):  # harness = false: its own output, no libtest header
    out("checking 3 cases\n")
    time.sleep(3)
    out("all cases pass\n")
    sys.exit(0)
out("\nrunning 3 tests\n")
if os.path.exists(os.path.join(here, "OK")):
    out("test a::passes ... ok\ntest a::hangs ... ok\ntest b::queued ... FAILED\n\nfailures:\n\n"
        "---- b::queued stdout ----\nboom\n\nfailures:\n    b::queued\n\n"
        "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n\n")
    sys.exit(101)
if os.path.exists(os.path.join(here, "WARN")):  # libtest's 60 s warning, multi-threaded
    out("test a::passes ... ok\ntest a::hangs ... test a::hangs has been running for over 60 seconds\n")
elif os.path.exists(os.path.join(here, "THREADS1")):
    out("test a::passes ... ok\ntest a::hangs ... ")
else:
    out("test a::passes ... ok\n")
time.sleep(3600)
'''
WATCHDOG = cargo_limits.SOURCE
HEADER = "     Running unittests src/lib.rs (target/debug/deps/calc-0123456789abcdef)\n"


@pytest.fixture
def fake(tmp_path):
    """(path of the libtest stand-in, its calls log)."""
    binary = tmp_path / "calc-test"
    binary.write_text(FAKE)
    binary.chmod(0o755)
    return binary, tmp_path / "calls.log"


def _watch(binary: Path, *args: str, limit: str = "5") -> subprocess.CompletedProcess:
    """The watchdog over `binary` with a per-test `limit` (s): 5 s, so that a stand-in's rerun that
    does finish (a Python start-up on a loaded host took over 1 s) is never the one cut short."""
    return subprocess.run([sys.executable, str(WATCHDOG), limit, str(binary), *args], capture_output=True,
                          text=True, timeout=120)


def test_a_hanging_test_is_failed_and_a_queued_one_runs_again_alone(fake):
    binary, calls = fake
    run = _watch(binary)
    assert run.returncode == 101
    rep = parse_cargo_test(HEADER + run.stdout)
    assert rep.tests_ran and parse_cargo_test.check(HEADER + run.stdout) == [], run.stdout
    assert rep.statuses == {"a::passes": TestStatus.PASSED, "a::hangs": TestStatus.FAILED,
                            "b::queued": TestStatus.PASSED}
    # neither unfinished test was known to be running: both ran again alone, with --exact
    assert calls.read_text().splitlines() == ["", "--list", "--exact a::hangs", "--exact b::queued"]


def test_single_threaded_libtest_names_the_running_test_which_is_not_run_again(fake):
    binary, calls = fake
    (binary.parent / "THREADS1").write_text("")
    run = _watch(binary, "--test-threads", "1", "a::")
    rep = parse_cargo_test(HEADER + run.stdout)
    assert parse_cargo_test.check(HEADER + run.stdout) == [] and rep.statuses == {
        "a::passes": TestStatus.PASSED, "a::hangs": TestStatus.FAILED, "b::queued": TestStatus.PASSED}
    # the filter `a::` is dropped for the rerun (its one test is named with --exact)
    assert calls.read_text().splitlines() == ["--test-threads 1 a::", "--test-threads 1 a:: --list",
                                              "--test-threads 1 --exact b::queued"]


def test_a_test_libtest_warned_about_is_failed_without_running_again(fake):
    binary, calls = fake
    (binary.parent / "WARN").write_text("")
    run = _watch(binary)
    rep = parse_cargo_test(HEADER + run.stdout)
    assert parse_cargo_test.check(HEADER + run.stdout) == [] and rep.statuses == {
        "a::passes": TestStatus.PASSED, "a::hangs": TestStatus.FAILED, "b::queued": TestStatus.PASSED}
    assert "over the limit: a::hangs;" in run.stdout
    assert calls.read_text().splitlines() == ["", "--list", "--exact b::queued"]


def test_a_binary_that_ends_passes_through_unchanged(fake):
    binary, calls = fake
    (binary.parent / "OK").write_text("")
    run = _watch(binary, "--nocapture", limit="30")
    assert run.returncode == 101 and "swemint" not in run.stdout
    assert run.stdout.startswith("\nrunning 3 tests\ntest a::passes ... ok\n")
    assert calls.read_text().splitlines() == ["--nocapture"]
    listing = _watch(binary, "--list")
    assert listing.returncode == 0 and listing.stdout.startswith("a::passes: test\n")


def test_a_custom_harness_runs_without_the_limit(fake):
    """A ``harness = false`` binary prints no libtest header: nothing says a test hangs."""
    binary, calls = fake
    (binary.parent / "CUSTOM").write_text("")
    run = _watch(binary, limit="1")
    assert run.returncode == 0 and run.stdout == "checking 3 cases\nall cases pass\n"


def test_terse_output_is_ended_without_names(fake):
    """``--quiet`` prints no per-test lines: any output is activity, a hang ends the binary."""
    binary, calls = fake
    run = _watch(binary, "--quiet")
    assert run.returncode == 101 and "no output of" in run.stdout
    assert "test result:" not in run.stdout and calls.read_text().splitlines() == ["--quiet"]


def test_the_rust_plan_runs_cargo_test_under_the_watchdog(tmp_path, image_store):
    crate = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2018"\n'
    tree = make_tree(tmp_path / "a", {"Cargo.toml": crate, "src/lib.rs": "pub fn f() {}\n"})
    inst = make_instance(tree, "rust", "2024-01-10 10:00:00", test_patch=(
        "diff --git a/tests/t.rs b/tests/t.rs\nnew file mode 100644\n--- /dev/null\n+++ b/tests/t.rs\n"
        "@@ -0,0 +1 @@\n+#[test] fn t() {}\n"))
    plan = rust.ECOSYSTEM.plan(tree, inst, ["tests/t.rs"], rust.ImageConfig())
    assert cargo_limits.install_command() in plan.setup_commands
    assert cargo_limits.runner_prefix() in plan.test_command
    assert "_RUNNER=python3 /usr/local/libexec/swemint/cargo_watchdog.py ${SWEMINT_TEST_TIMEOUT:-120}" \
        in plan.test_command
    assert plan.test_command.index("_RUNNER=") < plan.test_command.index("cargo test")
    assert plan.parser_options == {"no_fail_fast": True} and plan.test_command.count("cargo test --no-fail-fast") == \
        plan.test_command.count("cargo test")
    # a project's own runner is kept, without the limit
    own = make_tree(tmp_path / "b", {"Cargo.toml": crate, "src/lib.rs": "pub fn f() {}\n",
                                     ".cargo/config.toml": '[target.x86_64-unknown-linux-gnu]\nrunner = "qemu"\n'})
    plan = rust.ECOSYSTEM.plan(own, make_instance(own, "rust", "2024-01-10 10:00:00"), ["src/lib.rs"],
                               rust.ImageConfig())
    assert "_RUNNER=" not in plan.test_command and cargo_limits.install_command() not in plan.setup_commands
    assert any(".cargo/config.toml sets a cargo runner" in n for n in plan.notes)
