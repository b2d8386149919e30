"""What the loop and the memory did in one or more minting runs (the loop and memory-ablation
measurements of issue 9), read from the stored rows and trajectories.

    .venv/bin/python scripts/loop_stats.py work/loop-off work/loop-after work/loop-both \
        [--ids-file data/measurement_ids.txt] [--markdown] [--json out.json]

Per work directory (read only): instances, verified, verified only in round >= 2 and by which
feedback (the feedback of the round before the verifying one: `amend`, `retest`, `replan`,
`rebuild`, `next candidate: ...`, `llm plan`, grouped by the attribution kind or diagnosis that
led to it), Execution's repairs (trajectory steps of agent `execution` whose note starts with
`repair:`; `by memory` those of a `memory:<id>` rule), the memory applied before planning (steps
`before-plan` that changed the plan) and rows whose outcome a later round could not improve.
Run the three memory settings as three work directories of the same ids:

    off:            --set mint.memory.enabled=false
    after failure:  --set mint.memory.before_plan=false
    before + after: (defaults)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.diff_runs import rows_of  # noqa: E402


def _steps(res) -> list[dict]:
    p = Path(res.trajectory_path) if res.trajectory_path else None
    if p is None or not p.is_file():
        return []
    out = []
    for line in p.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _feedback_key(res) -> str:
    """How the verifying round came about: the previous round's feedback and attribution kind."""
    prev = res.rounds[res.round - 2] if 2 <= res.round <= len(res.rounds) else None
    if prev is None:
        return "unknown"
    kind = prev.attribution.split(":", 1)[0] if prev.attribution else prev.outcome
    return f"{(prev.feedback or '-').split(':', 1)[0]} ({kind})"


def stats(workdir: Path, ids: set[str] | None) -> dict:
    """The numbers of one work directory (module docstring), over `ids` (None: every row)."""
    return row_stats([r for iid, r in rows_of(workdir).items() if ids is None or iid in ids], str(workdir))


def row_facts(res) -> dict:
    """The loop and memory facts of one InstanceResult row, as plain JSON values (what a
    results ledger keeps, `scripts/ledger.py`): outcome, round (the verifying or last round),
    rounds (loop rounds run), repairs (Execution's `repair:` steps), memory_repairs (those of a
    `memory:<id>` rule), before_changes (`before-plan` steps that changed the plan), feedback
    (`_feedback_key` for a row verified in round >= 2, else None), reused (verified on another
    instance's environment), memory_acted (the memory changed something in this instance: a plan
    before planning, a repair, or an applied entry whose diagnosis sent the loop to another plan —
    an `applying experience` step, or a round whose feedback names an experience). Where
    memory_acted is False, the same instance with the memory off makes the same decisions
    (`memory_acts`)."""
    repairs = memory_repairs = before_changes = applied = 0
    for s in _steps(res):
        rule, note = str(s.get("rule", "")), str(s.get("note", ""))
        if s.get("agent") == "execution" and note.startswith("repair:"):
            repairs += 1
            memory_repairs += rule.startswith("memory:")
        if rule == "before-plan" and "applied: none" not in note:
            before_changes += 1
        if rule.startswith("memory:") and note.startswith("applying experience"):
            applied += 1
    fed = any("experience " in f"{r.feedback} {r.reason}" for r in res.rounds)
    verified = res.outcome == "verified"
    late = verified and (res.round or 1) >= 2
    return {"outcome": res.outcome, "round": res.round or 1, "rounds": len(res.rounds),
            "repairs": repairs, "memory_repairs": memory_repairs, "before_changes": before_changes,
            "feedback": _feedback_key(res) if late else None,
            "reused": bool(verified and res.reused_from and res.reused_from != res.instance_id),
            "memory_acted": bool(before_changes or memory_repairs or applied or fed)}


def memory_acts(facts: dict, arm: str) -> bool:
    """Whether the memory setting `arm` removes can have changed this instance's run, from its
    `row_facts` in the defaults arm (before and after): `off` removes everything the memory does,
    `after_failure` only the plan changes before planning. A ledger line older than the
    `memory_acted` field counts as acted when it had memory repairs, plan changes or more than
    one round (a memory diagnosis then shows only in the rounds). Raises ValueError for another
    arm name."""
    if arm == "after_failure":
        return bool(facts.get("before_changes"))
    if arm == "off":
        if "memory_acted" in facts:
            return bool(facts["memory_acted"])
        return bool(facts.get("memory_repairs") or facts.get("before_changes") or (facts.get("rounds") or 1) > 1)
    raise ValueError(f"no memory arm {arm!r}: off or after_failure")


def aggregate(facts: list[dict], workdir: str = "") -> dict:
    """`row_stats` over `row_facts` dicts (from rows or from a ledger's lines)."""
    verified = [f for f in facts if f["outcome"] == "verified"]
    late = [f for f in verified if (f.get("round") or 1) >= 2]
    repairs = [f.get("repairs", 0) for f in facts]
    return {"workdir": workdir, "instances": len(facts), "verified": len(verified),
            "verified_round_ge2": len(late),
            "by_feedback": dict(Counter(f.get("feedback") or "unknown" for f in late)),
            "rounds_total": sum(f.get("rounds", 0) for f in facts),
            "outcomes": dict(Counter(f["outcome"] for f in facts)),
            "repairs_total": sum(repairs), "repairs_median": statistics.median(repairs) if repairs else 0,
            "repairs_by_memory": sum(f.get("memory_repairs", 0) for f in facts),
            "plans_changed_before_planning": sum(f.get("before_changes", 0) for f in facts),
            "memory_acted": sum(1 for f in facts if memory_acts(f, "off")),
            "reused": sum(1 for f in verified if f.get("reused"))}


def row_stats(rows: list, workdir: str = "") -> dict:
    """`stats` over given InstanceResult rows (`workdir`: the label the dict carries): counts,
    `rounds_total` (loop rounds), `repairs_total` / `repairs_median` (Execution's repairs per
    instance), `verified_round_ge2` and `by_feedback` ({feedback (attribution kind): n})."""
    return aggregate([row_facts(r) for r in rows], workdir)


COLUMNS = ("workdir", "instances", "verified", "verified_round_ge2", "rounds_total", "repairs_total",
           "repairs_median", "repairs_by_memory", "plans_changed_before_planning", "reused")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workdirs", type=Path, nargs="+")
    ap.add_argument("--ids-file", type=Path)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    ids = None
    if a.ids_file:
        ids = {x.strip() for x in a.ids_file.read_text().splitlines() if x.strip() and not x.startswith("#")}
    table = [stats(w, ids) for w in a.workdirs]
    sep = " | "
    if a.markdown:
        print("| " + sep.join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
    else:
        print(sep.join(COLUMNS))
    for t in table:
        line = sep.join(str(t[c]) for c in COLUMNS)
        print(f"| {line} |" if a.markdown else line)
    for t in table:
        print(f"\n{t['workdir']}: outcomes {t['outcomes']}")
        for k, n in sorted(t["by_feedback"].items(), key=lambda kv: -kv[1]):
            print(f"  verified in round >= 2 after {k}: {n}")
    if a.json:
        a.json.write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
