"""Environment reuse (MEnvAgent) on two versions of a synthetic repository (real Docker, PyPI).

Version 0.1 has no dependency; version 0.2 imports `six`. Minting 0.2 with 0.1's pooled
environment as candidate must verify, record `reused_from` and an incremental command that
syncs the dependencies of 0.2 (six comes with it), and take less setup time than the full build. A candidate that cannot serve
(version 0.3 requires a newer interpreter than the candidate's) falls back to a full build.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.mint_config import MintConfig, ReuseConfig
from agents.minter import mint_instance
from agents.models import Instance
from pipeline.demo import build_repository
from tests.agents.test_minter_docker import write_repo
from tests.session import SESSION, ENV_REPOSITORY

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TEST_V1 = "from reusepkg import half\n\n\ndef test_int():\n    assert isinstance(half(2), (int, float))\n"


def version(root: Path, number: int, ver: str, init: str, setup_extra: str = "", created: str = "2024-03-01T00:00:00Z"):
    """A data dir for `acme/reusepkg` at package version `ver` (PR `number`)."""
    base = {"setup.py": f"from setuptools import setup\nsetup(name='reusepkg', version='{ver}', "
                        f"packages=['reusepkg']{setup_extra})\n",
            "reusepkg/__init__.py": init + "def half(x):\n    return x // 2\n",
            "tests/test_half.py": TEST_V1}
    d = write_repo(root, "reusepkg", base, fix={"reusepkg/__init__.py": init + "def half(x):\n    return x / 2\n"},
                   tests={"tests/test_half.py": TEST_V1 + "\n\ndef test_odd():\n    assert half(3) == 1.5\n"},
                   created_at=created, version=ver)
    meta = json.loads((d / "meta.json").read_text())
    meta["number"] = number
    (d / "meta.json").write_text(json.dumps(meta))
    return d


@pytest.fixture
def mint(tmp_path, python_image, docker_client):
    """mint(data_dir, **kw) -> (instance, result); every image made is removed afterwards."""
    made: list[str] = []

    def run(data_dir: Path, candidates=None, reuse: ReuseConfig | None = None):
        mirrors = tmp_path / f"mirrors-{data_dir.parent.name}"
        inst = Instance(**build_repository(data_dir, mirrors))
        cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-reuse-{SESSION}", image_repository=ENV_REPOSITORY,
                         reuse=reuse or ReuseConfig())
        res = mint_instance(inst, mirrors / "acme+reusepkg" / "repo", cfg, candidates=candidates)
        if res.image:
            made.append(res.image)
        return inst, res

    yield run
    for image in made:
        try:
            docker_client.images.remove(image, force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass


def test_newer_version_reuses_the_older_environment_with_one_more_package(tmp_path, mint, docker_client):
    _, first = mint(version(tmp_path / "v1", 1, "0.1", ""))
    assert first.outcome == "verified", first.reason
    assert first.reused_from is None and first.incremental_commands == []
    v2 = version(tmp_path / "v2", 2, "0.2", "import six  # noqa\n\n", ", install_requires=['six']",
                 created="2024-06-01T00:00:00Z")
    inst, second = mint(v2, candidates=[first.env])
    assert second.outcome == "verified", second.reason
    assert second.FAIL_TO_PASS == ["tests/test_half.py::test_odd"]
    assert second.reused_from == first.instance_id
    sync = [c for c in second.incremental_commands if c.endswith("-e . -C editable_mode=compat")]
    assert sync and "--no-deps" not in sync[0], second.incremental_commands
    # increments on the candidate, not a second build (speed is bench_reuse.py's to measure)
    assert "uv venv" in first.setup_script and not any("uv venv" in c for c in second.incremental_commands)
    assert "reuse" in second.timings and "reuse" not in first.timings
    # the row's scripts: the candidate's, then the increments; the Dockerfile checks out this commit
    assert second.setup_script.startswith(first.setup_script.rstrip("\n"))
    assert f"base {inst.base_commit}" in second.dockerfile and "git clone" not in second.dockerfile
    assert "-e . -C editable_mode=compat" in second.dockerfile.split("EnvPatch")[-1]
    assert second.env is not None and second.env.version == "0.2"
    # the candidate's image is untouched and still present
    assert docker_client.images.get(first.image)
    out = docker_client.containers.run(second.image, ["bash", "-c", "cd /testbed && git log --format=%s | head -1 "
                                                      "&& /opt/venv/bin/python -c 'import six, reusepkg'"],
                                       remove=True, network_mode="none", labels={"swemint.run": "test-reuse"})
    assert out.decode().startswith("base ")


def test_a_candidate_that_cannot_be_patched_falls_back_to_a_full_build(tmp_path, mint):
    _, first = mint(version(tmp_path / "v1", 1, "0.1", ""))
    assert first.outcome == "verified", first.reason
    assert first.interpreter == "3.11"
    # 0.3 requires Python >= 3.12: the candidate's 3.11 venv cannot install it
    v3 = version(tmp_path / "v3", 3, "0.3", "", ", python_requires='>=3.12'", created="2024-06-01T00:00:00Z")
    _, third = mint(v3, candidates=[first.env])
    assert third.outcome == "verified", third.reason
    assert third.reused_from is None and third.incremental_commands == []
    assert third.interpreter == "3.13"
    traj = Path(third.trajectory_path).read_text()
    assert '"rule":"fallback"' in traj.replace(" ", "")
