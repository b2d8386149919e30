"""Generated worlds for `FakeGitHub`: hundreds of PRs over several repositories.

`make_world(n_repos=3, pulls_per_repo=170)` builds repositories in three ecosystems (Python,
Go, TypeScript) whose closed PRs follow a fixed, seeded mix of cases: good pairs via closing
keywords, weak mentions confirmed (or not) by the issue timeline, unmerged PRs, PRs without an
issue, without tests, without code, and low-quality issues. Every PR has its own issue
(numbers: issue 2k+1, PR 2k+2). `add_pulls(world, repo, n)` appends `n` newer PRs, as a
nightly crawl would find them. `expected_accepted(world)` counts the PRs meant to be accepted.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

START = datetime(2023, 1, 2, tzinfo=timezone.utc)
LANGS = [("Python", "src/{pkg}/mod{n}.py", "tests/test_mod{n}.py"),
         ("Go", "pkg/{pkg}/mod{n}.go", "pkg/{pkg}/mod{n}_test.go"),
         ("TypeScript", "src/{pkg}/mod{n}.ts", "src/{pkg}/mod{n}.spec.ts")]
CASES = [("good", 55), ("weak_ok", 8), ("weak_bad", 7), ("unmerged", 10), ("no_issue", 8),
         ("no_tests", 6), ("no_code", 3), ("low_quality", 3)]
"""Case name and weight (percent) of generated PRs."""


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _section(path: str, n: int) -> list[str]:
    return [f"diff --git a/{path} b/{path}", "index 1111111..2222222 100644", f"--- a/{path}",
            f"+++ b/{path}", "@@ -1,3 +1,3 @@", " first line", f"-old value {n}", f"+new value {n}",
            " last line"]


def _pull_and_issue(repo: str, lang_idx: int, k: int, case: str, rng: random.Random) -> tuple[dict, dict]:
    _, code_t, test_t = LANGS[lang_idx % len(LANGS)]
    pkg = repo.split("/")[1]
    issue_n, pr_n = 2 * k + 1, 2 * k + 2
    created = START + timedelta(hours=6 * k)
    merged = created + timedelta(days=1)
    merge_sha = f"{rng.getrandbits(160):040x}"
    diff: list[str] = []
    if case != "no_code":
        diff += _section(code_t.format(pkg=pkg, n=k), k)
    if case != "no_tests":
        diff += _section(test_t.format(pkg=pkg, n=k), k)
    body = {"good": f"This change fixes #{issue_n} by handling the empty case.",
            "weak_ok": f"Follow-up to the discussion in #{issue_n}.",
            "weak_bad": f"Related to #{issue_n}, but does not close it.",
            "no_issue": "Routine maintenance."}.get(case, f"Fixes #{issue_n}")
    first_commit = created - timedelta(hours=1)
    author = {"name": "Dev", "email": "dev@example.org", "date": _iso(first_commit)}
    comments = [{"body": f"I can reproduce this ({k}).",
                 "created_at": _iso(first_commit - timedelta(hours=2))},
                {"body": f"Fixed by the PR, thanks ({k}).",
                 "created_at": _iso(merged + timedelta(minutes=1))}]
    timeline = [{"event": "cross-referenced", "created_at": _iso(created),
                 "source": {"issue": {"number": pr_n}}}]
    if case in ("good", "weak_ok", "no_tests", "no_code", "low_quality"):
        timeline.append({"event": "closed", "created_at": _iso(merged + timedelta(seconds=5)),
                         "commit_id": merge_sha})
    pull = {"number": pr_n, "title": f"Fix handling of case {k}", "body": body,
            "created_at": _iso(created), "updated_at": _iso(merged), "closed_at": _iso(merged),
            "merged_at": None if case == "unmerged" else _iso(merged),
            "merge_commit_sha": merge_sha, "base": {"sha": f"{rng.getrandbits(160):040x}"},
            "head": {"sha": f"{rng.getrandbits(160):040x}"}, "_diff": diff,
            "_commits": [{"sha": f"{rng.getrandbits(160):040x}",
                          "commit": {"message": f"fix case {k}", "author": author, "committer": author}}]}
    low = case == "low_quality"
    issue = {"number": issue_n, "title": "bug" if low else f"Crash when input {k} is empty",
             "body": "" if low else
             f"Calling `f({k})` with an empty value raises.\n\n```\nTraceback ...\nValueError\n```",
             "state": "open" if case == "weak_bad" and k % 2 else "closed",
             "created_at": _iso(created - timedelta(days=2)),
             "updated_at": _iso(merged + timedelta(minutes=1)),
             "closed_at": _iso(merged + timedelta(seconds=5)), "_comments": comments,
             "_timeline": timeline,
             "_case": case}
    pull["_case"] = case
    return pull, issue


def _case(rng: random.Random) -> str:
    return rng.choices([c for c, _ in CASES], weights=[w for _, w in CASES])[0]


def make_world(n_repos: int = 3, pulls_per_repo: int = 170, seed: int = 7) -> dict:
    """A world of `n_repos` repositories with `pulls_per_repo` closed PRs each."""
    rng = random.Random(seed)
    world = {}
    for r in range(n_repos):
        lang = LANGS[r % len(LANGS)][0]
        full = f"bench/repo{r}"
        data = {"repo": {"full_name": full, "language": lang, "stargazers_count": 5000 - r,
                         "forks_count": 800, "open_issues_count": 40,
                         "created_at": "2015-01-01T00:00:00Z", "updated_at": "2023-01-01T00:00:00Z"},
                "languages": {lang: 90_000, "Shell": 5_000}, "counts": {"issues": 400, "pulls": 600},
                "pulls": [], "issues": [], "_lang": r}
        world[full] = data
        add_pulls(world, full, pulls_per_repo, rng)
    return world


def add_pulls(world: dict, repo: str, n: int, rng: random.Random | None = None) -> list[int]:
    """Append `n` PRs (and their issues) newer than every existing one; their numbers."""
    rng = rng or random.Random(len(world[repo]["pulls"]))
    data = world[repo]
    start = len(data["pulls"])
    numbers = []
    for k in range(start, start + n):
        pull, issue = _pull_and_issue(repo, data.get("_lang", 0), k, _case(rng), rng)
        data["pulls"].append(pull)
        data["issues"].append(issue)
        numbers.append(pull["number"])
    return numbers


def expected_accepted(world: dict) -> int:
    """PRs of `world` whose case should yield an instance (good and weak_ok)."""
    return sum(1 for d in world.values() for p in d["pulls"] if p["_case"] in ("good", "weak_ok"))
