"""Rust ecosystem decisions without Docker: toolchain floor (Cargo.lock v4 with an old cargo ->
a newer toolchain), workspace/test-target selection and the id-carrying test command, repairs."""

from __future__ import annotations

from functools import partial
from datetime import date

import pytest

import envpool.toolchains.rust_image as rt
from agents.diagnosis import load_rules
from agents.ecosystems import rust
from envpool.errors import EnvBuildError
from envpool.testrun.registry import get_parser
from envpool.toolchains import version_key
from tests.agents.ecosystems.conftest import make_instance, make_tree

LOCK_V4 = 'version = 4\n\n[[package]]\nname = "demo"\nversion = "0.1.0"\n\n[[package]]\nname = "itoa"\n' \
          'version = "1.0.0"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\n'
LOCK_V3 = LOCK_V4.replace("version = 4", "version = 3")
CRATE = '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nitoa = "1"\n'

instance = partial(make_instance, language="rust", created_at="2022-05-11 18:30:12", instance_id="o__r-1", repo="o/r")


@pytest.fixture
def fake_image(image_store):
    """Rust toolchain images made in a fake image store (no Docker): the Debian pick for the
    request, as without a registry."""
    return image_store


# ------------------------------------------------------------------------------ toolchain

def test_lockfile_v4_with_old_cargo_gets_a_newer_toolchain(tmp_path, fake_image):
    """The case that must hold: rust-toolchain pins 1.63 (cargo 0.66 cannot read lock v4)."""
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V4, "rust-toolchain": "1.63\n",
                                "src/lib.rs": "pub fn f() {}\n"})
    project = rust.analyze(tree)
    assert project.lock_version == 4
    request, why = rust.toolchain_request(project, date(2021, 1, 1))
    assert version_key(request) >= (1, 78) and "Cargo.lock version 4" in why[0]
    plan = rust.ECOSYSTEM.plan(tree, instance(tree, created_at="2021-01-01 00:00:00"), ["src/lib.rs"], None)
    assert version_key(plan.toolchain.split()[1]) >= (1, 78)
    assert any("rust-toolchain pins 1.63; rust 1.78 used" in s for s in plan.substitutions)


def test_pick_debian_floor_newest_and_too_new():
    assert rt.pick_debian("1.70.0")[0].version == "1.78"
    assert rt.pick_debian("1.63")[0] == rt.DebianRust("1.63", "bookworm", ("rustc", "cargo"))
    assert rt.pick_debian(None)[0].version == "1.96"  # newest in a stable suite, not sid
    assert rt.pick_debian("1.97")[0].suite == "sid"
    pick, subs = rt.pick_debian("nightly-2022-01-01")
    assert pick.version == "1.96" and "RUSTC_BOOTSTRAP=1" in subs[0]
    with pytest.raises(EnvBuildError, match="newest Rust installable here"):
        rt.pick_debian("1.120")


def test_stable_rust_at_release_dates():
    assert rust.stable_rust_at(date(2021, 10, 21)) == "1.56"
    assert rust.stable_rust_at(date(2021, 10, 20)) == "1.55"
    assert rust.stable_rust_at(date(2024, 5, 2)) == "1.78"


def test_locked_project_gets_the_toolchain_of_its_era(tmp_path):
    """With a Cargo.lock the dependencies are the commit's: a 2024-09 lock gets 1.81 -> no
    newer than needed (newer compilers broke old locked crates such as `time`)."""
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": ""})
    request, why = rust.toolchain_request(rust.analyze(tree), date(2024, 9, 20))
    assert request == "1.81" and "commit date" in why[0]
    assert rt.pick_debian(request)[0].version == "1.85"


def test_a_commit_newer_than_every_installable_rust_gets_the_newest_not_no_plan(tmp_path):
    """clap-rs/clap-6498 (2026-11, rust-version 1.85): the stable Rust at the commit date (1.98)
    is a preference, not a floor; the newest installable one is used. A floor above every
    installable Rust still fails."""
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": ""})
    newest = rt.DEBIAN_RUST[-1].version
    request, why = rust.toolchain_request(rust.analyze(tree), date(2030, 1, 1))
    assert request == newest and "not installable here" in why[0]
    assert rt.pick_debian(request)[0].version == newest
    pinned = make_tree(tmp_path / "p", {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "rust-toolchain": "1.120\n",
                                        "src/lib.rs": ""})
    assert rust.toolchain_request(rust.analyze(pinned), date(2030, 1, 1))[0] == "1.120"


def test_no_lockfile_gets_newest_toolchain_and_msrv_fallback(tmp_path, fake_image):
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "src/lib.rs": ""})
    project = rust.analyze(tree)
    assert not project.has_lock and project.registry_deps
    assert rust.toolchain_request(project, date(2019, 1, 1))[0] is None
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["src/lib.rs"], None)
    assert plan.toolchain == "rust 1.96"
    assert plan.env["CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS"] == "fallback"


def _ahead(n: int) -> str:
    """The Rust version `n` minor releases past the newest installable here (`1.98.0` for 1 over 1.97)."""
    major, minor = version_key(rt.DEBIAN_RUST[-1].version)[:2]
    return f"{major}.{minor + n}.0"


def test_a_floor_a_few_releases_past_the_newest_gets_the_newest_noted():
    """The class: a repository pins its toolchain a release or two past the newest Rust installable
    here (astral-sh/uv's rust-toolchain.toml channel 1.98.0 when Debian sid has 1.97). Within
    PIN_SLACK minor releases the newest is the substitute, recorded; further ahead, or a new
    major version, there is still no plan."""
    newest = rt.DEBIAN_RUST[-1]
    for n in range(1, rt.PIN_SLACK + 1):
        pick, subs = rt.pick_debian(_ahead(n))
        assert pick == newest and rt.above_newest(_ahead(n)) == n
        assert f"rust {_ahead(n)} requested, newer than any Rust installable here: {newest.version} provided" \
            in subs[0] and "toolchain-bound" in subs[0]
    assert rt.above_newest(newest.version) == 0 and rt.above_newest("nightly") == 0
    with pytest.raises(EnvBuildError, match=f"newest Rust installable here is {newest.version}.*no substitute"):
        rt.pick_debian(_ahead(rt.PIN_SLACK + 1))
    with pytest.raises(EnvBuildError, match="no substitute"):
        rt.pick_debian("2.0")


PINNED = {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": "pub fn f() {}\n",
          "tests/basic.rs": "#[test]\nfn t() { demo::f(); }\n"}


def test_a_pin_one_release_past_the_newest_plans_on_the_newest_with_a_substitution(tmp_path, fake_image):
    """rust-toolchain.toml pins the release after the newest installable one: the plan is on the
    newest (Debian's cargo has no rustup and ignores the file: no override), the row records the
    substitution, and the plan's toolchain-bound note names the pin and the substitute (what a
    failure for the version says, `agents.planner.Planner.toolchain_bound`). The workspace's own
    rust-version is installable: cargo keeps checking it."""
    newest = rt.DEBIAN_RUST[-1].version
    files = {**PINNED, "rust-toolchain.toml": f'[toolchain]\nchannel = "{_ahead(1)}"\n',
             "Cargo.toml": CRATE.replace('edition = "2021"\n', f'edition = "2021"\nrust-version = "{newest}"\n')}
    tree = make_tree(tmp_path, files)
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/basic.rs"], None)
    assert plan.toolchain == f"rust {newest}"
    assert any(f"rust {_ahead(1)} requested, newer than any Rust installable here: {newest} provided" in s
               for s in plan.substitutions)
    assert any(f"rust-toolchain pins {_ahead(1)}; rust {newest} used" in s for s in plan.substitutions)
    bound = plan.state["toolchain_bound"]
    assert bound.startswith("toolchain-bound: rust-toolchain channel") and _ahead(1) in bound and \
        f"rust {newest} (the newest) was substituted" in bound
    assert "--ignore-rust-version" not in plan.test_command + " ".join(plan.setup_commands)
    # only the rules naming rustc's own version end the plan as toolchain-bound (and they exist)
    assert plan.state["toolchain_bound_rules"] == ["rust-requires-newer", "rust-unstable-feature"]
    assert set(plan.state["toolchain_bound_rules"]) <= {r.id for r in load_rules().rules}


def test_a_rust_version_past_the_newest_builds_the_substitute_ignoring_it(tmp_path, fake_image):
    """The workspace's rust-version is the release after the newest installable one: cargo would
    refuse the substitute ("rustc X is not supported by the following package"), so the
    substituted build's cargo commands (setup compile, test runs, compile-once, targeted reruns)
    pass --ignore-rust-version, and the substitution says so."""
    newest = rt.DEBIAN_RUST[-1].version
    files = {**PINNED, "Cargo.toml": CRATE.replace('edition = "2021"\n',
                                                   f'edition = "2021"\nrust-version = "{_ahead(2)}"\n')}
    tree = make_tree(tmp_path, files)
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/basic.rs"], None)
    assert plan.toolchain == f"rust {newest}"
    assert any(s.startswith("cargo --ignore-rust-version (the substituted build only): the workspace's "
                            f"rust-version {_ahead(2)} is above rust {newest}") for s in plan.substitutions)
    assert "rust-version" in plan.state["toolchain_bound"]
    compiles = [c for c in plan.setup_commands if "cargo test --no-run" in c]
    assert compiles and all("--ignore-rust-version" in c for c in compiles)
    assert "cargo test --no-fail-fast --ignore-rust-version" in plan.test_command
    assert "--ignore-rust-version" in rust.ECOSYSTEM.build_command(plan)
    assert "--ignore-rust-version" in rust.ECOSYSTEM.targeted_plan(plan, ["t"]).test_command


def test_an_installable_request_gets_no_toolchain_bound_note(tmp_path, fake_image):
    tree = make_tree(tmp_path, {**PINNED, "rust-toolchain": "1.63\n"})
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/basic.rs"], None)
    assert "toolchain_bound" not in plan.state and "--ignore-rust-version" not in plan.test_command


def test_a_pin_far_past_the_newest_is_still_no_plan(tmp_path, fake_image):
    tree = make_tree(tmp_path, {**PINNED, "rust-toolchain.toml":
                                f'[toolchain]\nchannel = "{_ahead(rt.PIN_SLACK + 1)}"\n'})
    with pytest.raises(EnvBuildError, match="newest Rust installable here.*no substitute"):
        rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/basic.rs"], None)


def test_nightly_channel_runs_stable_with_bootstrap(tmp_path, fake_image):
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": "",
                                "rust-toolchain.toml": '[toolchain]\nchannel = "nightly-2022-03-01"\n'})
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["src/lib.rs"], None)
    assert plan.env["RUSTC_BOOTSTRAP"] == "1"
    assert any("nightly" in s for s in plan.substitutions)


def test_git_dependencies_fail_early_naming_them(tmp_path, fake_image):
    lock = LOCK_V3 + '\n[[package]]\nname = "foo"\nversion = "0.1.0"\nsource = "git+https://github.com/a/foo#abc"\n'
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": lock, "src/lib.rs": ""})
    with pytest.raises(EnvBuildError, match="git repositories.*foo"):
        rust.ECOSYSTEM.plan(tree, instance(tree), ["src/lib.rs"], None)


# ------------------------------------------------------------------------------ test selection

RIPGREP_LIKE = {
    "Cargo.toml": '[package]\nname = "rg"\nversion = "0.1.0"\nautotests = false\nedition = "2018"\n\n'
                  '[[test]]\nname = "integration"\npath = "tests/tests.rs"\n\n[workspace]\nmembers = ["crates/*"]\n',
    "Cargo.lock": LOCK_V3,
    "src/main.rs": "fn main() {}\n",
    "tests/tests.rs": "#[macro_use]\nmod macros;\nmod regression;\n",
    "tests/macros.rs": "",
    "tests/regression.rs": "#[test]\nfn r1() {}\n",
    "crates/printer/Cargo.toml": '[package]\nname = "grep-printer"\nversion = "0.1.0"\n',
    "crates/printer/src/lib.rs": "mod util;\n",
    "crates/printer/src/util.rs": "",
}


def test_module_of_a_test_target_selects_that_target(tmp_path):
    tree = make_tree(tmp_path, RIPGREP_LIKE)
    project = rust.analyze(tree)
    assert {p.name for p in project.packages} == {"rg", "grep-printer"}
    sels = rust.select_tests(project, ["tests/regression.rs"], tree)
    assert [(s.package.name, s.flags) for s in sels] == [("rg", ["--test integration"])]


def test_unit_tests_in_a_member_select_its_lib(tmp_path):
    tree = make_tree(tmp_path, RIPGREP_LIKE)
    sels = rust.select_tests(rust.analyze(tree), ["crates/printer/src/util.rs"], tree)
    assert [(s.package.name, s.flags) for s in sels] == [("grep-printer", ["--lib"])]


def test_data_files_go_with_the_touched_test_source_only(tmp_path):
    files = {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": "", "src/bin/demo/main.rs": "",
             "tests/integration_tests.rs": "", "tests/snapshot_tests.rs": "", "tests/examples/a.txt": ""}
    tree = make_tree(tmp_path, files)
    project = rust.analyze(tree)
    both = rust.select_tests(project, ["tests/examples/b.txt", "tests/integration_tests.rs"], tree)
    assert both[0].flags == ["--test integration_tests"]
    data = rust.select_tests(project, ["tests/examples/b.txt"], tree)
    assert sorted(data[0].flags) == ["--test integration_tests", "--test snapshot_tests"]


def test_new_test_file_runs_but_is_not_compiled_in_setup(tmp_path, fake_image):
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": "",
                                "tests/old.rs": ""})
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/new.rs"], None)
    assert "cargo test --no-fail-fast -p demo --test new" in plan.test_command
    assert "CARGO_NET_OFFLINE=true" in plan.test_command
    assert "CARGO_NET_OFFLINE" not in plan.env  # setup needs the network
    no_run = [c for c in plan.setup_commands if "--no-run" in c]
    # the new file is not there yet: an existing test target stands in for it (lib + dev-deps)
    assert no_run and "--test new" not in no_run[0] and "--test old" in no_run[0]
    bare = make_tree(tmp_path / "b", {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": ""})
    plan = rust.ECOSYSTEM.plan(bare, instance(bare), ["tests/new.rs"], None)
    assert any("--no-run -p demo --tests" in c for c in plan.setup_commands)  # nothing to stand in
    assert plan.parser == "cargo_test"


def test_workspace_in_a_subfolder(tmp_path, fake_image):
    tree = make_tree(tmp_path, {"rust/Cargo.toml": CRATE, "rust/Cargo.lock": LOCK_V3, "rust/src/lib.rs": "",
                                "README.md": ""})
    assert rust.ECOSYSTEM.detect(tree, "Rust") == 8 and rust.ECOSYSTEM.detect(tree, None) == 3
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["rust/src/lib.rs"], None)
    assert plan.test_command.startswith("cd /testbed/rust && ")
    assert "-p demo --lib" in plan.test_command


def test_manifest_changes_in_the_patches_are_prefetched(tmp_path, fake_image):
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": ""})
    tp = ("diff --git a/Cargo.toml b/Cargo.toml\n--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -7 +7,2 @@\n"
          ' itoa = "1"\n+ryu = "1"\n')
    plan = rust.ECOSYSTEM.plan(tree, instance(tree, test_patch=tp), ["Cargo.toml"], None)
    assert any("swemint-prefetch" in c and "cargo fetch" in c for c in plan.setup_commands)


def test_detect_scores(tmp_path):
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "src/lib.rs": ""})
    assert rust.ECOSYSTEM.detect(tree, None) == 10 and rust.ECOSYSTEM.detect(tree, "Rust") == 10
    assert rust.ECOSYSTEM.detect(tree, "JavaScript") == 4
    assert rust.ECOSYSTEM.detect(make_tree(tmp_path / "js", {"package.json": "{}"}), "Rust") == 0


# ------------------------------------------------------------------------------ ids and failures

def test_ids_of_the_test_command_output_match_gold_form():
    """libtest ids without the binary, as gold lists them; a test target that does not compile
    before the patch leaves its tests absent (not passed)."""
    after = ("     Running tests/tests.rs (target/debug/deps/integration-abc)\n\nrunning 2 tests\n"
             "test regression::r2208 ... ok\ntest misc::simple ... ok\n\n"
             "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\n")
    before = ("   Compiling rg v0.1.0 (/testbed)\nerror[E0425]: cannot find function `x` in this scope\n"
              "error: could not compile `rg` (test \"integration\") due to 1 previous error\n")
    parse = get_parser("cargo_test")
    assert set(parse(after).statuses) == {"regression::r2208", "misc::simple"}
    rep = parse(before)
    assert not rep.statuses and not rep.tests_ran
    assert rep.collection_errors == ['rg (test "integration") [build failed]']


# ------------------------------------------------------------------------------ repairs

def _plan(tmp_path, fake_image_fixture=None):
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": ""})
    return rust.ECOSYSTEM.plan(tree, instance(tree), ["src/lib.rs"], None)


def test_repairs(tmp_path, fake_image):
    plan = _plan(tmp_path)
    eco = rust.ECOSYSTEM
    assert eco.repair(plan, "cargo test --no-run", f"Compiling x\n{rust.RESUME_MARK}\n", set()) == [": resume 1"]
    assert eco.repair(plan, "c", rust.RESUME_MARK, {": resume 1"}) == [": resume 2"]
    ssl = "error: failed to run custom build command for `openssl-sys v0.9.60`\nCould not find directory of OpenSSL"
    fix = eco.repair(plan, "c", ssl, set())
    assert fix and "libssl-dev" in fix[0]
    assert eco.repair(plan, "c", ssl, {fix[0]}) != fix  # never repeated
    dep = "   Compiling time v0.3.20\nerror[E0282]: type annotations needed\nerror: could not compile `time` (lib)\n"
    assert eco.repair(plan, "c", dep, set()) == ["cd /testbed && cargo update -p time@0.3.20"]
    own = "error: could not compile `demo` (lib)\n"
    assert eco.repair(plan, "c", own, set()) is None


def test_apt_repairs_do_not_fire_on_ordinary_words(tmp_path, fake_image):
    """`protocol`, a `Compiling openssl-sys` line or a test named after zlib are no reason to
    install packages; a real type error in a workspace crate has no repair."""
    plan = _plan(tmp_path)
    out = ("   Compiling openssl-sys v0.9.60\n   Compiling http-protocol v0.1.0\n"
           "error[E0308]: mismatched types\nerror: could not compile `demo` (lib)\n")
    assert rust.ECOSYSTEM.repair(plan, "c", out, set()) is None


def test_a_crate_name_with_a_semicolon_in_a_build_error_never_becomes_a_command(tmp_path, fake_image):
    """Issue 11: `x;cmd` in cargo's output used to land as a shell command in the repair (then the
    setup script, the Dockerfile and the experience memory)."""
    plan = _plan(tmp_path)
    evil = ("   Compiling x;touch /tmp/pwned v0.1.0\nerror[E0282]: type annotations needed\n"
            "error: could not compile `x;touch /tmp/pwned` (lib)\n")
    assert rust.ECOSYSTEM.repair(plan, "c", evil, set()) is None
    dollar = "   Compiling t$(id) v1.0.0\nerror: could not compile `t$(id)` (lib)\n"
    assert rust.ECOSYSTEM.repair(plan, "c", dollar, set()) is None
    bad_version = "   Compiling time v0.3.20;id\nerror: could not compile `time` (lib)\n"
    assert rust.ECOSYSTEM.repair(plan, "c", bad_version, set()) == ["cd /testbed && cargo update -p time"]


def test_names_from_the_manifest_are_quoted_in_every_command(tmp_path, fake_image):
    crate = CRATE.replace('name = "demo"', 'name = "demo"\n\n[[test]]\nname = "it$(id)"\npath = "tests/it.rs"', 1)
    tree = make_tree(tmp_path, {"my crate/Cargo.toml": crate, "my crate/Cargo.lock": LOCK_V3,
                                "my crate/src/lib.rs": "", "my crate/tests/it.rs": ""})
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["my crate/tests/it.rs"], None)
    for cmd in [*plan.setup_commands, plan.test_command]:
        assert "it$(id)" not in cmd.replace("'it$(id)'", "") and "/testbed/my crate " not in cmd, cmd
    assert plan.test_command.startswith("cd '/testbed/my crate' && ")
    assert "--test 'it$(id)'" in plan.test_command


# ------------------------------------------------------------------ CI features and cfg gates

FEATURED = CRATE + '\n[features]\nfull = ["net"]\nnet = []\nextra = []\n\n[[test]]\nname = "heavy"\npath = "tests/heavy.rs"\n' \
                   'required-features = ["extra"]\n'
CI_YML = ("on: push\nenv:\n  RUSTFLAGS: -Dwarnings\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
          "      - run: cargo test --features full\n"
          "      - run: cargo +nightly nextest run -p demo --all-features\n"
          "      - run: cargo test -p other --features other-only\n"
          "      - name: unstable\n        run: cargo test --features 'net,nonexistent'\n"
          "        env:\n          RUSTFLAGS: --cfg demo_unstable -Dwarnings\n")
GATED_RS = ('#![warn(rust_2018_idioms)]\n#![cfg(all(feature = "net", demo_unstable, not(feature = "extra"), '
            'not(miri_only), unix, target_has_atomic = "64"))]\n\n#[test]\nfn gated() {}\n')


def test_file_gate_reads_features_and_cfgs_outside_not():
    gate = rust.file_gate(GATED_RS)
    assert gate.features == ["net"] and gate.cfgs == ["demo_unstable"]
    assert rust.file_gate('#[cfg(feature = "x")]\nmod m;\n') == rust.Gate()  # an item's cfg is no file gate
    assert rust.file_gate('#![cfg(feature = "a b; rm -rf /")]\n').features == []  # not a feature name


def test_ci_features_and_cfgs_are_read_from_the_workflows(tmp_path):
    tree = make_tree(tmp_path, {"Cargo.toml": FEATURED, "src/lib.rs": "", ".github/workflows/ci.yml": CI_YML})
    ci = rust.cargo_ci(tree)
    assert ci.features == {"": ["full", "net", "nonexistent"], "other": ["other-only"]}
    assert ci.all_features and ci.cfgs == ["demo_unstable"]


def test_a_gated_new_test_file_gets_the_features_and_cfg_the_ci_enables(tmp_path, fake_image):
    """The tokio case: a new tests/x.rs behind ``#![cfg(feature = "net")]`` ran 0 tests under a
    plain ``cargo test --test x``. Now the test command and the setup compile carry the CI's
    ``--features full`` plus the gate's `net` (`nonexistent`, and `other-only` of another
    package, are dropped), and the gate's ``demo_unstable`` (set by the CI's RUSTFLAGS) goes
    into cargo's rustflags."""
    tree = make_tree(tmp_path, {"Cargo.toml": FEATURED, "Cargo.lock": LOCK_V3, "src/lib.rs": "",
                                ".github/workflows/ci.yml": CI_YML, "tests/heavy.rs": ""})
    tp = ("diff --git a/tests/x.rs b/tests/x.rs\nnew file mode 100644\n--- /dev/null\n+++ b/tests/x.rs\n"
          f"@@ -0,0 +1,{GATED_RS.count(chr(10))} @@\n" + "".join("+" + ln + "\n" for ln in GATED_RS.splitlines()))
    plan = rust.ECOSYSTEM.plan(tree, instance(tree, test_patch=tp), ["tests/x.rs"], None)
    assert "cargo test --no-fail-fast -p demo --features full,net --test x" in plan.test_command
    assert any("--no-run -p demo --features full,net" in c for c in plan.setup_commands)
    assert '"--cap-lints", "warn", "--cfg", "demo_unstable"' in plan.setup_commands[0]
    assert "tests/x.rs is gated by feature net" in plan.notes
    # a [[test]] with required-features gets them; no CI, no gate: no --features at all
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/heavy.rs"], None)
    assert "-p demo --features full,net,extra --test heavy" in plan.test_command
    bare = make_tree(tmp_path / "b", {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": ""})
    plan = rust.ECOSYSTEM.plan(bare, instance(bare), ["src/lib.rs"], None)
    assert "--features" not in plan.test_command and '["--cap-lints", "warn"]' in plan.setup_commands[0]


def test_a_members_tests_get_the_root_packages_binaries_built(tmp_path, fake_image):
    """nushell-13605: nu-command's tests exec target/debug/nu (its test support), which cargo
    builds only for the root package's own tests: setup builds the root's bins, and each test run
    rebuilds them first (the after side's patch must reach the binary). Testing the root package
    itself needs nothing extra."""
    tree = make_tree(tmp_path, RIPGREP_LIKE)
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["crates/printer/src/util.rs"], None)
    assert any(c.endswith("cargo build -p rg --bins") or "cargo build -p rg --bins;" in c for c in plan.setup_commands)
    assert plan.test_command.index("cargo build -p rg --bins") < plan.test_command.index("cargo test")
    root = rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/regression.rs"], None)
    assert "cargo build -p rg" not in root.test_command and not any("cargo build" in c for c in root.setup_commands)


# ------------------------------------------------------------------------------ targeted reruns

def test_a_targeted_rerun_runs_the_same_cargo_tests_with_exact_name_filters(tmp_path, fake_image):
    """`targeted_plan`: the plan's cargo runs with libtest's ``--exact`` filters (each id one
    quoted word, after ``--`` or after the binary arguments already there), same parser; one id
    on a Rust before 1.52 (one filter), None for several there and for another test command."""
    tree = make_tree(tmp_path, {"Cargo.toml": CRATE, "Cargo.lock": LOCK_V3, "src/lib.rs": "", "tests/it.rs": ""})
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["tests/it.rs", "src/lib.rs"], None)
    ids = ["tests::adds", "regression::r2208", "src/lib.rs - add (line 5)", "x'; rm -rf /; '"]
    t = rust.ECOSYSTEM.targeted_plan(plan.model_copy(update={"toolchain": "rust 1.63.0"}), ids)
    assert t is not None and t.parser == "cargo_test" and t.parser_options == plan.parser_options
    head, _, run = t.test_command.rpartition("CARGO_NET_OFFLINE=true cargo test --no-fail-fast")
    assert plan.test_command.startswith(head) and plan.test_command.endswith(run.partition(" -- ")[0] + " 2>&1")
    assert run.endswith(" -- --exact tests::adds regression::r2208 'src/lib.rs - add (line 5)' "
                        "'x'\"'\"'; rm -rf /; '\"'\"'' 2>&1")
    old = plan.model_copy(update={"toolchain": "rust 1.48.0"})
    assert rust.ECOSYSTEM.targeted_plan(old, ids[:2]) is None
    assert rust.ECOSYSTEM.targeted_plan(old, ids[:1]).test_command.endswith(" -- --exact tests::adds 2>&1")
    args = rust.ECOSYSTEM.plan(tree, instance(tree), ["src/lib.rs"], None,
                               rust.PlanRequest(test_args=["--", "--test-threads=1"]))
    one = rust.ECOSYSTEM.targeted_plan(args.model_copy(update={"toolchain": "rust 1.70.0"}), ids[:1])
    assert one.test_command.count(" -- ") == 1 and one.test_command.endswith(" --exact tests::adds 2>&1")
    assert rust.ECOSYSTEM.targeted_plan(plan.model_copy(update={"test_command": "cargo nextest run"}), ids) is None
