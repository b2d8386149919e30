"""Git dependencies of cargo projects without Docker: detection, the crates.io stand-in choice
(`choose_release`, a pure function), the manifest rewrites and the plan routes (drop an
untested workspace member; rewrite to a crates.io release; a fork-only crate stays env_failed)."""

from __future__ import annotations

import shlex
import tomllib
from datetime import datetime, timezone

import pytest

from agents.ecosystems.rust import cargo_git as cg
from agents.ecosystems import rust
from envpool.errors import EnvBuildError
from tests.agents.ecosystems.conftest import make_tree
from tests.agents.ecosystems.test_rust import fake_image, instance  # noqa: F401 -- fixture

UTC = timezone.utc


def rel(v, day=None, yanked=False, features=()):
    return cg.Release(v, datetime(2023, 1, day or 1, tzinfo=UTC) if day else None, yanked, frozenset(features))


RELS = [rel("0.0.0", 1), rel("0.1.0", 5, features=["full"]), rel("0.1.1", 9, features=["full"]),
        rel("0.1.2", 20, yanked=True, features=["full"]), rel("0.2.0-rc.1", 21, features=["full"]),
        rel("0.2.0", 25, features=["full"])]


# ------------------------------------------------------------------------------ choice

def test_locked_version_on_crates_io_is_taken():
    assert cg.choose_release(RELS, "0.1.1", None)[0] == "0.1.1"


def test_locked_version_missing_takes_nearest_newer_compatible_not_yanked():
    v, why = cg.choose_release([*RELS, rel("0.1.3", 22, features=["full"])], "0.1.2", None)
    assert v == "0.1.3" and "nearest newer compatible" in why  # 0.1.2 is yanked


def test_locked_version_without_compatible_release_falls_back_to_the_date():
    v, why = cg.choose_release(RELS, "0.3.1", datetime(2023, 1, 10, tzinfo=UTC))
    assert v == "0.1.1" and "before the commit date" in why


def test_date_rule_needs_the_features_and_skips_prereleases():
    assert cg.choose_release(RELS, None, datetime(2023, 1, 3))[0] == "0.0.0"
    # 0.0.0 lacks `full`: the first release after the date that has it
    v, why = cg.choose_release(RELS, None, datetime(2023, 1, 3), ["full"])
    assert v == "0.1.0" and "first after" in why
    assert cg.choose_release(RELS, None, datetime(2023, 1, 22), ["full"])[0] == "0.1.1"


def test_no_release_with_the_features_is_none():
    assert cg.choose_release(RELS, None, datetime(2023, 1, 3), ["nope"]) is None
    assert cg.choose_release([], "1.0.0", None) is None


def test_caret_compatibility():
    assert cg._compatible((1, 2, 0, ""), (1, 9, 0, "")) and not cg._compatible((1, 0, 0, ""), (2, 0, 0, ""))
    assert not cg._compatible((0, 1, 0, ""), (0, 2, 0, "")) and not cg._compatible((0, 0, 1, ""), (0, 0, 2, ""))


# --------------------------------------------------------------------------- index

def test_index_path_and_parse():
    assert [cg.index_path(n) for n in ("a", "ab", "abc", "Hyper-Util")] == ["1/a", "2/ab", "3/a/abc", "hy/pe/hyper-util"]
    text = ('{"name":"x","vers":"0.1.0","deps":[{"name":"serde","optional":true}],"features":{"full":[]},'
            '"yanked":false,"pubtime":"2023-11-15T20:00:00Z"}\nnot json\n{"name":"x","vers":"0.2.0","yanked":true}\n')
    a, b = cg.parse_index(text)
    assert a.features == {"full", "serde"} and a.published == datetime(2023, 11, 15, 20, tzinfo=UTC)
    assert b.yanked and b.published is None


# ------------------------------------------------------------------------ detection

MEMBER = ('[package]\nname = "ex"\nversion = "0.1.0"\n\n[dependencies]\n'
          'hyper-util = { git = "https://github.com/hyperium/hyper-util", rev = "f898015", features = ["full"] }\n'
          'tokio = "1"\n\n[dev-dependencies.dep2]\ngit = "https://example.invalid/dep2.git"\nbranch = "main"\n'
          'package = "real-dep2"\n')


def test_git_deps_detects_inline_and_section_with_lock_version():
    lock = {"package": [{"name": "real-dep2", "version": "1.4.0",
                         "source": "git+https://example.invalid/dep2?branch=main#abc123"}]}
    deps = cg.git_deps({"ex/Cargo.toml": ("ex", tomllib.loads(MEMBER))}, lock)
    assert [(d.key, d.crate, d.features, d.locked) for d in deps] == [
        ("hyper-util", "hyper-util", ["full"], None), ("dep2", "real-dep2", [], "1.4.0")]
    assert cg.lock_only(lock, deps) == []
    assert cg.lock_only({"package": [{"name": "z", "source": "git+https://h/z#1"}]}, deps) == ["z (git+https://h/z)"]


def test_rewrite_dep_inline_and_section():
    out = cg.rewrite_dep(MEMBER, "hyper-util", "https://github.com/hyperium/hyper-util", "0.1.0")
    out = cg.rewrite_dep(out, "dep2", "https://example.invalid/dep2.git", "1.4.0")
    m = tomllib.loads(out)
    assert m["dependencies"]["hyper-util"] == {"version": "=0.1.0", "features": ["full"]}
    assert m["dev-dependencies"]["dep2"] == {"version": "=1.4.0", "package": "real-dep2"}
    assert m["dependencies"]["tokio"] == "1"


def test_exclude_member_adds_to_an_existing_or_new_list():
    ws = '[workspace]\nmembers = ["a", "examples/*"]\nexclude = ["examples/old"]\n'
    assert tomllib.loads(cg.exclude_member(ws, "examples/x"))["workspace"]["exclude"] == ["examples/x", "examples/old"]
    ws2 = '[workspace]\nmembers = ["a", "examples/*"]\n\n[workspace.dependencies]\nx = "1"\n'
    assert tomllib.loads(cg.exclude_member(ws2, "examples/x"))["workspace"]["exclude"] == ["examples/x"]


# ------------------------------------------------------------------------------ plan

WS = '[workspace]\nmembers = ["lib", "examples/*"]\n'
LIB = '[package]\nname = "lib"\nversion = "0.1.0"\nedition = "2021"\n'


def _files(lib_manifest=LIB):
    return {"Cargo.toml": WS, "lib/Cargo.toml": lib_manifest, "lib/src/lib.rs": "pub fn f() {}\n",
            "lib/tests/t.rs": "#[test]\nfn t() {}\n", "examples/ex/Cargo.toml": MEMBER.replace(
                "[dev-dependencies.dep2]\ngit = \"https://example.invalid/dep2.git\"\nbranch = \"main\"\npackage = \"real-dep2\"\n", ""),
            "examples/ex/src/main.rs": "fn main() {}\n"}


def test_untested_member_with_a_git_dependency_is_excluded(tmp_path, fake_image):  # noqa: F811
    tree = make_tree(tmp_path, _files())
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["lib/tests/t.rs"], None)
    assert any("examples/ex excluded from the workspace" in s for s in plan.substitutions)
    write = next(c for c in plan.setup_commands if c.startswith("echo "))
    assert write.endswith("> /testbed/Cargo.toml") and plan.setup_commands.index(write) < plan.setup_commands.index(
        "cd /testbed && cargo fetch")


def test_tested_member_gets_the_crates_io_release(tmp_path, fake_image, monkeypatch):  # noqa: F811
    lib = LIB + '\n[dependencies]\nitoa = { git = "https://github.com/dtolnay/itoa", tag = "1.0.1" }\n'
    lock = ('version = 3\n\n[[package]]\nname = "itoa"\nversion = "1.0.1"\n'
            'source = "git+https://github.com/dtolnay/itoa?tag=1.0.1#0123"\n')
    files = {**_files(lib), "Cargo.lock": lock}
    monkeypatch.setattr(cg, "crate_releases", lambda n: (rel("1.0.0", 1), rel("1.0.1", 2)))
    tree = make_tree(tmp_path, files)
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["lib/tests/t.rs"], None)
    assert any("itoa (https://github.com/dtolnay/itoa) -> crates.io itoa =1.0.1: the version Cargo.lock records"
               in s for s in plan.substitutions)
    cmd = next(c for c in plan.setup_commands if c.endswith("lib/Cargo.toml"))
    b64 = shlex.split(cmd)[1]
    import base64
    assert tomllib.loads(base64.b64decode(b64).decode())["dependencies"]["itoa"] == {"version": "=1.0.1"}


def test_fork_only_crate_stays_env_failed(tmp_path, fake_image, monkeypatch):  # noqa: F811
    lib = LIB + '\n[dependencies]\nmy-fork = { git = "https://github.com/me/my-fork" }\n'
    monkeypatch.setattr(cg, "crate_releases", lambda n: ())
    tree = make_tree(tmp_path, _files(lib))
    with pytest.raises(EnvBuildError, match=r"my-fork \(https://github.com/me/my-fork\) has no release on crates.io"):
        rust.ECOSYSTEM.plan(tree, instance(tree), ["lib/tests/t.rs"], None)


def test_unreadable_index_is_a_stated_env_failure(tmp_path, fake_image, monkeypatch):  # noqa: F811
    lib = LIB + '\n[dependencies]\nx = { git = "https://github.com/me/x" }\n'
    monkeypatch.setattr(cg, "crate_releases", lambda n: None)
    tree = make_tree(tmp_path, _files(lib))
    with pytest.raises(EnvBuildError, match="index could not be read"):
        rust.ECOSYSTEM.plan(tree, instance(tree), ["lib/tests/t.rs"], None)


def test_a_git_patch_of_a_released_version_is_dropped(tmp_path, fake_image, monkeypatch):  # noqa: F811
    """nushell: ``[patch.crates-io] reedline = { git = ..., branch = "main" }`` with Cargo.lock at
    reedline 0.32.0 from git; crates.io has 0.32.0, so the patch goes and the dependency's own
    requirement resolves from the registry (the git source in Cargo.lock is not a hidden
    dependency of a dependency). A locked version crates.io lacks stays a stated env_failed."""
    lib = LIB + '\n[dependencies]\nitoa = "1.0"\n'
    ws = WS + '\n[patch.crates-io]\nitoa = { git = "https://github.com/dtolnay/itoa", branch = "main" }\n' \
              '# other = { git = "https://github.com/x/other" }\n\n[profile.release]\nlto = true\n'
    lock = ('version = 3\n\n[[package]]\nname = "itoa"\nversion = "1.0.1"\n'
            'source = "git+https://github.com/dtolnay/itoa?branch=main#0123"\n')
    files = {**_files(lib), "Cargo.toml": ws, "Cargo.lock": lock}
    monkeypatch.setattr(cg, "crate_releases", lambda n: (rel("1.0.0", 1), rel("1.0.1", 2)))
    tree = make_tree(tmp_path, files)
    plan = rust.ECOSYSTEM.plan(tree, instance(tree), ["lib/tests/t.rs"], None)
    assert any("[patch.crates-io] itoa from git (https://github.com/dtolnay/itoa) dropped: crates.io has itoa 1.0.1"
               in s for s in plan.substitutions)
    cmd = next(c for c in plan.setup_commands if c.endswith("> /testbed/Cargo.toml"))
    import base64
    new = tomllib.loads(base64.b64decode(shlex.split(cmd)[1]).decode())
    assert "itoa" not in new.get("patch", {}).get("crates-io", {}) and new["profile"]["release"]["lto"] is True
    # a version crates.io does not release (and no older compatible one): env_failed with the cause
    monkeypatch.setattr(cg, "crate_releases", lambda n: (rel("2.0.0", 1),))
    with pytest.raises(EnvBuildError, match=r"\[patch.crates-io\] entry from git: itoa .*1.0.1, which crates.io"):
        rust.ECOSYSTEM.plan(make_tree(tmp_path / "b", files), instance(tree), ["lib/tests/t.rs"], None)


def test_released_as_locked_and_drop_patch_sections():
    assert cg.released_as_locked([rel("0.32.0"), rel("0.33.0")], "0.32.0") == "0.32.0"
    assert cg.released_as_locked([rel("0.31.0"), rel("0.32.0")], "0.32.5") == "0.32.0"  # older, compatible
    assert cg.released_as_locked([rel("0.31.0"), rel("0.33.0")], "0.32.5") is None
    assert cg.released_as_locked([rel("0.32.0", yanked=True)], "0.32.0") is None
    text = '[patch.crates-io.reedline]\ngit = "https://github.com/nushell/reedline"\nbranch = "main"\n\n[x]\na = 1\n'
    out = cg.drop_patch(text, "crates-io", "reedline")
    assert tomllib.loads(out) == {"x": {"a": 1}}
