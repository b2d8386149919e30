"""Environments in tiers without Docker: the dependency layer's key, what each ecosystem gives it
(manifests and lockfiles only), the Dockerfiles of tiered and reused environments, and the
refusal of another repository's environment (issue 24). Docker-backed cases:
`test_tiers_docker.py`."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from types import SimpleNamespace

from agents.dockerfile import build_context, earlier_trees, layout_command, render_dockerfile, \
    render_reused_dockerfile
from agents.ecosystems.base import LayerSpec, Plan
from agents.envpatch import fits
from agents.models import EnvRecord
from agents.tiers import DependencyTier, layer_key, manifest_tar
from tests.agents.test_python_rules import make_tree, utc

GO_MOD = "module example.com/a\n\ngo 1.19\n\nrequire github.com/google/go-cmp v0.5.9\n"
GO_SUM = "github.com/google/go-cmp v0.5.9 h1:x\ngithub.com/google/go-cmp v0.5.9/go.mod h1:y\n"


def spec(files: list[str], commands: list[str] | None = None) -> LayerSpec:
    return LayerSpec(name="go modules", files=files, commands=commands or ["go mod download"], env={"GOFLAGS": "-mod=mod"})


def test_equal_lockfiles_give_equal_keys_and_any_changed_byte_another():
    same = {"go.mod": GO_MOD.encode(), "go.sum": GO_SUM.encode()}
    a = layer_key("sha256:t", spec(["go.mod", "go.sum"]), same)
    assert a == layer_key("sha256:t", spec(["go.mod", "go.sum"]), dict(same))  # another repository, same files
    assert a != layer_key("sha256:t", spec(["go.mod", "go.sum"]), {**same, "go.sum": GO_SUM.encode() + b"\n"})
    assert a != layer_key("sha256:other-toolchain", spec(["go.mod", "go.sum"]), same)
    assert a != layer_key("sha256:t", spec(["go.mod", "go.sum"], ["go mod download -x"]), same)
    # keyed by the resolved set: the commands (a date bound in them) no longer matter
    py = LayerSpec(name="python", commands=["uv pip install --exclude-newer 2021-01-01 x"], resolved="freeze")
    later = py.model_copy(update={"commands": ["uv pip install --exclude-newer 2021-02-01 x"]})
    assert layer_key("sha256:t", py, {}, "x==1\n") == layer_key("sha256:t", later, {}, "x==1\n")
    assert layer_key("sha256:t", py, {}, "x==1\n") != layer_key("sha256:t", py, {}, "x==2\n")


def test_the_manifest_tar_holds_the_files_and_empty_stubs_only_and_is_deterministic():
    blob = manifest_tar({"Cargo.toml": b"[package]\nname='a'\n"}, ["src/lib.rs"])
    assert blob == manifest_tar({"Cargo.toml": b"[package]\nname='a'\n"}, ["src/lib.rs"])
    with tarfile.open(fileobj=io.BytesIO(blob)) as tf:
        got = {m.name: tf.extractfile(m).read() for m in tf.getmembers()}
    assert got == {"Cargo.toml": b"[package]\nname='a'\n", "src/lib.rs": b""}


def test_go_gives_its_tier_only_the_module_files(tmp_path):
    from agents.ecosystems.golang import ECOSYSTEM

    tree = make_tree(tmp_path, {"go.mod": GO_MOD, "go.sum": GO_SUM, "calc.go": "package a\n",
                                "sub/go.mod": "module example.com/a/sub\n", "vendor/x/go.mod": "module x\n",
                                "testdata/go.mod": "module t\n", "tools/go.work": "go 1.21\n"})
    plan = Plan(ecosystem="go", toolchain="go 1.19", image="go:1", parser="go_test_json", env={"GOFLAGS": "-mod=mod"},
                setup_commands=["go env -w GOFLAGS=-mod=mod", "cd /testbed && go mod download", "go build ./..."],
                state={"dependency_commands": ["go env -w GOFLAGS=-mod=mod", "cd /testbed && go mod download"]})
    layer = ECOSYSTEM.dependency_layer(plan, tree)
    assert layer.files == ["go.mod", "go.sum", "sub/go.mod", "tools/go.work"]
    assert layer.commands == ["go env -w GOFLAGS=-mod=mod", "cd /testbed && go mod download"]  # no build
    assert ECOSYSTEM.dependency_layer(plan.model_copy(update={"state": {}}), tree) is None  # vendored / GOPATH
    # the repository's own module path is not part of the dependency set: given anonymised
    assert layer.content["go.mod"] == GO_MOD.replace("module example.com/a", "module swemint.invalid/deps")


def test_go_repositories_requiring_the_same_modules_get_the_same_key(tmp_path):
    from agents.ecosystems.golang import ECOSYSTEM

    plan = Plan(ecosystem="go", toolchain="go 1.19", image="go:1", parser="go_test_json",
                state={"dependency_commands": ["cd /testbed && go mod download"]})

    def key(name: str, gomod: str) -> str:
        tree = make_tree(tmp_path / name, {"go.mod": gomod, "go.sum": GO_SUM, "x.go": f"package {name}\n"})
        layer = ECOSYSTEM.dependency_layer(plan, tree)
        given = {p: layer.content[p].encode() if p in layer.content else tree.read_bytes(p) for p in layer.files}
        return layer_key("sha256:t", layer, given)

    a = key("a", GO_MOD)
    assert a == key("b", GO_MOD.replace("example.com/a", "example.org/other/b"))
    assert a != key("c", GO_MOD.replace("v0.5.9", "v0.6.0"))
    # a local replace: the module keeps its path (another module of the tree is required by it)
    local = make_tree(tmp_path / "d", {"go.mod": GO_MOD + "replace example.com/x => ./x\n", "go.sum": GO_SUM,
                                       "x/go.mod": "module example.com/x\n"})
    assert ECOSYSTEM.dependency_layer(plan, local).content == {}


def test_rust_stubs_the_sources_its_manifests_name_and_nothing_else(tmp_path):
    from agents.ecosystems.rust import ECOSYSTEM, cargo_stubs

    tree = make_tree(tmp_path, {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n', "Cargo.lock": "version = 3\n",
        "crates/a/Cargo.toml": '[package]\nname = "a"\n[[bin]]\nname = "tool"\npath = "tools/run.rs"\n',
        "crates/a/src/lib.rs": "pub fn f() {}\n", "crates/a/src/util.rs": "// not a target\n",
        "crates/a/tools/run.rs": "fn main() {}\n", "crates/a/build.rs": "fn main() {}\n",
        "crates/a/tests/it.rs": "#[test] fn t() {}\n", "crates/a/tests/common/mod.rs": "// helper\n",
        "crates/b/Cargo.toml": '[package]\nname = "b"\n', "crates/b/src/main.rs": "fn main() {}\n",
        "crates/b/src/bin/x/main.rs": "fn main() {}\n", "crates/b/.cargo/config.toml": "[build]\n"})
    assert cargo_stubs(tree) == ["crates/a/build.rs", "crates/a/src/lib.rs", "crates/a/tests/it.rs",
                                 "crates/a/tools/run.rs", "crates/b/src/bin/x/main.rs", "crates/b/src/main.rs"]
    plan = Plan(ecosystem="rust", toolchain="rust 1.78", image="rust:1", parser="cargo_test",
                state={"dependency_commands": ["cd /testbed && cargo fetch"], "cargo_root": ""})
    layer = ECOSYSTEM.dependency_layer(plan, tree)
    assert layer.files == ["Cargo.lock", "Cargo.toml", "crates/a/Cargo.toml", "crates/b/Cargo.toml"]
    assert layer.stubs == cargo_stubs(tree) and layer.commands == ["cd /testbed && cargo fetch"]


def test_node_fills_the_cache_from_the_lockfile_with_no_install_script(tmp_path):
    from agents.ecosystems.node import ECOSYSTEM

    tree = make_tree(tmp_path, {"package.json": '{"workspaces": ["packages/*"]}', "package-lock.json": "{}",
                                "packages/a/package.json": "{}", "packages/a/test/fixture/package.json": "{}",
                                "packages/a/index.js": "module.exports = 1\n", ".npmrc": "legacy-peer-deps=true\n"})
    plan = Plan(ecosystem="node", toolchain="node 20", image="node:20", parser="jest_json",
                state={"pm": "npm", "lockfile": "package-lock.json"})
    layer = ECOSYSTEM.dependency_layer(plan, tree)
    assert layer.commands == ["npm ci --ignore-scripts --no-audit --no-fund"]
    assert layer.files == [".npmrc", "package-lock.json", "package.json", "packages/a/package.json"]
    for pm, lock in (("pnpm", "pnpm-lock.yaml"), ("npm", None), ("yarn-berry", "yarn.lock")):
        assert ECOSYSTEM.dependency_layer(plan.model_copy(update={"state": {"pm": pm, "lockfile": lock}}), tree) is None


def test_pythons_tier_is_the_builders_first_commands_exactly(tmp_path):
    """The tier runs what the full build ran first (the venv, the date-bounded toolchain packages,
    the era's shim), so the instance tier's effect is unchanged; keyed by what they resolve to."""
    from agents.ecosystems.python import ECOSYSTEM
    from agents.ecosystems.python.profile import analyze_python
    from agents.ecosystems.python.python_plan import choose_python
    from agents.ecosystems.python.builder import RESOLVED_COMMAND, PythonEnvBuilder
    from envpool.fake import FakeSandbox
    from envpool.sandbox import SandboxSpec

    tree = make_tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='p', packages=['p'])\n",
                                "p/__init__.py": ""})
    profile = analyze_python(tree)
    created = utc("2019-04-13T16:17:45")
    choice = choose_python(profile, created, ["3.9", "3.11"])
    plan = Plan(ecosystem="python", toolchain=choice.version, image="py", parser="pytest_channel",
                state={"profile": profile.model_dump(), "choice": choice.model_dump(), "version": None,
                       "options": {}, "repo": "acme/p", "created": created.isoformat()})
    layer = ECOSYSTEM.dependency_layer(plan, tree)
    assert layer.resolved == RESOLVED_COMMAND and not layer.files
    full = PythonEnvBuilder(FakeSandbox(SandboxSpec(image="x")), tree, profile, choice, created, None, repo="acme/p")
    full.build([])
    assert full.commands[:len(layer.commands)] == layer.commands
    assert "uv venv" in layer.commands[0] and "setuptools" in layer.commands[1]
    assert not any("-e ." in c or "/testbed" in c for c in layer.commands)  # nothing of the project
    rest = PythonEnvBuilder(FakeSandbox(SandboxSpec(image="x")), tree, profile, choice, created, None, repo="acme/p")
    rest.build([], base_ready=True)
    assert rest.commands == full.commands[len(layer.commands):]
    # a plan whose commands come before the builder's gets no tier (they ran first)
    assert ECOSYSTEM.dependency_layer(plan.model_copy(update={"setup_commands": ["apt-get install x"]}), tree) is None


def tier() -> DependencyTier:
    return DependencyTier(key="k" * 64, image="swemint/env:deps-k", image_id="sha256:d", name="go modules",
                          files=["go.mod", "go.sum"], commands=["cd /testbed && go mod download"],
                          env={"GOFLAGS": "-mod=mod"})


def test_a_tiered_dockerfile_takes_only_the_manifests_then_the_checkout():
    text = render_dockerfile(base_image="swemint/go:unknown", repo="acme/a", base_commit="c" * 40,
                             commands=["go build ./..."], env={"GOFLAGS": "-mod=mod"}, dependency=tier())
    deps, inst = text.index("# tier: dependencies"), text.index("# tier: instance")
    checkout = text.index("COPY testbed.tar.gz /tmp/testbed.tar.gz")
    assert deps < inst < checkout < text.index("RUN . /opt/swemint/build-env.sh && go build ./...")
    section = text[deps:inst]
    assert "-C /testbed -- go.mod go.sum &&" in section  # only the files the tier was given
    anon = render_dockerfile(base_image="x", repo="acme/a", base_commit="c" * 40, commands=[], env={},
                             dependency=tier().model_copy(update={"content": {"go.mod": "module d\n"}}))
    assert "-C /testbed -- go.sum &&" in anon and "| base64 -d > /testbed/go.mod" in anon
    assert "export GOFLAGS=-mod=mod; cd /testbed && go mod download" in section
    assert section.rstrip().endswith("RUN find /testbed -mindepth 1 -delete")
    assert "# tier" not in render_dockerfile(base_image="x", repo="acme/a", base_commit="c" * 40, commands=[], env={})


def test_a_reused_rows_dockerfile_is_its_candidates_then_this_tree_and_the_increments():
    cand = render_dockerfile(base_image="x", repo="acme/a", base_commit="a" * 40, commands=["make"], env={})
    text = render_reused_dockerfile(candidate_dockerfile=cand, candidate_commit="a" * 40, reused_from="acme__a-1",
                                    repo="acme/a", base_commit="b" * 40, commands=["make again"], env={"X": "1"},
                                    keep_ignored=True)
    assert text.index(f"COPY trees/{'a' * 40}.tar.gz /tmp/testbed.tar.gz") < text.index("RUN . /opt/swemint/build-env.sh && make\n")
    tail = text[text.index("# tier: instance of"):]
    assert "COPY testbed.tar.gz /tmp/testbed.tar.gz" in tail and "git ls-files --others --ignored" in tail
    assert tail.index(layout_command("/tmp/testbed.tar.gz", "b" * 40, replace=True, keep_ignored=True)) < \
        tail.index("make again")
    assert earlier_trees(text) == ["a" * 40]
    # a chain: the earlier tree keeps its name, the new candidate's tree gets one
    again = render_reused_dockerfile(candidate_dockerfile=text, candidate_commit="b" * 40, reused_from="acme__a-2",
                                     repo="acme/a", base_commit="c" * 40, commands=[], env={}, keep_ignored=False)
    assert earlier_trees(again) == ["a" * 40, "b" * 40]
    ctx = build_context(b"tree", None, {"a" * 40: b"old"})
    assert set(ctx) >= {"testbed.tar.gz", f"trees/{'a' * 40}.tar.gz"}


def test_an_environment_of_another_repository_does_not_fit():
    plan = Plan(ecosystem="go", toolchain="go 1.19", image="g", parser="go_test_json", language="go")
    other = EnvRecord(instance_id="o__b-1", repo="o/b", base_commit="0", language="go", interpreter="go 1.19",
                      image_tag="t")
    assert "another repository" in fits(other, plan, "acme/a")
    assert fits(other.model_copy(update={"repo": "acme/a"}), plan, "acme/a") == ""


def test_the_layout_the_dockerfile_replays_is_the_sandboxs():
    """`lay_out_repository` runs `layout_command` itself: what a reused row's Dockerfile replays."""
    import inspect

    from agents import envimage

    assert "layout_command(" in inspect.getsource(envimage.lay_out_repository)
    assert Path(envimage.__file__).read_text().count("git init -q") == 0


def test_a_resolved_sets_key_ignores_what_the_command_writes_to_stderr(tmp_path):
    """A sandbox interleaves stdout and stderr as they come (uv prints "Using Python ... environment
    at" on stderr, before or after the set): the second build of the same resolved set, whose
    stderr landed elsewhere, must find the first one's layer under the same key."""
    from types import SimpleNamespace

    from agents import tiers
    from agents.mint_config import MintConfig
    from envpool.fake import FakeSandboxFactory
    from envpool.sandbox import ExecResult, SandboxSpec

    factory = FakeSandboxFactory(run_id="r1")
    builds = iter(["noise\npkg==1.0\n", "pkg==1.0\nnoise\n"])  # the same set, stderr before then after it

    def freeze(command, sb):
        merged = next(builds)
        if sb.calls[-1].channel:  # stdout kept apart from stderr, as DockerSandbox does
            return ExecResult(command=command, exit_code=0, output="pkg==1.0\n", channel=b"noise\n")
        return merged

    factory.on(r"^freeze$", freeze)
    cfg = MintConfig(workdir=tmp_path / "w", run_id="r1", cache={"warm": False})
    steps: list = []
    run = SimpleNamespace(config=cfg, factory=factory, traj=steps.append, log_path=tmp_path / "run.log",
                          iid="acme__x-1", instance=SimpleNamespace(repo="acme/x"), remaining=lambda: 3600.0,
                          spec=lambda image, network, env=None, caches=None: SandboxSpec(image=image, run_id="r1",
                                                                                          network=network))
    plan = SimpleNamespace(image="py", state={}, ecosystem="python")
    layer = LayerSpec(name="python", commands=["uv pip install x"], resolved="freeze")
    first = tiers._make(run, plan, layer, {}, "sha256:tool")
    second = tiers._make(run, plan, layer, {}, "sha256:tool")
    assert first is not None and first.built and first.key == layer_key("sha256:tool", layer, {}, "pkg==1.0\n")
    assert second is not None and not second.built  # shared, not a second image
    assert (second.key, second.image_id) == (first.key, first.image_id)


def fake_run(tmp_path, factory, iid: str, repo: str):
    """What `agents.tiers` reads of an instance's run, for repository `repo` on `factory`."""
    from types import SimpleNamespace

    from agents.mint_config import MintConfig
    from envpool.sandbox import SandboxSpec

    cfg = MintConfig(workdir=tmp_path / "w", run_id="r1", cache={"warm": False})
    return SimpleNamespace(config=cfg, factory=factory, traj=lambda step: None, log_path=tmp_path / "run.log",
                           iid=iid, instance=SimpleNamespace(repo=repo), remaining=lambda: 3600.0,
                           spec=lambda image, network, env=None, caches=None: SandboxSpec(image=image, run_id="r1",
                                                                                           network=network))


def test_an_instance_image_on_a_shared_dependency_image_carries_no_label_of_the_repository_that_built_it(tmp_path):
    """Docker copies a parent image's labels into the child: B's instance image, committed on the
    dependency image A's instance built, carried `swemint.deps.repo=acme/alpha` and
    `swemint.deps.built_by=acme__alpha-1`. Its labels are its own: the tier's are blanked."""
    from agents import tiers
    from agents.envimage import TIER_LABELS, commit_image
    from envpool.fake import FakeSandboxFactory
    from envpool.sandbox import SandboxSpec

    factory = FakeSandboxFactory(run_id="r1")
    factory.on(r"^freeze$", "pkg==1.0\n")
    plan = SimpleNamespace(image="py", state={}, ecosystem="python")
    layer = LayerSpec(name="python", commands=["uv pip install x"], resolved="freeze")
    a = tiers._make(fake_run(tmp_path, factory, "acme__alpha-1", "acme/alpha"), plan, layer, {}, "sha256:tool")
    b = tiers._make(fake_run(tmp_path, factory, "acme__beta-1", "acme/beta"), plan, layer, {}, "sha256:tool")
    assert a.built and not b.built and b.image_id == a.image_id  # B shares A's dependency image
    dep = factory.images.get(b.image)
    assert dep.labels[tiers.LABEL_REPO] == "acme/alpha"  # the shared image's own provenance stays
    with factory.sandbox(SandboxSpec(image=b.image, run_id="r1")) as sb:
        ref, _ = commit_image(sb, factory, "swemint/env", "acme__beta-1.x", {"swemint.instance": "acme__beta-1",
                                                                            "swemint.run": "r1"})
    labels = factory.images.get(ref).labels
    assert not any("alpha" in v for v in labels.values()), labels
    assert all(labels[k] == "" for k in TIER_LABELS) and labels["swemint.tier"] == "instance"
    # a lookup of the repository's dependency images (the tier's seed) finds the dependency image only
    found = factory.images.list({"swemint.tier": "dependencies", tiers.LABEL_REPO: "acme/alpha"})
    assert [i.id for i in found] == [a.image_id]
    # an image whose parent the store does not know gets the tier's labels blanked all the same
    with factory.sandbox(SandboxSpec(image="unknown:1", run_id="r1")) as sb:
        ref, _ = commit_image(sb, factory, "swemint/env", "other", {"swemint.instance": "o", "swemint.run": "r1"})
    assert all(factory.images.get(ref).labels[k] == "" for k in TIER_LABELS)
