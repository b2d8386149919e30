"""What the `swemint run` tests share: small git repositories the tests write (with squash-merge
history), a fake-GitHub world whose pull requests are real commits of such a repository, and a
fake build function (no Docker) whose verdict is written in the fix.

`make_repo(path, units, ...)` writes a repository and returns its units; `bare_mirror` clones it
bare under `mirrors/owner+name/repo`; `world_for(repo, full_name, units)` serves its units as
merged PRs with closing keywords. `fake_mint` is importable by workers and subprocesses
(`mint_function: "tests.pipeline.flow_support:fake_mint"`); it sleeps `SWEMINT_FAKE_MINT_S`
seconds (default 0) and answers `verified` unless the patch contains `NO_F2P`; like the real minter, its
row carries the language of the instance it was given.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from agents.models import EnvRecord, InstanceResult

IDENT = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org", "GIT_COMMITTER_NAME": "Dev",
         "GIT_COMMITTER_EMAIL": "dev@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, **IDENT}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout


@dataclass
class Unit:
    """One squash-merged change: its number, commit, parent, message, diff and merge time."""

    number: int
    sha: str
    parent: str
    message: str
    diff: str
    when: datetime


def make_repo(path: Path, n_units: int, *, kind: str = "python", start: int = 1, no_f2p: tuple[int, ...] = (),
              tag: str | None = "v1.4.0") -> list[Unit]:
    """A repository at `path` (created, or extended when it exists) with `n_units` squash
    commits `Fix case K (#N)` that change code and tests; `kind` python or cpp; units whose
    number is in `no_f2p` carry the marker `NO_F2P` in their fix. Returns the new units."""
    path.mkdir(parents=True, exist_ok=True)
    code, test = ("src/lib/mod{k}.py", "tests/test_mod{k}.py") if kind == "python" else \
        ("src/mod{k}.cpp", "tests/test_mod{k}.cpp")
    if not (path / ".git").exists():
        git(path, "init", "-q", "-b", "main")
        if kind == "python":
            (path / "pyproject.toml").write_text('[project]\nname = "lib"\nversion = "1.4.0"\n')
        else:
            (path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.10)\nproject(lib CXX)\n")
        (path / "README.md").write_text("lib\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "initial", date="2024-01-01T00:00:00Z")
        if tag:
            git(path, "tag", tag)
    units = []
    for i in range(n_units):
        k = start + i
        number = 100 + 2 * k
        when = datetime(2024, 2, 1, tzinfo=timezone.utc) + timedelta(days=k)
        parent = git(path, "rev-parse", "HEAD").strip()
        c, t = path / code.format(k=k), path / test.format(k=k)
        c.parent.mkdir(parents=True, exist_ok=True)
        t.parent.mkdir(parents=True, exist_ok=True)
        marker = "NO_F2P" if number in no_f2p else "ok"
        c.write_text(f"value_{k} = '{marker}'\n")
        t.write_text(f"# test of value_{k}\nassert True\n")
        message = f"Fix case {k} when the input is empty (#{number})\n\nThe parser crashed on empty input {k}.\n"
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", message, date=_iso(when, 12))
        sha = git(path, "rev-parse", "HEAD").strip()
        diff = git(path, "diff", parent, sha)
        units.append(Unit(number, sha, parent, message, diff, when))
    return units


def bare_mirror(work: Path, mirrors: Path, full_name: str) -> Path:
    """A bare clone of `work` at `mirrors/owner+name/repo` (replaced when it exists)."""
    dest = mirrors / full_name.replace("/", "+") / "repo"
    if dest.exists():
        git(dest, "fetch", "-q", "--tags", str(work), "+refs/heads/*:refs/heads/*")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    git(work, "clone", "-q", "--bare", str(work), str(dest))
    return dest


def _iso(day: datetime, hour: int) -> str:
    return (day.replace(hour=0) + timedelta(hours=hour)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pull_and_issue(u: Unit) -> tuple[dict, dict]:
    """A merged PR (number `u.number`) resolving issue `u.number - 1`, with `u`'s diff."""
    issue_n = u.number - 1
    pull = {"number": u.number, "title": u.message.splitlines()[0], "body": f"Fixes #{issue_n}.",
            "created_at": _iso(u.when, 8), "updated_at": _iso(u.when, 12), "closed_at": _iso(u.when, 12),
            "merged_at": _iso(u.when, 12), "merge_commit_sha": u.sha, "base": {"sha": u.parent},
            "head": {"sha": "f" * 40}, "_diff": u.diff, "_commits": []}
    issue = {"number": issue_n, "title": f"Crash on empty input ({u.number})",
             "body": "Calling the parser with an empty value raises.\n\n```\nTraceback ...\nValueError\n```",
             "state": "closed", "created_at": _iso(u.when, 1), "updated_at": _iso(u.when, 12),
             "closed_at": _iso(u.when, 12), "_comments": [], "_timeline": []}
    return pull, issue


def world_for(full_name: str, units: list[Unit], language: str = "C++") -> dict:
    """A FakeGitHub world with repository `full_name` whose PRs are `units`."""
    pulls, issues = zip(*(pull_and_issue(u) for u in units), strict=True) if units else ((), ())
    return {full_name: {"repo": {"full_name": full_name, "language": language, "stargazers_count": 5000,
                                 "forks_count": 800, "open_issues_count": 4, "created_at": "2015-01-01T00:00:00Z",
                                 "updated_at": "2024-01-01T00:00:00Z"},
                        "languages": {language: 90_000}, "counts": {"issues": 400, "pulls": 600},
                        "pulls": list(pulls), "issues": list(issues)}}


def add_units(world: dict, full_name: str, units: list[Unit]) -> None:
    """Append `units` as newer PRs of `full_name`."""
    for u in units:
        pull, issue = pull_and_issue(u)
        world[full_name]["pulls"].append(pull)
        world[full_name]["issues"].append(issue)


def fake_mint(instance, repo_path, config, env=None, candidates=None) -> InstanceResult:
    """A build stage stand-in (see the module docstring); writes nothing but its row."""
    time.sleep(float(os.environ.get("SWEMINT_FAKE_MINT_S", "0")))
    ok = "NO_F2P" not in instance.patch
    return InstanceResult(
        instance_id=instance.instance_id, repo=instance.repo, outcome="verified" if ok else "no_fail_to_pass",
        reason="" if ok else "no test fails before the patch", FAIL_TO_PASS=["tests/t.py::test_x"] if ok else [],
        timings={"total": 0.1}, version=instance.version, language=instance.language,
        env=EnvRecord(instance_id=instance.instance_id, repo=instance.repo, base_commit=instance.base_commit,
                      image_tag=f"fake:{instance.instance_id}") if ok else None)
