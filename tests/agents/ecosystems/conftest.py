"""Shared helpers for the polyglot ecosystem tests: a small git repository the test writes itself
(one base commit, optionally patches made as git diffs), an Instance on it, and a fixture that
mints such a repository end to end in Docker with one ecosystem forced.

Import the helpers with ``from tests.agents.ecosystems.conftest import make_repo, ...``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from agents.gitrepo import GitTree
from agents.models import Instance


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write `files` (path relative to `root` -> text) under `root`, creating folders."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def git(work: Path, *args: str, when: str | None = None) -> str:
    """stdout of ``git <args>`` in `work` as user t <t@t>; `when` (ISO 8601) dates a commit.
    Raises subprocess.CalledProcessError when git fails."""
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else None
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=work, check=True,
                          capture_output=True, text=True, env=env).stdout


def make_repo(root: Path, files: dict[str, str], when: str | None = None,
              gitlinks: dict[str, str] | None = None) -> tuple[Path, str]:
    """A git repository at ``root/"repo"`` whose one commit ("base", dated `when`, else now)
    holds `files` and `gitlinks` (path -> commit sha: submodule entries, mode 160000, whose
    commits the repository does not have, as in a mirror). Returns (its .git directory, the
    commit's sha)."""
    work = root / "repo"
    work.mkdir(parents=True, exist_ok=True)
    write_files(work, files)
    git(work, "init", "-q")
    git(work, "add", "-A")
    for path, sha in (gitlinks or {}).items():  # an empty folder, as a clone leaves an uninitialised submodule
        (work / path).mkdir(parents=True, exist_ok=True)
        git(work, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    git(work, "commit", "-qm", "base", when=when)
    return work / ".git", git(work, "rev-parse", "HEAD").strip()


def make_tree(root: Path, files: dict[str, str], when: str | None = None,
              gitlinks: dict[str, str] | None = None) -> GitTree:
    """`make_repo` as the GitTree the ecosystems analyse."""
    return GitTree(*make_repo(root, files, when, gitlinks))


def make_patches(git_dir: Path, tests: dict[str, str], fix: dict[str, str]) -> tuple[str, str]:
    """Write `tests` and `fix` over the work tree of `git_dir` and return (test_patch, patch):
    the diffs of each set of files against HEAD (the work tree keeps the new files)."""
    work = git_dir.parent
    write_files(work, {**tests, **fix})
    git(work, "add", "-A")
    return (git(work, "diff", "--cached", "--no-color", "HEAD", "--", *tests),
            git(work, "diff", "--cached", "--no-color", "HEAD", "--", *fix))


def make_instance(base: GitTree | str, language: str | None = None, created_at: str = "2022-03-01 10:00:00", *,
                  instance_id: str = "acme__calc-1", repo: str = "acme/calc", patch: str = "",
                  test_patch: str = "") -> Instance:
    """An Instance on `base` (a GitTree or a commit sha); the other fields as given."""
    commit = base.commit if isinstance(base, GitTree) else base
    return Instance(instance_id=instance_id, repo=repo, base_commit=commit, patch=patch, test_patch=test_patch,
                    created_at=created_at, language=language)


def toolchain_layers(store, *names: str) -> list[tuple[str, str, str]]:
    """(name, version, Debian suite) of each toolchain image `swemint/<name>:<version>-<hash>`
    that `store` (a FakeImageStore) layered on a Debian base, in order; only `names` when given."""
    out = []
    for kind, tag, parent, _ in store.built:
        repo, _, rest = tag.partition(":")
        name = repo.removeprefix("swemint/")
        if kind == "layer" and parent.startswith("swemint/debian:") and (not names or name in names):
            out.append((name, rest.rsplit("-", 1)[0], parent.split(":", 1)[1].rsplit("-", 1)[0]))
    return out


def force_ecosystem(monkeypatch, eco) -> None:
    """Make `eco` the only registered ecosystem (analysis, planning and the flow see just it)."""
    import agents.ecosystems as registry

    monkeypatch.setattr(registry, "ecosystems", lambda: [eco])


@pytest.fixture
def mint_with(tmp_path, docker_client, monkeypatch):
    """``mint(ecosystem, files, name, **instance_fields)`` -> InstanceResult: `files` committed as
    a one-commit repository, minted (agents.minter.mint_instance, real Docker) with `ecosystem`
    forced, as instance ``acme__calc-<name>`` (`instance_fields` as in `make_instance`; `tests` /
    `fix`: files whose diffs over `files` become the test_patch / patch; `when`: the commit's
    date; `gitlinks`: submodule entries, as in `make_repo`; `mint`: MintConfig fields). The
    environment images made are removed afterwards."""
    import agents.minter as minter
    from agents.mint_config import MintConfig
    from tests.session import ENV_REPOSITORY, SESSION

    made: list[str] = []

    def run(ecosystem, files: dict[str, str], name: str, *, tests: dict[str, str] | None = None,
            fix: dict[str, str] | None = None, when: str | None = None, gitlinks: dict[str, str] | None = None,
            mint: dict | None = None, **fields):
        force_ecosystem(monkeypatch, ecosystem)
        git_dir, sha = make_repo(tmp_path / name, files, when=when, gitlinks=gitlinks)
        if tests is not None or fix is not None:  # the patches as diffs over `files`
            fields["test_patch"], fields["patch"] = make_patches(git_dir, tests or {}, fix or {})
        inst = make_instance(sha, instance_id=f"acme__calc-{name}", **fields)
        cfg = MintConfig(workdir=tmp_path / "w", run_id=f"{ecosystem.name}-docker-{name}-{SESSION}",
                         image_repository=ENV_REPOSITORY, **(mint or {}))
        res = minter.mint_instance(inst, git_dir, cfg)
        if res.image:
            made.append(res.image)
        return res

    yield run
    for image in made:
        docker_client.images.remove(image, force=True)
