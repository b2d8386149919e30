"""Python's dependency tier holds the repository's pinned requirements (issue 24 item 3): the pinned
lines of requirement files whose every line is pinned are installed in the shared layer, written
out by the tier's own command (no file of the tree, no build of the project); editable, local, VCS,
URL and unpinned lines leave their file to the instance tier; the layer is keyed by the resolved
set, so two repositories with equal pins share it. Without Docker: the plans, the fake sandbox's
commands and the Dockerfile; `test_pinned_requirements_in_a_real_layer` builds one on the Python
3.11 toolchain image."""

from __future__ import annotations

import re
import shlex
from types import SimpleNamespace

import pytest

from agents.dockerfile import render_dockerfile
from agents.ecosystems.base import Plan
from agents.ecosystems.python import ECOSYSTEM
from agents.ecosystems.python.pinned import REQUIREMENTS_DIR, pinned_requirements
from agents.ecosystems.python.profile import analyze_python
from agents.ecosystems.python.python_plan import SKIP_TEST_DEPS, choose_python
from tests.agents.test_python_rules import make_tree, utc

MARKING_SETUP = ("import os\nopen('/tmp/setup-py-ran', 'w').write('ran')\n"
                 "from setuptools import setup\nsetup(name='marka', version='0.1', packages=['marka'])\n")


def plan_for(tree, repo: str = "acme/alpha", version: str = "3.11") -> Plan:
    profile = analyze_python(tree)
    created = utc("2024-03-01T00:00:00")
    choice = choose_python(profile, created, [version])
    return Plan(ecosystem="python", toolchain=choice.version, image="swemint/python:fake", parser="pytest_channel",
                state={"profile": profile.model_dump(), "choice": choice.model_dump(), "version": None,
                       "options": {}, "repo": repo, "created": created.isoformat()})


def layer_of(tmp_path, files: dict[str, str], repo: str = "acme/alpha"):
    tree = make_tree(tmp_path, {"setup.py": MARKING_SETUP, "marka/__init__.py": "", **files})
    return ECOSYSTEM.dependency_layer(plan_for(tree, repo), tree), tree


def installed(command: str) -> list[str]:
    """The requirement lines the tier's command writes out (what `uv pip install -r` gets)."""
    m = re.search(r"printf '%s\\n' (.*?) > " + re.escape(REQUIREMENTS_DIR) + "/requirements.txt", command)
    return shlex.split(m.group(1)) if m else []


def test_a_pinned_requirements_file_goes_into_the_layer_and_unpinned_editable_vcs_files_do_not(tmp_path):
    layer, tree = layer_of(tmp_path, {
        "requirements.txt": "# runtime\niniconfig==2.0.0  # via pytest\nattrs[tests]==23.1.0 ; python_version >= '3.7' "
                            "\\\n    --hash=sha256:abc\npytest-cov==4.1.0\nmarka==0.0.9\n",
        "requirements-test.txt": "-r requirements.txt\npluggy>=1.0\n",  # unpinned: left, its include taken alone
        "requirements-dev.txt": "-e .\nblack==23.1.0\n"})
    assert layer is not None and layer.fallback is not None
    extra = layer.commands[len(layer.fallback.commands):]
    assert layer.commands[:len(layer.fallback.commands)] == layer.fallback.commands  # the venv first, as before
    assert len(extra) == 1 and "uv pip install " in extra[0] and f"-r {REQUIREMENTS_DIR}/requirements.txt" in extra[0]
    assert installed(extra[0]) == ["iniconfig==2.0.0", "attrs[tests]==23.1.0 ; python_version >= '3.7' --hash=sha256:abc"]
    # a dev tool the builder skips, the project's own release: not here; the other files stay with the instance
    assert "pytest-cov" not in extra[0] and "marka==" not in extra[0] and "pluggy" not in extra[0]
    assert "black" not in extra[0] and "-e ." not in extra[0]
    assert "pinned requirements.txt" in layer.name
    # nothing of the tree goes into the layer's sandbox: the lines travel in the command
    assert layer.files == [] and layer.stubs == [] and layer.content == {}
    assert not any("setup.py" in c or "/testbed" in c for c in layer.commands)
    # the builder's own flags (interpreter, date bound) are the ones the instance tier installs with
    assert "--exclude-newer" in extra[0] and "--python /opt/venv/bin/python" in extra[0]


@pytest.mark.parametrize("line", ["-e .", "./vendored/pkg", "git+https://github.com/acme/tool.git#egg=tool",
                                  "tool @ https://example.com/tool-1.0.tar.gz", "tool>=1.0", "tool", "tool==1.*",
                                  "--index-url https://mirror.example/simple", "tool==1.0 --no-binary tool",
                                  "tool==${VERSION}", "-r ../outside.txt", "-r missing.txt"])
def test_a_file_with_one_line_that_is_not_a_pin_is_left_to_the_instance_tier(tmp_path, line):
    tree = make_tree(tmp_path, {"requirements.txt": f"iniconfig==2.0.0\n{line}\n"})
    got = pinned_requirements(tree, ["requirements.txt"], "3.11", [], SKIP_TEST_DEPS)
    assert got.requirements == [] and "requirements.txt" in got.left, got


def test_includes_and_constraints_are_followed_relative_to_their_file(tmp_path):
    tree = make_tree(tmp_path, {"requirements/test.txt": "-r base.txt\n-c ../constraints.txt\npluggy==1.4.0\n",
                                "requirements/base.txt": "iniconfig==2.0.0\n",
                                "constraints.txt": "packaging==23.2\n"})
    got = pinned_requirements(tree, ["requirements/test.txt"], "3.11", [], SKIP_TEST_DEPS)
    assert got.requirements == ["iniconfig==2.0.0", "pluggy==1.4.0"] and got.constraints == ["packaging==23.2"]
    assert got.included == ["requirements/base.txt", "constraints.txt"]


def fake_run(tmp_path, factory, tree, iid: str, repo: str):
    from agents.mint_config import MintConfig
    from envpool.sandbox import SandboxSpec

    cfg = MintConfig(workdir=tmp_path / "w", run_id="r1", cache={"warm": False})
    steps: list = []
    return SimpleNamespace(config=cfg, factory=factory, traj=steps.append, steps=steps, log_path=tmp_path / "run.log",
                           iid=iid, instance=SimpleNamespace(repo=repo), remaining=lambda: 3600.0, tree=tree,
                           res=SimpleNamespace(timings={}),
                           spec=lambda image, network, env=None, caches=None: SandboxSpec(image=image, run_id="r1",
                                                                                           network=network))


def fake_engine(fail_install: bool = False):
    """A fake engine with the toolchain image: `uv pip install -r` records the pins it was given in
    the sandbox, and the resolved set (`uv pip freeze`) prints them with the toolchain packages."""
    from envpool.fake import FakeSandboxFactory
    from envpool.fake_images import FakeImage
    from envpool.sandbox import ExecResult

    factory = FakeSandboxFactory(run_id="r1")
    factory.images["swemint/python:fake"] = FakeImage(id="sha256:" + "7" * 64, ref="swemint/python:fake", labels={})

    def install(command, sb):
        if fail_install:
            return 1, "error: no wheel for numpy==1.16.0 on cp311"
        sb.pins = installed(command)
        return 0

    def freeze(command, sb):
        pins = sorted(p.split(";")[0].split(" --")[0].strip() for p in getattr(sb, "pins", []))
        return ExecResult(command=command, exit_code=0, output="".join(f"{p}\n" for p in ["pip==24.0", *pins]))

    factory.on(r"uv pip install .* -r " + re.escape(REQUIREMENTS_DIR), install)
    factory.on(r"^uv pip freeze", freeze)
    return factory


def tier_of(tmp_path, factory, name: str, files: dict[str, str], fail_install: bool = False):
    from agents import tiers

    tree = make_tree(tmp_path / name, {"setup.py": MARKING_SETUP, f"{name}/__init__.py": "", **files})
    run = fake_run(tmp_path, factory, tree, f"acme__{name}-1", f"acme/{name}")
    return tiers.dependency_tier(run, ECOSYSTEM, plan_for(tree, f"acme/{name}")), run


def test_equal_pins_share_the_layer_and_other_pins_do_not(tmp_path):
    factory = fake_engine()
    a, _ = tier_of(tmp_path, factory, "alpha", {"requirements.txt": "iniconfig==2.0.0\npluggy==1.4.0\n"})
    # another repository, another file name, comments and order: the same pinned set
    b, _ = tier_of(tmp_path, factory, "beta", {"requirements-test.txt": "# pinned\npluggy==1.4.0\niniconfig==2.0.0 # x\n"})
    c, _ = tier_of(tmp_path, factory, "gamma", {"requirements.txt": "iniconfig==1.1.1\npluggy==1.4.0\n"})
    assert a is not None and a.built and "iniconfig==2.0.0" in a.commands[-1]
    assert b is not None and not b.built and (b.key, b.image_id) == (a.key, a.image_id)
    assert c is not None and c.built and c.key != a.key
    # B's Dockerfile spells out the layer it stands on: the commands that made it (A's, from its labels)
    assert b.commands == a.commands
    text = render_dockerfile(base_image="swemint/python:fake", repo="acme/beta", base_commit="b" * 40,
                             commands=["uv pip install -e ."], env={}, dependency=b)
    deps = text[text.index("# tier: dependencies"):text.index("# tier: instance")]
    assert "iniconfig==2.0.0" in deps and "COPY testbed.tar.gz" not in deps  # no file of the checkout
    assert text.index("COPY testbed.tar.gz") > text.index("# tier: instance")


def test_the_repositorys_setup_code_never_runs_in_the_dependency_layer(tmp_path):
    factory = fake_engine()
    tier, _ = tier_of(tmp_path, factory, "marka", {"requirements.txt": "iniconfig==2.0.0\n"})
    assert tier is not None and tier.built
    sb = factory.sandboxes[-1]
    assert not any(path.startswith("/testbed/") for path in sb.files)  # the tree was never put in
    assert not any(re.search(r"setup\.py|pip install (-e )?\.|/testbed\b(?! -mindepth)", c) for c in sb.commands), \
        sb.commands
    assert any(installed(c) == ["iniconfig==2.0.0"] for c in sb.commands)


def test_a_pin_that_does_not_install_leaves_the_virtualenv_layer_as_before(tmp_path):
    factory = fake_engine(fail_install=True)
    tier, run = tier_of(tmp_path, factory, "delta", {"requirements.txt": "numpy==1.16.0\n"})
    assert tier is not None and tier.built and not any(REQUIREMENTS_DIR in c for c in tier.commands)
    assert "virtualenv" in tier.name and "pinned" not in tier.name
    assert any(s.rule == "tier:retry" for s in run.steps)


def test_without_pinned_files_the_layer_is_the_virtualenv_alone(tmp_path):
    layer, _ = layer_of(tmp_path, {"requirements.txt": "iniconfig>=2\n"})
    assert layer is not None and layer.fallback is None and not any(REQUIREMENTS_DIR in c for c in layer.commands)


@pytest.mark.docker
def test_pinned_requirements_in_a_real_layer(tmp_path, python_image, docker_client):
    """On the Python 3.11 toolchain image: the layer holds iniconfig 2.0.0 from requirements.txt,
    and neither the repository's files nor the mark its setup.py would write."""
    from agents import tiers
    from envpool.docker_sandbox import DockerSandboxFactory
    from tests.session import ENV_REPOSITORY, SESSION

    tree = make_tree(tmp_path / "marka", {"setup.py": MARKING_SETUP, "marka/__init__.py": "",
                                          "requirements.txt": "iniconfig==2.0.0\n"})
    plan = plan_for(tree, "acme/marka").model_copy(update={"image": python_image})
    run_id = f"test-tiers-python-{SESSION}"
    run = fake_run(tmp_path, DockerSandboxFactory(run_id=run_id, client=docker_client), tree, "acme__marka-1",
                   "acme/marka")
    run.config.run_id, run.config.image_repository = run_id, ENV_REPOSITORY
    tier = tiers.dependency_tier(run, ECOSYSTEM, plan)
    try:
        assert tier is not None and tier.built, [s.note or s.output_excerpt for s in run.steps]
        assert "pinned requirements.txt" in tier.name
        out = docker_client.containers.run(tier.image_id, ["bash", "-c", "/opt/venv/bin/python -c 'import "
                                           "importlib.metadata as m; print(m.version(\"iniconfig\"))'; ls -A /testbed; "
                                           "ls -A /tmp"], remove=True, network_mode="none").decode()
        assert out.split()[0] == "2.0.0" and "setup-py-ran" not in out and "marka" not in out, out
        assert "swemint-deps" not in out, out
    finally:
        if tier is not None:
            docker_client.images.remove(tier.image, force=True)


def test_a_layer_is_shared_only_with_what_was_asked_for_not_only_with_what_it_lists(tmp_path):
    """Code that ran in the layer's build (a pinned sdist's setup.py) can write a sitecustomize and
    remove its own distribution's record, so the resolved set lists only the other pins: keyed by
    that alone the layer would be shared with a repository that never asked for the package (a new
    user's trial 6). The key holds the pins asked for as well: equal pins still share."""
    from agents import tiers
    from agents.ecosystems.base import LayerSpec

    resolved = "iniconfig==2.0.0\npip==24.0\n"  # what both builds left listed
    spec = LayerSpec(name="py", commands=["uv pip install -r /tmp/r.txt"], resolved="uv pip freeze")
    evil = spec.model_copy(update={"requested": ["evil-sdist==1.0", "iniconfig==2.0.0"]})
    plain = spec.model_copy(update={"requested": ["iniconfig==2.0.0"]})
    same = spec.model_copy(update={"requested": ["iniconfig==2.0.0"], "commands": ["uv pip install --exclude-newer x"]})
    key = lambda s: tiers.layer_key("sha256:t", s, {}, resolved)  # noqa: E731
    assert key(evil) != key(plain)
    assert key(plain) == key(same)  # another date bound, the same pins and resolution: shared
    assert key(spec) == tiers.layer_key("sha256:t", spec.model_copy(update={"commands": ["other"]}), {}, resolved)
