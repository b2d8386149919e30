"""Write the generalisation measurement set: up to N instances per repository, spread over its years.

    python scripts/make_measurement_set.py -i ../shared/data/swebench_dev.jsonl -m /work/.mirror \
        -o data/measurement_ids.txt [--per-repo 4]

Per repository, instances are sorted by `created_at` and N are taken at evenly spaced ranks
(first and last included), so every era of the repository is represented; a repository with at
most N instances contributes all of them. Repositories whose mirror is not under `-m` (the
fetch size limit, see the report) are listed on stderr and left out. The output holds ids only,
one per line, with a header comment naming the command; deterministic for the same input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def spread(rows: list[dict], n: int) -> list[dict]:
    """`n` rows at evenly spaced ranks of `rows` sorted by (created_at, instance_id); all if fewer."""
    rows = sorted(rows, key=lambda r: (str(r.get("created_at") or ""), r["instance_id"]))
    if len(rows) <= n:
        return rows
    if n == 1:
        return [rows[len(rows) // 2]]
    idx = sorted({round(i * (len(rows) - 1) / (n - 1)) for i in range(n)})
    return [rows[i] for i in idx]


def has_mirror(roots: list[Path], repo: str) -> bool:
    """True when a mirror of `repo` (owner/name) is under one of `roots` (case-insensitive)."""
    owner, name = repo.split("/", 1)
    wanted = {f"{owner}+{name}".lower(), f"{owner}/{name}.git".lower(), f"{owner}+{name}.git".lower()}
    for root in roots:
        if not root.is_dir():
            continue
        for d in root.iterdir():
            if d.name.lower() in wanted:
                return True
            if d.name.lower() == owner.lower() and d.is_dir():
                if any(x.name.lower() in (f"{name}.git".lower(), name.lower()) for x in d.iterdir()):
                    return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-i", "--instances", type=Path, required=True)
    ap.add_argument("-m", "--mirrors", type=Path, action="append", required=True)
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--per-repo", type=int, default=4)
    a = ap.parse_args(argv)
    by_repo: dict[str, list[dict]] = defaultdict(list)
    with a.instances.open() as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                by_repo[row["repo"]].append(row)
    chosen, missing = [], []
    for repo in sorted(by_repo, key=str.lower):
        if not has_mirror(a.mirrors, repo):
            missing.append(f"{repo} ({len(by_repo[repo])} instances)")
            continue
        chosen += [r["instance_id"] for r in spread(by_repo[repo], a.per_repo)]
    header = (f"# generalisation measurement set: {len(chosen)} instances, "
              f"{len(by_repo) - len(missing)} repositories, up to {a.per_repo} per repository spread over its years\n"
              f"# made by: python scripts/make_measurement_set.py -i {a.instances.name} -m MIRRORS "
              f"-o {a.output} --per-repo {a.per_repo}\n"
              + "".join(f"# no mirror: {m}\n" for m in missing))
    a.output.parent.mkdir(parents=True, exist_ok=True)
    a.output.write_text(header + "".join(i + "\n" for i in chosen))
    print(f"{len(chosen)} ids from {len(by_repo) - len(missing)} repositories -> {a.output}", file=sys.stderr)
    for m in missing:
        print(f"no mirror: {m}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
