"""One knowledge store (issue 30): the rules that are data become entries of the same kind as the
seed set and the learned lessons, so every piece of knowledge is retrieved, applied, scored and
reported the same way (EnvPilot's trajectory-derived memory, arXiv 2609.07357, holds rules and
experience as one memory).

Hand-written sources, each entry with provenance `rule` (or `seed`) and the file it comes from:

- `agents/ecosystems/recipes/diagnosis.yaml` `rules`: one entry per rule, id `rule-diag-<id>`,
  signature = the rule's pattern, action `rule` (engine `diagnosis`): `agents.diagnosis` applies
  it (its `Diagnosis` drives the loop), skipping the rules whose entry fell below the floor;
- `golang/go.yaml` `repairs`: pattern -> shell commands, id `rule-go-repair-<n>`;
- `recipes/node.yaml` `repairs`: pattern lists per repair kind, id `rule-node-<kind>`, action
  `rule` (engine `ecosystem`: the Node ecosystem's code decides what the kind does);
- `data/experiences/*.jsonl`: the seed set (`store.load_seed_files`).

`rule_entry_id(engine, rule)` names the entry a rule's use is counted on; `rule_for_fix` finds
the data repair whose commands an ecosystem returned, and `rule_of_repair` the rule that made a
setup-step repair (its step's rule `diagnosis:<id>`, or those commands): Execution scores the
rule on the retry (a `score:<id>` step) and learning (`agents.memory.learn`) scores the rule;
the only lesson the repair teaches is bound to the rule and to its repository
(`Provenance.rule`), so a rule dropped below the floor stops acting, its lessons with it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

from agents.memory.experience import Action, EntryContext, Experience, Provenance, RuleAction, ShellAction

RECIPES = Path(__file__).resolve().parents[1] / "ecosystems" / "recipes"


def memory_ecosystem(name: str) -> str:
    """An ecosystem's name (what `diagnose` is called with; a route-qualified `java_maven` counts
    as `java`) in the memory's vocabulary: the first language the registered ecosystem declares
    (`node` -> `javascript`, `cfamily` -> `c`); a name no ecosystem has is kept."""
    import agents.ecosystems as registry

    served = registry.languages_of(name) or registry.languages_of(name.split("_")[0])
    return served[0] if served else name


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-") or "x"


def rule_entry_id(engine: str, rule: str) -> str:
    """The entry id of rule `rule` of `engine` (`diagnosis` -> `rule-diag-<id>`, else
    `rule-<rule>`)."""
    return f"rule-diag-{_slug(rule)}" if engine == "diagnosis" else f"rule-{_slug(rule)}"


def _entry(eid: str, ecosystems: list[str], problem: str, solution: str, actions: list[Action], pattern: str,
           file: str, tags: list[str]) -> Experience:
    ecos = [memory_ecosystem(e) for e in ecosystems]
    return Experience(id=eid, ecosystem=ecos[0] if len(ecos) == 1 else "any",  # type: ignore[arg-type]
                      problem=problem, solution=solution, actions=actions, error_signature=pattern, tags=tags,
                      provenance=Provenance(source="rule", file=file),
                      context=EntryContext(ecosystems=ecos if len(ecos) > 1 else []))


def diagnosis_entries(path: Path = RECIPES / "diagnosis.yaml") -> list[Experience]:
    """One entry per rule of the diagnosis data file (module docstring). A rule about one named
    tool (a fixed `name`: `tclsh`, `cmake`) carries it as its dependency context (`derived`:
    it narrows retrieval before planning, never acts unasked); the others are about whatever
    their error names."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = []
    for r in data.get("rules", []):
        what = r.get("name") or r.get("needs") or r.get("packages") or ""
        problem = f"{r['kind'].replace('_', ' ')} ({r['id']}): output matching {r['pattern'][:200]}"
        solution = {"missing_system": f"install what provides the missing {what} (Debian's file index)",
                    "missing_module": "install the missing module with the ecosystem's installer",
                    "toolchain_too_old": "plan again on a newer toolchain",
                    "toolchain_too_new": "plan again on an older toolchain"}.get(r["kind"], r["kind"])
        e = _entry(rule_entry_id("diagnosis", r["id"]), r.get("ecosystems") or ["any"], problem, solution,
                   [RuleAction(engine="diagnosis", rule=r["id"])], r["pattern"], f"recipes/{path.name}",
                   ["diagnosis", r["kind"]])
        if r.get("name"):
            e.context.dependencies, e.context.derived = [r["name"].lower()], True
        out.append(e)
    return out


def go_repair_entries(path: Path | None = None) -> list[Experience]:
    """One entry per `repairs` item of the Go recipe (default: the Go ecosystem's data file,
    `agents.ecosystems.golang.go_recipe.RECIPE_PATH`): its commands as shell actions."""
    if path is None:
        from agents.ecosystems.golang.go_recipe import RECIPE_PATH as path
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = []
    for n, r in enumerate(data.get("repairs", []), start=1):
        why = r.get("why") or "go recipe repair"
        out.append(_entry(f"rule-go-repair-{n}", ["go"], f"Go setup step failed: {why} (output matching "
                          f"{r['pattern'][:200]})", why, [ShellAction(command=c) for c in r["commands"]],
                          r["pattern"], f"recipes/{path.name}", ["go", "repair"]))
    return out


def node_repair_entries(path: Path = RECIPES / "node.yaml") -> list[Experience]:
    """One entry per repair kind of the Node recipe (its patterns joined), action `rule`."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = []
    for kind, patterns in (data.get("repairs") or {}).items():
        pattern = "|".join(f"(?:{p})" for p in patterns)
        out.append(_entry(rule_entry_id("ecosystem", f"node-{kind}"), ["node"], f"npm/pnpm/yarn install failed: "
                          f"{kind.replace('_', ' ')} (output matching {pattern[:200]})",
                          f"the Node ecosystem's {kind} repair", [RuleAction(engine="ecosystem", rule=f"node-{kind}")],
                          pattern, f"recipes/{path.name}", ["node", "repair", kind]))
    return out


@lru_cache(maxsize=1)
def rule_entries() -> tuple[Experience, ...]:
    """Every hand-written rule as an entry (diagnosis, Go repairs, Node repair kinds)."""
    return tuple(diagnosis_entries() + go_repair_entries() + node_repair_entries())


def rule_for_fix(ecosystem: str, commands: list[str]) -> str | None:
    """The id of the data repair entry of `ecosystem` whose shell commands are `commands`, or None."""
    eco = memory_ecosystem(ecosystem)
    for e in rule_entries():
        if e.ecosystem == eco and [a.command for a in e.actions if isinstance(a, ShellAction)] == list(commands):
            return e.id
    return None


def rule_of_repair(ecosystem: str, source: str, commands: list[str]) -> str | None:
    """The entry of the hand-written rule that made a setup-step repair, None for another's.

    `source` is the rule of the repair's step: `diagnosis:<id>` of the data file -> its entry
    `rule-diag-<id>`; `memory:<id>` -> None (the memory's own repairs are scored by their
    `repair: experience <id>` note); any other (an ecosystem's `repair:<eco>`, the LLM's `llm`)
    -> the data repair of `ecosystem` whose shell commands are `commands` (`rule_for_fix`), so the
    LLM finding a rule's very commands is that rule's use, not a new lesson; else None."""
    if source.startswith("diagnosis:"):
        rule = source[len("diagnosis:"):]
        return rule_entry_id("diagnosis", rule) if rule in diagnosis_rule_ids() else None
    if source.startswith("memory:") or not commands:
        return None
    return rule_for_fix(ecosystem, commands)


def teaches_binding(entry_id: str) -> bool:
    """Whether a repair by the rule of entry `entry_id` teaches a lesson bound to the rule
    (`agents.memory.learn`, `Provenance.rule`): a diagnosis rule's does -- its repair binds what
    the error names to a package at run time (header `frobnic.h` -> `apt libfrobnic-dev`, from
    Debian's file index), which the rule alone does not know; a data repair's does not -- its
    commands are the rule itself, a lesson would only copy it."""
    return entry_id.startswith("rule-diag-") and entry_id[len("rule-diag-"):] in {
        _slug(r) for r in diagnosis_rule_ids()}


@lru_cache(maxsize=1)
def diagnosis_rule_ids() -> frozenset[str]:
    """The ids of the diagnosis data file's rules (entries `rule-diag-<id>`)."""
    return frozenset(a.rule for e in rule_entries() for a in e.actions
                     if isinstance(a, RuleAction) and a.engine == "diagnosis")


def diagnosis_entry(diag) -> str | None:
    """The entry a `Diagnosis` came from: `rule-diag-<rule>` for a rule of the data file, the
    experience id for a memory entry's diagnosis (`rule == "memory"`, detail `experience <id>: ...`),
    None for an ecosystem's own code or the LLM."""
    if diag is None:
        return None
    if diag.rule in diagnosis_rule_ids():
        return rule_entry_id("diagnosis", diag.rule)
    if diag.rule == "memory":
        m = re.match(r"experience ([a-z0-9][a-z0-9._-]*):", diag.detail or "")
        return m.group(1) if m else None
    return None
