"""Demo input: small Python repositories (kept as data in `data/demo/`) turned into real git
mirrors and a SWE-bench instance file at run time.

Each `data/demo/<owner>__<name>/` holds `base/` (the tree at the base commit), `tests/` (test
files the PR replaces or adds), `fix/` (non-test files the fix replaces or adds) and
`meta.json` (number, problem_statement, created_at, version, commit messages, gold
FAIL_TO_PASS / PASS_TO_PASS, expected_outcome). `make_demo` builds, per repository, a bare
mirror `dest/mirrors/<owner>+<name>/repo` with this history:

    initial (non-test files of base) -> base (adds base tests)      = `main` before the PR
    base -> "tests" commit (tests/) -> "fix" commit (fix/)            = `pull/<N>` (and `main`)

Author and committer identities are fixed and dates derived from `created_at` (the commits
precede the PR), so base commits are the same on every machine and every run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from envpool.patches import is_test_path
from envpool.resources import resource

DEMO_SOURCE = resource("data/demo")
"""Where the demo repositories are kept: the checkout's `data/demo/`, or a wheel's copy."""

_IDENTITY = {"GIT_AUTHOR_NAME": "Demo Author", "GIT_AUTHOR_EMAIL": "author@demo.invalid",
             "GIT_COMMITTER_NAME": "Demo Maintainer", "GIT_COMMITTER_EMAIL": "maint@demo.invalid"}
# commit dates, seconds before the PR's created_at: initial, base, tests, fix
_COMMIT_OFFSETS = (3 * 86400, 2 * 86400, 3600, 1800)


class DemoPaths(NamedTuple):
    """What `make_demo` wrote: the mirrors root (for `--mirrors`) and the instance file."""

    mirrors: Path
    instances: Path


def _git(cwd: Path, *args: str, date: int | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_IDENTITY, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
    r = subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false", *args],
                       cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {r.stderr.strip()}")
    return r.stdout


def _files(root: Path) -> list[str]:
    """Relative posix paths of the regular files under `root` (sorted)."""
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def _copy(src_root: Path, rels: list[str], dest_root: Path) -> None:
    for rel in rels:
        target = dest_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src_root / rel, target)
        os.chmod(target, 0o755 if os.access(src_root / rel, os.X_OK) else 0o644)


def _commit(work: Path, message: str, date: int) -> str:
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "--allow-empty", "-m", message, date=date)
    return _git(work, "rev-parse", "HEAD").strip()


def _is_test_path(rel: str) -> bool:
    """A test path of a (Python) demo repository by the one test-path rule set, as the sources'
    split of its PR into patch / test_patch decides (`envpool.patches.is_test_path`)."""
    return is_test_path(rel, "python")


def demo_repositories(source: Path | None = None) -> list[Path]:
    """The demo repository folders under `source` (default DEMO_SOURCE), sorted by name."""
    root = Path(source) if source else DEMO_SOURCE
    return sorted(p for p in root.iterdir() if (p / "meta.json").is_file())


def build_repository(data_dir: Path, mirrors: Path) -> dict:
    """Build the bare mirror of one demo repository; return its SWE-bench instance (a dict).

    Raises RuntimeError when git fails, ValueError when the data mixes test and non-test files
    (everything in `tests/` must be a test path, nothing in `fix/` may be one).
    """
    owner, name = data_dir.name.split("__", 1)
    meta = json.loads((data_dir / "meta.json").read_text())
    base_files = _files(data_dir / "base")
    test_files = _files(data_dir / "tests")
    fix_files = _files(data_dir / "fix")
    if not all(_is_test_path(f) for f in test_files) or any(_is_test_path(f) for f in fix_files):
        raise ValueError(f"{data_dir}: tests/ must hold only test files and fix/ none")
    number = int(meta["number"])
    created = datetime.fromisoformat(meta["created_at"])  # 3.11+: "Z" and no zone
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    t_init, t_base, t_tests, t_fix = (int(created.timestamp()) - o for o in _COMMIT_OFFSETS)
    bare = mirrors / f"{owner}+{name}" / "repo"
    if bare.exists():
        shutil.rmtree(bare)
    bare.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"swemint-demo-{name}-") as tmp:
        work = Path(tmp) / name
        work.mkdir()
        _git(work, "init", "-q", "-b", "main")
        _copy(data_dir / "base", [f for f in base_files if not _is_test_path(f)], work)
        _commit(work, "Initial commit", t_init)
        _copy(data_dir / "base", [f for f in base_files if _is_test_path(f)], work)
        base = _commit(work, meta.get("base_message", "Add tests"), t_base)
        _git(work, "checkout", "-q", "-b", f"pull/{number}")
        _copy(data_dir / "tests", test_files, work)
        _commit(work, meta.get("test_message", "Add tests for the fix"), t_tests)
        _copy(data_dir / "fix", fix_files, work)
        head = _commit(work, meta.get("fix_message", "Fix"), t_fix)
        _git(work, "checkout", "-q", "main")
        _git(work, "merge", "-q", "--ff-only", f"pull/{number}")
        _git(work, "update-ref", f"refs/pull/{number}/head", head)
        patch = _git(work, "diff", "--no-color", "--no-ext-diff", "--no-renames", base, head,
                     "--", *fix_files) if fix_files else ""
        test_patch = _git(work, "diff", "--no-color", "--no-ext-diff", "--no-renames", base, head,
                          "--", *test_files) if test_files else ""
        _git(bare.parent, "clone", "-q", "--bare", str(work), "repo")
        _git(bare, "fetch", "-q", str(work), f"refs/pull/{number}/head:refs/pull/{number}/head")
        _git(bare, "remote", "remove", "origin")
    return {
        "instance_id": f"{owner}__{name}-{number}",
        "repo": f"{owner}/{name}",
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "problem_statement": meta["problem_statement"],
        "hints_text": "",
        "created_at": meta["created_at"],
        "version": meta["version"],
        "FAIL_TO_PASS": list(meta["FAIL_TO_PASS"]),
        "PASS_TO_PASS": list(meta["PASS_TO_PASS"]),
        "environment_setup_commit": None,
        "language": "python",
    }


def expected_outcomes(source: Path | None = None) -> dict[str, str]:
    """instance_id -> the outcome the demo is built to produce (`verified`, `no_fail_to_pass`)."""
    out = {}
    for d in demo_repositories(source):
        meta = json.loads((d / "meta.json").read_text())
        owner, name = d.name.split("__", 1)
        out[f"{owner}__{name}-{meta['number']}"] = meta.get("expected_outcome", "verified")
    return out


def make_demo(dest: Path, source: Path | None = None) -> DemoPaths:
    """Write the demo mirrors under `dest/mirrors` and the instances to `dest/instances.jsonl`.

    Returns DemoPaths(mirrors, instances) (a tuple: `mirrors, instances = make_demo(d)`).
    Rerunnable: existing demo mirrors are rebuilt, with identical commit ids. Raises
    RuntimeError when git is missing or fails.
    """
    dest = Path(dest).absolute()
    mirrors = dest / "mirrors"
    mirrors.mkdir(parents=True, exist_ok=True)
    rows = [build_repository(d, mirrors) for d in demo_repositories(source)]
    instances = dest / "instances.jsonl"
    tmp = instances.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(instances)
    return DemoPaths(mirrors, instances)
