#!/usr/bin/env python
"""Apply the selection rule of issue 25's generalisation set (`data/genset/RULE.md`) to the
ranking lists, one candidate at a time, and say which candidate to fetch next.

    .venv/bin/python scripts/genset_select.py                 # the table so far; what to fetch next
    .venv/bin/python scripts/genset_select.py --refused owner/name:"why"   # record a fetch refusal

Reads the ranking `Top100/<List>.md` at the rule's commit from the ranking repository's mirror,
walks each group in rank order and applies E1–E3 (no snapshot needed), then E5–E7 on the
candidate's mirror `MIRRORS/owner+name/repo` when it is there (E4: a refusal recorded with
`--refused` disqualifies; a candidate with neither a mirror nor a refusal is the next to fetch,
and the group's walk stops there). E7 runs `pipeline.sources.gitlocal.mine` with
`single_commits: false` over the last `--window` first-parent commits (as `yield_local.py`
configures the source). Writes `data/genset/SELECTION.md` (every candidate examined, its verdict
and the failing check) and `data/genset/halves.json` ({"A": [...], "B": [...], "heads": {repo:
sha}}) once every group is complete. Refusals are kept in `data/genset/refused.json`.
Nothing of a candidate's code is written: only names, commit ids, counts and the check that
failed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.sources.crawl_config import LocalRepoConfig  # noqa: E402
from pipeline.sources.gitlocal import mine  # noqa: E402

RANKING_COMMIT = "1f3e1701525143b5ac563105153e380610d1ad53"
PROJECT_COMMIT = "cfe8030889850b3550e7747a371d9f4c4c846068"
GROUPS: dict[str, list[tuple[str, int]]] = {
    "C": [("C", 4)], "C++": [("CPP", 4)], "Java": [("Java", 4)], "Go": [("Go", 4)],
    "Rust": [("Rust", 4)], "JavaScript/TypeScript": [("JavaScript", 2), ("TypeScript", 2)],
    "Python": [("Python", 4)],
}
MINED_BEFORE = {"chalk/chalk", "encode/httpx", "square/javapoet", "clap-rs/clap", "colinhacks/zod",
                "dtolnay/anyhow", "gabime/spdlog", "go-chi/chi", "libuv/libuv", "pallets/click",
                "spf13/cobra", "sindresorhus/ky"}
BUILD_FILES = {
    "c": {"CMakeLists.txt", "Makefile", "GNUmakefile", "makefile", "configure", "configure.ac",
          "configure.in", "meson.build", "BUILD", "BUILD.bazel", "WORKSPACE", "MODULE.bazel",
          "SConstruct", "xmake.lua", "premake5.lua"},
    "java": {"pom.xml", "build.gradle", "build.gradle.kts", "build.xml"},
    "go": {"go.mod"}, "rust": {"Cargo.toml"}, "js": {"package.json"},
    "python": {"pyproject.toml", "setup.py", "setup.cfg"},
}
KIND = {"C": "c", "CPP": "c", "Java": "java", "Go": "go", "Rust": "rust", "JavaScript": "js",
        "TypeScript": "js", "Python": "python"}
_C_TEST_DIRS = {"test", "tests", "testing", "t", "regress", "unittest", "unittests"}
_JS_EXT = r"(js|jsx|ts|tsx|mjs|cjs|mts|cts)"
_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*\[[^\]]*\]\(https://github\.com/([^/)\s]+/[^/)\s]+)\)")


def git(git_dir: Path, *args: str) -> str:
    """stdout of `git --git-dir GIT_DIR ARGS`; raises CalledProcessError on failure."""
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True,
                          text=True, errors="replace").stdout


def ranking(ranking_dir: Path, name: str) -> list[tuple[int, str]]:
    """(rank, owner/name) of `Top100/<name>.md` at RANKING_COMMIT, in rank order."""
    text = git(ranking_dir, "show", f"{RANKING_COMMIT}:Top100/{name}.md")
    return [(int(m.group(1)), m.group(2)) for line in text.splitlines() if (m := _ROW.match(line))]


def dev_repos(path: Path) -> set[str]:
    """Lower-cased `repo` of every row of the dev set."""
    return {json.loads(line)["repo"].lower() for line in path.read_text().splitlines() if line.strip()}


def named_in_project(repo: str) -> bool:
    """E3: `git grep -i -F repo` over swemint's tracked files at PROJECT_COMMIT finds something."""
    r = subprocess.run(["git", "-C", str(ROOT), "grep", "-q", "-i", "-F", repo, PROJECT_COMMIT],
                       capture_output=True)
    return r.returncode == 0


def test_files(files: list[str], kind: str, git_dir: Path) -> int:
    """E6: the number of files of the group's test pattern (see RULE.md)."""
    if kind == "c":
        return sum(1 for f in files if any(p.lower() in _C_TEST_DIRS for p in f.split("/")[:-1]))
    if kind == "go":
        return sum(1 for f in files if f.endswith("_test.go"))
    if kind == "python":
        return sum(1 for f in files if re.search(r"(^|/)(test_[^/]*|[^/]*_test)\.py$", f))
    if kind == "java":
        return sum(1 for f in files if f.endswith(".java") and ("src/test/" in f or re.search(r"Tests?\.java$", f)))
    if kind == "js":
        return sum(1 for f in files if re.search(rf"\.(test|spec)\.{_JS_EXT}$", f)
                   or (re.search(rf"\.{_JS_EXT}$", f) and set(f.split("/")[:-1]) & {"__tests__", "test", "tests"}))
    n = sum(1 for f in files if f.endswith(".rs") and "tests" in f.split("/")[:-1])
    if n >= 3:
        return n
    grep = subprocess.run(["git", "--git-dir", str(git_dir), "grep", "-l", "-F", "#[test]", "HEAD", "--", "*.rs"],
                          capture_output=True, text=True)
    return n + len(grep.stdout.splitlines())


def pr_units(repo: str, git_dir: Path, window: int) -> tuple[int, int]:
    """E7: (instance rows, PR-like commits) of the local source over the last `window` commits."""
    cfg = LocalRepoConfig(repo=repo, git_dir=git_dir, single_commits=False, max_commits=window)
    rows = prlike = 0
    for out in mine(cfg):
        rows += out.row is not None
        prlike += out.reject is None or out.reject.reason != "not_pr_like"
    return rows, prlike


def check(repo: str, kind: str, git_dir: Path, window: int) -> tuple[str | None, dict]:
    """E5–E7 on the mirror: (the failing check or None, facts)."""
    head = git(git_dir, "rev-parse", "HEAD").strip()
    files = git(git_dir, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    top = {f for f in files if "/" not in f}
    facts: dict = {"head": head, "files": len(files)}
    builds = sorted(top & BUILD_FILES[kind])
    facts["build"] = builds
    if not builds:
        return "E5 no top-level build file of its language", facts
    facts["test_files"] = test_files(files, kind, git_dir)
    if facts["test_files"] < 3:
        return "E6 fewer than 3 test files", facts
    facts["rows"], facts["pr_like"] = pr_units(repo, git_dir, window)
    if facts["rows"] < 1:
        return f"E7 no accepted unit in the last {window} first-parent commits", facts
    return None, facts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--dev", type=Path, default=Path("/work/shared/data/swebench_dev.jsonl"))
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "genset")
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--refused", action="append", default=[], help="owner/name:reason (E4)")
    args = ap.parse_args()
    ranking_dir = args.mirrors / "EvanLi+Github-Ranking" / "repo"
    refused_file = args.out / "refused.json"
    refused = json.loads(refused_file.read_text()) if refused_file.exists() else {}
    for item in args.refused:
        repo, _, why = item.partition(":")
        refused[repo] = why
    refused_file.write_text(json.dumps(refused, indent=1, sort_keys=True) + "\n")
    cache_file = args.out / "checks.json"
    cache = json.loads(cache_file.read_text()) if cache_file.exists() else {}
    dev = dev_repos(args.dev)
    lines = ["# Selection: every candidate examined (generated by scripts/genset_select.py)", "",
             f"Ranking `EvanLi/Github-Ranking@{RANKING_COMMIT[:12]}`, window {args.window} commits.", ""]
    chosen: dict[str, list[str]] = {}
    todo: list[str] = []
    heads: dict[str, str] = {}
    for group, lists in GROUPS.items():
        chosen[group] = []
        lines += [f"## {group}", "", "| list | rank | repository | verdict | facts |", "| --- | --- | --- | --- | --- |"]
        for name, want in lists:
            got = 0
            for rank, repo in ranking(ranking_dir, name):
                if got == want:
                    break
                verdict, facts = None, {}
                if repo.lower() in dev:
                    verdict = "E1 in the dev set"
                elif repo.lower() in MINED_BEFORE:
                    verdict = "E2 mined before"
                elif named_in_project(repo):
                    verdict = "E3 named in the project"
                elif repo in refused:
                    verdict = f"E4 fetch refused: {refused[repo]}"
                else:
                    git_dir = args.mirrors / repo.replace("/", "+") / "repo"
                    if not git_dir.is_dir():
                        todo.append(repo)
                        lines.append(f"| {name} | {rank} | {repo} | (to fetch) | |")
                        break
                    head = git(git_dir, "rev-parse", "HEAD").strip()
                    if cache.get(repo, {}).get("facts", {}).get("head") != head:
                        v, f = check(repo, KIND[name], git_dir, args.window)
                        cache[repo] = {"verdict": v, "facts": f}
                    verdict, facts = cache[repo]["verdict"], cache[repo]["facts"]
                if verdict is None:
                    got += 1
                    chosen[group].append(repo)
                    heads[repo] = facts["head"]
                shown = {k: v for k, v in facts.items() if k != "head"}
                if facts.get("head"):
                    shown["head"] = facts["head"][:12]
                lines.append(f"| {name} | {rank} | {repo} | {verdict or 'qualifies'} | "
                             f"{json.dumps(shown) if shown else ''} |")
        lines.append("")
    cache_file.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
    done = all(len(v) == 4 for v in chosen.values())
    if done:
        halves = {"A": [r for v in chosen.values() for i, r in enumerate(v) if i % 2 == 0],
                  "B": [r for v in chosen.values() for i, r in enumerate(v) if i % 2 == 1],
                  "groups": chosen, "heads": heads}
        (args.out / "halves.json").write_text(json.dumps(halves, indent=1) + "\n")
        lines += ["## Halves", "", f"A: {' '.join(halves['A'])}", "", f"B: {' '.join(halves['B'])}", ""]
    (args.out / "SELECTION.md").write_text("\n".join(lines))
    print("\n".join(lines))
    print("\nnext to fetch:", " ".join(todo) if todo else "(none)", "| complete:" , done)


if __name__ == "__main__":
    main()
