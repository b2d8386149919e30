"""Environments in tiers (toolchain -> dependency layer -> instance), real Docker and registries.

Issue 24's cases, on small repositories the tests write themselves:

- repository A's setup writes a marker into the interpreter's site-packages and into
  `/root/.cache`; repository B (same toolchain, same pinned requirements.txt) is minted next by
  the same driver: B's tests see neither marker, B's image holds neither and carries no label
  naming A, the pinned requirement is in the shared dependency layer, and B's Dockerfile rebuilds
  B's published image (`swemint rebuild --verify` reproduces its labels);
- two Go repositories with the same lockfile (go.sum; their go.mod files differ only in the
  module's own path) share the dependency layer: the same dependency image, its layer in both
  instance images.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.models import InstanceResult
from pipeline.pipeline_config import load_config
from pipeline.demo import build_repository
from pipeline.driver import run_mint
from pipeline.store import ResultStore
from tests.agents.test_minter_docker import write_repo
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RUN_ID = f"test-tiers-{SESSION}"
MARK_SITE = "swemint_marker_from_a.txt"
MARK_CACHE = "/root/.cache/marker-from-a"

MARKING_SETUP = f"""import glob, os
from setuptools import setup
# what any build script can do as root: write outside the checkout
for sp in glob.glob('/opt/venv/lib/python3*/site-packages'):
    with open(os.path.join(sp, {MARK_SITE!r}), 'w') as f:
        f.write('A was here')
os.makedirs('/root/.cache', exist_ok=True)
with open({MARK_CACHE!r}, 'w') as f:
    f.write('A was here')
setup(name='marka', version='0.1', packages=['marka'], install_requires=['six'])
"""

SEES_NO_MARKER = f"""

def test_sees_no_marker():
    assert not glob.glob('/opt/venv/lib/python3*/site-packages/{MARK_SITE}')
    assert not os.path.exists({MARK_CACHE!r})
"""


def python_repo(root: Path, name: str, setup_py: str) -> Path:
    """`acme/<name>`: a package needing `six`, a `half` bug fixed by the patch; the test_patch's
    module also asserts that no marker of another repository is visible."""
    base = {"setup.py": setup_py, f"{name}/__init__.py": "import six  # noqa\n\n\ndef half(x):\n    return x // 2\n",
            "requirements.txt": "iniconfig==2.0.0\n"}  # pinned: installed in the dependency tier
    test = f"import glob\nimport os\n\nfrom {name} import half\n\n\ndef test_odd():\n    assert half(3) == 1.5\n" \
        + SEES_NO_MARKER
    return write_repo(root, name, base, fix={f"{name}/__init__.py": "import six  # noqa\n\n\ndef half(x):\n"
                                                                     "    return x / 2\n"},
                      tests={"tests/test_half.py": test}, created_at="2024-03-01T00:00:00Z", version="0.1")


def mint_in_order(tmp_path: Path, data_dirs: list[Path]) -> dict[str, InstanceResult]:
    """Mint the repositories one after the other with the pipeline driver (one worker, reuse and
    the pool as in a real run); returns the rows by instance id."""
    mirrors = tmp_path / "mirrors"
    rows = [build_repository(d, mirrors) for d in data_dirs]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    work = tmp_path / "work"
    cfg = load_config(None, [f"mint.run_id={RUN_ID}", f"mint.image_repository={ENV_REPOSITORY}",
                             "mint.memory.enabled=false"],
                      workdir=work, instances=instances, mirrors=[mirrors], use_ray=False, workers=1)
    run_mint(cfg)
    store = ResultStore(work)
    return {r["instance_id"]: store.read_result(r["instance_id"]) for r in rows}


def image_has(docker_client, image: str, cmd: str) -> str:
    out = docker_client.containers.run(image, ["bash", "-c", cmd], remove=True, network_mode="none",
                                       labels={"swemint.run": RUN_ID})
    return out.decode()


def test_a_repositorys_build_never_reaches_the_next_repositorys_environment(tmp_path, python_image, docker_client):
    a = python_repo(tmp_path / "a", "marka", MARKING_SETUP)
    b = python_repo(tmp_path / "b", "markb", "from setuptools import setup\nsetup(name='markb', version='0.1', "
                                             "packages=['markb'], install_requires=['six'])\n")
    rows = mint_in_order(tmp_path, [a, b])
    ra, rb = rows["acme__marka-7"], rows["acme__markb-7"]
    assert ra.outcome == "verified", ra.reason
    # A's own tests see A's marks: the marks are real
    assert "tests/test_half.py::test_sees_no_marker" not in ra.PASS_TO_PASS
    assert rb.outcome == "verified", rb.reason
    assert rb.reused_from is None and rb.reuse_kind is None, (rb.reused_from, rb.reuse_kind)
    assert "tests/test_half.py::test_sees_no_marker" in rb.PASS_TO_PASS, rb.PASS_TO_PASS
    listing = image_has(docker_client, rb.image, "ls /opt/venv/lib/python3*/site-packages/ /root/.cache/ 2>&1; true")
    assert MARK_SITE not in listing and "marker-from-a" not in listing
    # the tiers: B's image stands on a dependency layer in which no repository's code ran (here
    # the same one as A's: same interpreter, same toolchain packages), never on A's instance layer
    assert rb.dependency_key and rb.dependency_key == ra.dependency_key
    layers_a = docker_client.images.get(ra.image).attrs["RootFS"]["Layers"]
    image_b = docker_client.images.get(rb.image)
    layers_b = image_b.attrs["RootFS"]["Layers"]
    # B's image is B's own: no label names A, though Docker copies the dependency image's labels
    assert not any("marka" in v for v in (image_b.labels or {}).values()), image_b.labels
    # the pinned requirement is in the shared layer (no repository's code ran there), and B's
    # instance tier found it installed
    assert image_has(docker_client, rb.dependency_image_id, "/opt/venv/bin/python -c 'import importlib.metadata as m; "
                                                            "print(m.version(\"iniconfig\"))'").strip() == "2.0.0"
    dep_layers = docker_client.images.get(rb.dependency_image_id).attrs["RootFS"]["Layers"]
    assert layers_a[:len(dep_layers)] == layers_b[:len(dep_layers)] == dep_layers
    assert layers_b[len(dep_layers)] not in layers_a  # B's instance tier is B's own
    # B's Dockerfile rebuilds B's published image: the tiers it names reproduce B's labels
    from pipeline.evaluate import dataset_rows
    from pipeline.rebuild import RebuildOptions, rebuild_row
    from envpool.docker_sandbox import DockerSandboxFactory, host_ca_bundle
    from agents.gitrepo import GitTree

    row = dataset_rows(tmp_path / "work")["acme__markb-7"]
    assert "# tier: dependencies" in row["dockerfile"] and "# tier: instance" in row["dockerfile"]
    tree = GitTree(tmp_path / "mirrors" / "acme+markb" / "repo", row["base_commit"]).archive()
    ca = host_ca_bundle()
    cert = rebuild_row(row, tree, tmp_path / "work", client=docker_client, factory=DockerSandboxFactory(
        run_id=f"{RUN_ID}-rebuild"), options=RebuildOptions(run_id=f"{RUN_ID}-rebuild", keep_image=False),
                       ca_bundle=ca.read_bytes() if ca else None)
    assert cert.reproduced, (cert.error, cert.mismatches)


GO_MOD = "module example.com/{name}\n\ngo 1.19\n\nrequire github.com/google/go-cmp v0.5.9\n"
GO_CALC = ('package calc\n\nimport "github.com/google/go-cmp/cmp"\n\n'
           "// Same reports whether a and b hold the same numbers.\nfunc Same(a, b []int) bool { return cmp.Equal(a, b) }\n\n"
           "// Add adds.\nfunc Add(a, b int) int { return a {op} b }\n")
GO_SAME_TEST = 'package calc\n\nimport "testing"\n\nfunc TestSame(t *testing.T) {\n\tif !Same([]int{1}, []int{1}) {\n\t\tt.Fatal("same")\n\t}\n}\n'
GO_ADD_TEST = 'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("add")\n\t}\n}\n'


def go_sum(docker_client) -> str:
    """go.sum of GO_MOD, made by `go mod tidy` in the Go toolchain image (proxy reachable): the
    lockfile both Go repositories below carry."""
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.images import ImageConfig
    from envpool.sandbox import SandboxSpec
    from envpool.toolchains.golang_image import GO_ENV, ensure_image

    image = ensure_image("1.19", ImageConfig(), engine=docker_client).image
    with DockerSandboxFactory(run_id=RUN_ID).sandbox(SandboxSpec(image=image, run_id=RUN_ID, network="bridge",
                                                                  env={**GO_ENV, "GOFLAGS": "-mod=mod"})) as sb:
        sb.put_file("/tmp/m/go.mod", GO_MOD.format(name="probe"))
        sb.put_file("/tmp/m/calc.go", GO_CALC.replace("{op}", "+"))
        r = sb.exec("cd /tmp/m && go mod tidy >/dev/null && cat go.sum", timeout=600)
        assert r.ok, r.output
        return r.output


def go_repo(root: Path, mirrors: Path, name: str, gosum: str) -> dict:
    """`acme/<name>`: a Go module needing go-cmp (go.mod + `gosum`), `Add` subtracting until the
    patch; the test_patch adds TestAdd. Returns the instance (a dict); the bare mirror is at
    `mirrors/acme+<name>/repo`."""
    import subprocess

    work = root / name
    work.mkdir(parents=True)

    def git(*args: str) -> str:
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@x", "GIT_AUTHOR_DATE": "2024-03-01T00:00:00Z",
               "GIT_COMMITTER_DATE": "2024-03-01T00:00:00Z", "PATH": "/usr/bin:/bin"}
        return subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True, text=True).stdout

    (work / "go.mod").write_text(GO_MOD.format(name=name))
    (work / "go.sum").write_text(gosum)
    (work / "calc.go").write_text(GO_CALC.replace("{op}", "-"))
    (work / "same_test.go").write_text(GO_SAME_TEST)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD").strip()
    (work / "calc_test.go").write_text(GO_ADD_TEST)
    git("add", "-A")
    git("commit", "-qm", "test")
    test_patch = git("diff", "HEAD~1", "HEAD")
    (work / "calc.go").write_text(GO_CALC.replace("{op}", "+"))
    git("commit", "-qam", "fix")
    patch = git("diff", "HEAD~1", "HEAD")
    dest = mirrors / f"acme+{name}" / "repo"
    dest.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "-q", "--bare", str(work), str(dest))
    return {"instance_id": f"acme__{name}-1", "repo": f"acme/{name}", "base_commit": base, "patch": patch,
            "test_patch": test_patch, "problem_statement": "Add subtracts", "created_at": "2024-03-01T00:00:00Z",
            "version": "1.0", "language": "go"}


def test_two_repositories_with_the_same_lockfile_share_the_dependency_layer(tmp_path, docker_client):
    gosum = go_sum(docker_client)
    assert "github.com/google/go-cmp v0.5.9" in gosum
    mirrors = tmp_path / "mirrors"
    rows = [go_repo(tmp_path / "src", mirrors, name, gosum) for name in ("gocalc", "gotally")]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    work = tmp_path / "work"
    cfg = load_config(None, [f"mint.run_id={RUN_ID}", f"mint.image_repository={ENV_REPOSITORY}",
                             "mint.memory.enabled=false"],
                      workdir=work, instances=instances, mirrors=[mirrors], use_ray=False, workers=1)
    run_mint(cfg)
    store = ResultStore(work)
    c, d = (store.read_result(r["instance_id"]) for r in rows)
    assert c.outcome == "verified", c.reason
    assert d.outcome == "verified", d.reason
    assert c.FAIL_TO_PASS == ["example.com/gocalc::TestAdd"] and d.FAIL_TO_PASS == ["example.com/gotally::TestAdd"]
    assert d.PASS_TO_PASS == ["example.com/gotally::TestSame"]
    assert d.reused_from is None  # another repository's environment is never reused
    # the same lockfile: the same dependency image, so the same layers at the bottom of both images
    assert c.dependency_key and c.dependency_key == d.dependency_key
    assert c.dependency_image_id == d.dependency_image_id
    dep = docker_client.images.get(c.dependency_image_id)
    dep_layers = dep.attrs["RootFS"]["Layers"]
    for row in (c, d):
        assert docker_client.images.get(row.image).attrs["RootFS"]["Layers"][:len(dep_layers)] == dep_layers
    # the layer holds the module and no file of either repository
    listing = image_has(docker_client, c.dependency_image_id, "find / -xdev -maxdepth 7 -type d -name 'go-cmp@*' "
                                                             "2>/dev/null; ls -A /testbed; true")
    assert "go-cmp@v0.5.9" in listing and "calc.go" not in listing and "go.mod" not in listing
    # the rows' Dockerfiles name the tier and what it was given
    for row in (c, d):
        assert "# tier: dependencies (go modules" in row.dockerfile and "-- go.sum &&" in row.dockerfile


def test_a_reused_rows_dockerfile_rebuilds_its_image(tmp_path, python_image, docker_client):
    """Reuse within a repository stays; the row's Dockerfile is the candidate's steps on the
    candidate's tree, then this tree and the increments, and `swemint rebuild --verify` on it
    reproduces the row's labels."""
    from agents.mint_config import MintConfig
    from agents.gitrepo import GitTree
    from agents.minter import mint_instance
    from agents.models import Instance
    from envpool.docker_sandbox import DockerSandboxFactory, host_ca_bundle
    from pipeline.export import make_row
    from pipeline.rebuild import RebuildOptions, rebuild_row
    from tests.agents.test_reuse_docker import version

    made = []

    def mint(data_dir: Path, candidates=None):
        mirrors = tmp_path / f"mirrors-{data_dir.parent.name}"
        inst = Instance(**build_repository(data_dir, mirrors))
        cfg = MintConfig(workdir=tmp_path / "work", run_id=RUN_ID, image_repository=ENV_REPOSITORY)
        res = mint_instance(inst, mirrors / "acme+reusepkg" / "repo", cfg, candidates=candidates)
        made.append(res.image)
        return inst, res, mirrors / "acme+reusepkg" / "repo"

    i1, first, git1 = mint(version(tmp_path / "v1", 1, "0.1", ""))
    assert first.outcome == "verified", first.reason
    i2, second, git2 = mint(version(tmp_path / "v2", 2, "0.2", "import six  # noqa\n\n", ", install_requires=['six']",
                                    created="2024-06-01T00:00:00Z"), candidates=[first.env])
    assert second.outcome == "verified" and second.reused_from == first.instance_id, second.reason
    assert second.reuse_kind == "same_repo" and second.dependency_key == first.dependency_key
    row = make_row(second, i2, tmp_path / "work")
    assert row["dockerfile"].startswith("# swemint environment for acme/reusepkg @ " + i2.base_commit)
    assert f"COPY trees/{i1.base_commit}.tar.gz /tmp/testbed.tar.gz" in row["dockerfile"]
    ca = host_ca_bundle()
    cert = rebuild_row(row, GitTree(git2, i2.base_commit).archive(), tmp_path / "work", client=docker_client,
                       factory=DockerSandboxFactory(run_id=f"{RUN_ID}-rebuild"),
                       options=RebuildOptions(run_id=f"{RUN_ID}-rebuild", keep_image=False),
                       ca_bundle=ca.read_bytes() if ca else None,
                       earlier={i1.base_commit: GitTree(git1, i1.base_commit).archive()})
    assert cert.reproduced, (cert.error, cert.mismatches)
    assert all(h.ok for h in cert.history), cert.history
