"""Find the host git directory of a repository (`owner/name`) and check a commit is in it.

Lookup order, first hit wins, under each mirrors dir `M`:
1. `M/owner+name/repo`        a bare git dir (as `/work/.mirror/pytest-dev+pytest/repo`), or a
                              clone whose git dir is `repo/.git`;
2. `M/owner/name.git`         a bare mirror (`git clone --mirror` layout);
3. `M/owner+name`             itself a git dir (or a clone with `.git`);
4. a folder of `M` whose name equals `owner+name` ignoring case (GitHub names are case-insensitive).
Then the clone cache (`cache_dir/owner+name.git`), then a `git clone --mirror` from
`url_template` into the cache when cloning is allowed. Any failure is an `InstanceInputError`
naming the instance and the places looked at; credentials in URLs never reach a message.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from envpool.errors import InstanceInputError
from envpool.naming import check_repo

GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}
"""Never let git wait for a password on a batch host."""


class RepoConfig(BaseModel):
    """Where repositories come from.

    `url_template`: clone URL, `{repo}` is `owner/name`. `clone_timeout`: seconds per clone.
    `cache_dir`: clones go there (default `WORKDIR/repos`, set by the driver).
    """

    model_config = ConfigDict(extra="forbid")
    url_template: str = "https://github.com/{repo}.git"
    allow_clone: bool = True
    """Clone repositories that no mirror has (off on air-gapped hosts to fail fast)."""
    clone_timeout: float = 900.0
    cache_dir: Path | None = None


def redact(text: str) -> str:
    """Hide `user:password@` in URLs (tokens in clone URLs must not reach logs)."""
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1***@", text)


def is_git_dir(path: Path) -> bool:
    """True when `path` looks like a git directory (has `HEAD` and `objects/`)."""
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def _git_dir_of(path: Path) -> Path | None:
    if is_git_dir(path):
        return path
    if is_git_dir(path / ".git"):
        return path / ".git"
    return None


def git(git_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `git --git-dir=git_dir args...` (safe.directory=* : mirrors may belong to another
    user); returns the completed process, never raises on a nonzero exit."""
    return subprocess.run(["git", "-c", "safe.directory=*", f"--git-dir={git_dir}", *args],
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **GIT_ENV})


def commit_exists(git_dir: Path, commit: str) -> bool:
    """True when `commit` names a commit object in `git_dir` (`git cat-file -e <c>^{commit}`)."""
    return git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


class RepoResolver:
    """Resolves `owner/name` to a git dir; results are cached per repository.

    Args:
        mirrors: mirror roots searched in order (see the module docstring for layouts).
        config: clone settings; `config.cache_dir` (or `cache_dir`) holds clones.
    Thread-safe: one lock per repository, so one clone per repository at a time. A repository
    that could not be found or cloned fails at once for its later instances (new resolver = retry).
    """

    def __init__(self, mirrors: list[Path] | Path | None = None, config: RepoConfig | None = None,
                 cache_dir: Path | None = None):
        if isinstance(mirrors, (str, Path)):
            mirrors = [Path(mirrors)]
        self.mirrors = [Path(m) for m in (mirrors or [])]
        self.config = config or RepoConfig()
        self.cache_dir = Path(cache_dir or self.config.cache_dir or "repos")
        self._found: dict[str, Path] = {}
        self._failed: dict[str, str] = {}  # repo -> why; a failed clone is not retried per instance
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def candidates(self, repo: str) -> list[Path]:
        """The paths looked at for `repo`, in order (mirrors, then the clone cache)."""
        owner, name = repo.split("/", 1)
        flat = f"{owner}+{name}"
        out = []
        for m in self.mirrors:
            out += [m / flat / "repo", m / owner / f"{name}.git", m / owner / name, m / flat]
        for m in self.mirrors:  # GitHub names are case-insensitive: BurntSushi/ripgrep = burntsushi/ripgrep
            try:
                other = [e for e in m.iterdir() if e.name.lower() == flat.lower() and e.name != flat]
            except OSError:
                other = []
            out += [p for e in other for p in (e / "repo", e)]
        out.append(self.cache_dir / f"{flat}.git")
        return out

    def _lock(self, repo: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(repo, threading.Lock())

    def resolve(self, repo: str, instance_id: str | None = None) -> Path:
        """The git dir of `repo` (`owner/name`), cloning into the cache if allowed.

        Raises `InstanceInputError` when `repo` is malformed (`envpool.naming.check_repo`: `..`
        or a third `/` would lead out of the mirror roots), or no mirror has it and cloning is
        off or fails (the message lists where it looked and the redacted git error).
        """
        try:  # it becomes a path below each mirror root and a clone URL
            check_repo(repo)
        except ValueError as e:
            raise InstanceInputError(str(e), instance_id=instance_id) from None
        with self._lock(repo):
            if repo in self._found:
                return self._found[repo]
            if repo in self._failed:
                raise InstanceInputError(self._failed[repo], instance_id=instance_id)
            for cand in self.candidates(repo):
                found = _git_dir_of(cand)
                if found is not None:
                    self._found[repo] = found.absolute()
                    return self._found[repo]
            looked = ", ".join(str(c) for c in self.candidates(repo))
            try:
                if not self.config.allow_clone:
                    raise InstanceInputError(f"repository {repo} not found (looked at {looked}; cloning is off)",
                                             instance_id=instance_id)
                self._found[repo] = self._clone(repo, instance_id, looked).absolute()
            except InstanceInputError as e:
                self._failed[repo] = e.message
                raise
            return self._found[repo]

    def _clone(self, repo: str, instance_id: str | None, looked: str) -> Path:
        url = self.config.url_template.format(repo=repo)
        dest = self.cache_dir / f"{repo.replace('/', '+')}.git"
        part = dest.with_name(dest.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.run(["git", "clone", "--mirror", "--quiet", url, str(part)], capture_output=True,
                                  text=True, timeout=self.config.clone_timeout, env={**os.environ, **GIT_ENV})
            err = proc.stderr.strip().splitlines()[-1:] if proc.returncode else None
        except subprocess.TimeoutExpired:
            err = [f"timed out after {self.config.clone_timeout:.0f} s"]
        if err is not None:
            shutil.rmtree(part, ignore_errors=True)
            raise InstanceInputError(
                f"repository {repo} not found (looked at {looked}) and cloning {redact(url)} failed: "
                f"{redact(' '.join(err)) or 'no output'}", instance_id=instance_id)
        os.replace(part, dest)
        return dest

    def check_commit(self, git_dir: Path, commit: str, instance_id: str | None = None) -> None:
        """Raise `InstanceInputError` unless `commit` is a commit in `git_dir`."""
        r = git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
        if r.returncode != 0:
            why = " ".join(r.stderr.split())[-300:]
            raise InstanceInputError(f"base_commit {commit} not found in {git_dir}" + (f" (git: {why})" if why else ""),
                                     instance_id=instance_id)

    def prepare(self, repo: str, base_commit: str, instance_id: str | None = None) -> Path:
        """`resolve` then `check_commit`; returns the git dir to hand to the minter."""
        git_dir = self.resolve(repo, instance_id)
        self.check_commit(git_dir, base_commit, instance_id)
        return git_dir
