"""Resolving owner/name to a git dir: mirror layouts, clone cache, commit checks, redaction."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from envpool.errors import InstanceInputError
from pipeline.repos import RepoConfig, RepoResolver, commit_exists, redact


def sh(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> tuple[Path, str]:
    """A work-tree repository with one commit; returns (path, sha)."""
    d = tmp_path_factory.mktemp("src")
    sh("git", "init", "-q", str(d))
    (d / "a.py").write_text("x = 1\n")
    sh("git", "-C", str(d), "add", "a.py")
    sh("git", "-C", str(d), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return d, sh("git", "-C", str(d), "rev-parse", "HEAD")


def bare(src: Path, dest: Path, mirror: bool = False) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    sh("git", "clone", "-q", "--mirror" if mirror else "--bare", str(src), str(dest))
    return dest


def test_layout_owner_plus_name_repo_without_config_file(tmp_path, src):
    path, sha = src
    g = bare(path, tmp_path / "m" / "octo+proj" / "repo")
    (g / "config").unlink()  # like /work/.mirror snapshots: HEAD, objects, refs, packed-refs only
    r = RepoResolver(tmp_path / "m", RepoConfig(allow_clone=False), cache_dir=tmp_path / "cache")
    assert r.prepare("octo/proj", sha, "octo__proj-1") == g.absolute()
    assert commit_exists(g, sha) and not commit_exists(g, "0" * 40)


def test_mirror_folder_found_ignoring_case(tmp_path, src):
    """Instances say `burntsushi/ripgrep`, the snapshot is `BurntSushi+ripgrep`."""
    path, sha = src
    g = bare(path, tmp_path / "m" / "BurntSushi+ripgrep" / "repo")
    r = RepoResolver(tmp_path / "m", RepoConfig(allow_clone=False), cache_dir=tmp_path / "cache")
    assert r.prepare("burntsushi/ripgrep", sha, "burntsushi__ripgrep-1") == g.absolute()


def test_layout_owner_slash_name_dot_git_and_flat_git_dir(tmp_path, src):
    path, sha = src
    g1 = bare(path, tmp_path / "m1" / "octo" / "proj.git", mirror=True)
    g2 = bare(path, tmp_path / "m2" / "other+lib")
    r = RepoResolver([tmp_path / "m1", tmp_path / "m2"], RepoConfig(allow_clone=False), cache_dir=tmp_path / "c")
    assert r.resolve("octo/proj") == g1.absolute()
    assert r.resolve("other/lib") == g2.absolute()


def test_clone_with_work_tree_under_repo_resolves_to_dot_git(tmp_path, src):
    path, sha = src
    dest = tmp_path / "m" / "octo+proj" / "repo"
    dest.parent.mkdir(parents=True)
    sh("git", "clone", "-q", str(path), str(dest))
    r = RepoResolver(tmp_path / "m", RepoConfig(allow_clone=False), cache_dir=tmp_path / "c")
    assert r.prepare("octo/proj", sha) == (dest / ".git").absolute()


def test_missing_commit_and_missing_repo_name_the_instance(tmp_path, src):
    path, _ = src
    bare(path, tmp_path / "m" / "octo+proj" / "repo")
    r = RepoResolver(tmp_path / "m", RepoConfig(allow_clone=False), cache_dir=tmp_path / "c")
    with pytest.raises(InstanceInputError) as e:
        r.prepare("octo/proj", "deadbeef" * 5, "octo__proj-7")
    assert e.value.instance_id == "octo__proj-7" and "base_commit deadbeef" in str(e.value)
    with pytest.raises(InstanceInputError) as e:
        r.resolve("nobody/here", "nobody__here-1")
    assert e.value.instance_id == "nobody__here-1"
    assert "nobody+here/repo" in str(e.value) and "cloning is off" in str(e.value)
    with pytest.raises(InstanceInputError, match="owner/name"):
        r.resolve("justname")


def test_clone_into_cache_when_no_mirror_has_it(tmp_path, src):
    path, sha = src
    bare(path, tmp_path / "srv" / "octo" / "proj.git")
    cfg = RepoConfig(url_template=f"file://{tmp_path}/srv/{{repo}}.git")
    r = RepoResolver([tmp_path / "empty"], cfg, cache_dir=tmp_path / "cache")
    got = r.prepare("octo/proj", sha, "octo__proj-1")
    assert got == (tmp_path / "cache" / "octo+proj.git").absolute()
    assert not (tmp_path / "cache" / "octo+proj.git.part").exists()
    # a new resolver finds the cached clone even when the source is gone
    shutil.rmtree(tmp_path / "srv")
    assert RepoResolver([], cfg, cache_dir=tmp_path / "cache").resolve("octo/proj") == got


def test_failed_clone_is_a_clean_error_without_credentials(tmp_path):
    cfg = RepoConfig(url_template="https://user:S3CRET@127.0.0.1:9/{repo}.git", clone_timeout=30)
    r = RepoResolver([], cfg, cache_dir=tmp_path / "cache")
    with pytest.raises(InstanceInputError) as e:
        r.resolve("octo/proj", "octo__proj-1")
    msg = str(e.value)
    assert "S3CRET" not in msg and "cloning https://***@127.0.0.1:9/octo/proj.git failed" in msg
    assert not any((tmp_path / "cache").glob("*.part"))


def test_redact():
    assert redact("see https://x-access-token:abc@github.com/a/b.git") == "see https://***@github.com/a/b.git"
    assert redact("https://github.com/a/b.git") == "https://github.com/a/b.git"


def test_failed_clone_is_not_retried_for_every_instance(tmp_path, monkeypatch):
    import pipeline.repos as repos

    runs = []
    real = repos.subprocess.run

    def counting(args, **kw):
        runs.append(args)
        return real(args, **kw)

    monkeypatch.setattr(repos.subprocess, "run", counting)
    r = RepoResolver([], RepoConfig(url_template=f"file://{tmp_path}/none/{{repo}}.git"), cache_dir=tmp_path / "c")
    for n in (1, 2):
        with pytest.raises(InstanceInputError) as e:
            r.resolve("octo/proj", f"octo__proj-{n}")
        assert e.value.instance_id == f"octo__proj-{n}" and "cloning" in str(e.value)
    assert sum("clone" in a for a in runs) == 1
