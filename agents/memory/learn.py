"""Learning from trajectories (EnvPilot's trajectory-derived memory, arXiv 2609.07357): a failing
step and the change that made the same step pass become an experience; repairs that did not help
and failures nobody fixed become negative experience.

A trajectory's steps are grouped into *attempt chains*: steps with the same `rule`, where each
next attempt follows a repair (a `note` starting "repair:" on the failed step, on a step in
between, or on the passing step itself). A chain ending in a pass yields, for each failed
attempt, (its error, the repair after it): positive when the next attempt no longer shows the
same error, negative when it does. A chain ending in a failure yields a negative entry for the
last error (no fix known). A note `repair: experience <id>` says the backend applied stored entry
<id>: its outcome is counted on that entry.

**A rule's repair is scored on the rule, and taught to its repository only** (`rule_repairs`). A
repair a hand-written rule made (its step's rule `diagnosis:<id>` of the data file, or commands
that are an ecosystem's data repair, e.g. Go's `go env -w GOFLAGS=-mod=mod`:
`knowledge.rule_of_repair`) is counted on the rule's entry like a `repair: experience <id>` note.
A data repair's teaches no lesson (its commands are the rule itself). A diagnosis rule's also
teaches a lesson *bound to the rule* (`knowledge.teaches_binding`; `Provenance.rule` = the rule's
entry id; its id depends on the rule and the repository): the binding the rule found at run time
(missing header `frobnic.h` -> `apt libfrobnic-dev`) is installed before planning in the
repository's next instance instead of failing the build step first. Such a lesson serves only the repository that taught it (the
rule itself serves the others: `retrieve.eligible`), stops acting once its rule is dropped below
the floor or leaves the data (`retrieve.Retriever`), is merged only with its own repository's
lesson of the same rule, and is scored like any lesson (its own uses; the rule's counts are not
touched by it).

**Every use is scored** (Learn -> Retrieve -> Act -> Evaluate). Besides the repair notes, the loop
writes a `score:<id>` step (agent `memory`, exit code 0 when the round the use shaped went as
hoped, see `agents.memory.uses`) for each entry used before planning, on a setup failure's
diagnosis, or on Verification's attribution, and Execution writes one (stage `setup-step`) for a
hand-written rule's repair of a setup step. `distil` counts an instance's uses of an entry once:
worked when its successes are at least its failures (a tie worked), else failed (`net_outcomes`).
A rule's setup-step repairs are counted from Execution's `score:<id>` steps when the trajectory
has them (stage `setup-step`), not a second time from their repair notes.

**A retry killed by a time limit scores nothing** (`KILLED_EXIT_CODES`: 124, the sandbox's
timeout; 137, killed). Its output is cut short, so it neither shows the error again nor shows the
build got past it: the repair before it is not scored (neither worked nor failed: no reference
to its entry or rule) and teaches no lesson, nor does a chain ending in a killed step teach the
negative "no fix found" lesson of its last error; Execution writes such a rule use's `score:<id>`
step without an exit code.

**Keyed by signature and context, never by a word.** A lesson's tags hold no repository name;
its `EntryContext` holds the repository (`repos`), the project's build systems (from the
trajectory's `memory` `context` step) and the dependencies it concerns (the packages its actions
name, and declared dependencies its error names): `retrieve.eligible` serves it to another
repository only when a dependency it concerns matches, or the build system matches and it has
worked in at least two repositories (`retrieve.learned_match`).

**The loop's moves** (`move_lessons`). A row that verified in round >= 2 after the loop's moves
(`agents.moves`: ci_setup, test_option, status_units, ...; an amended image; a replan with Debian
packages or on another toolchain) has a `lesson:moves` step (`agents.memory.replay`): its moves as
data (`MoveAction`), its candidate and build systems. It becomes an entry keyed by repository
and build context, never by a word, that `agents.memory.replay` replays before the first build of
a later instance of that context; the round it shapes scores it (`score:<id>`).

**Generalised, never copied** (`generalise`). A learned `shell` action is replayed in other
repositories' builds, so its command must not carry text the build printed (a crate named
`x;cmd` in a compiler error became a command). Each word of the repair command (and each part of
it between `@ = , :`) that occurs in the error output but neither in the failed command nor in
`COMMAND_WORDS` counts as copied: when it is a plain token (`text.ARG_CHARS`) of the error's key
statement it becomes a placeholder `${argN}` bound from a named group of the entry's signature
(the same error elsewhere binds its own value, validated again when bound); otherwise the action
is dropped from the lesson.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from agents.memory.actions import REPAIR_PREFIX, bind_actions, error_variables, parse_repair
from agents.memory.repo_context import RepoContext
from agents.memory.experience import Action, EntryContext, Experience, MoveAction, Provenance, ShellAction, actions_key
from agents.memory.experience_store import ExperienceStore, action_dependencies
from agents.memory.knowledge import rule_of_repair, teaches_binding
from agents.memory.text import (clean, error_excerpt, error_line, same_error, signature_for,
                                signature_with_captures)
from agents.models import StepRecord

KILLED_EXIT_CODES = frozenset({124, 137})
"""Exit codes of a step killed by a limit (`envpool.sandbox.ExecResult`: 124 on a timeout; 137 a
SIGKILL): a retry that ended so scores nothing (module docstring)."""
MIN_ERROR_CHARS = 10
"""A failed step with less output than this teaches nothing (no error text to recognise)."""
_EXP_REF = re.compile(r"^experience\s+([a-z0-9][a-z0-9._-]*)\s*$")


class DistilConfig(BaseModel):
    """How steps are judged. `ok_exit_codes`: rule prefix -> exit codes that mean success besides
    0 (pytest's 5, "no tests collected", is fine for a collection probe)."""

    model_config = ConfigDict(extra="forbid")
    ok_exit_codes: dict[str, list[int]] = Field(default_factory=lambda: {"probe:collect": [0, 5]})


class Attempt(BaseModel):
    """One try of a rule: the step, and the repair notes (text after "repair:") written between
    it and the next try of the same rule."""

    step: StepRecord
    repair_notes: list[str] = Field(default_factory=list)


def _passed(step: StepRecord, cfg: DistilConfig) -> bool:
    ok = [0]
    for prefix, codes in cfg.ok_exit_codes.items():
        if step.rule.startswith(prefix):
            ok = codes
    return step.exit_code is not None and step.exit_code in ok


def _repair(note: str) -> str | None:
    n = note.strip()
    return n[len(REPAIR_PREFIX):].strip() if n.lower().startswith(REPAIR_PREFIX) else None


def attempt_chains(trajectory: Sequence[StepRecord], cfg: DistilConfig | None = None) -> list[list[Attempt]]:
    """Group executed steps (those with a command) into attempt chains (see module docstring).
    Each attempt carries the repair notes written between it and the next attempt."""
    cfg = cfg or DistilConfig()
    steps = [s for s in trajectory if s.command]
    chains: list[list[Attempt]] = []
    open_chain: dict[str, int] = {}  # rule -> index in chains of a chain whose last attempt failed
    pending: dict[str, list[str]] = {}  # rule -> repair notes seen since its last failed attempt
    for step in steps:
        key = step.rule or step.command
        note = _repair(step.note)
        ci = open_chain.get(key)
        notes = pending.get(key, [])
        if ci is not None and (notes or (note and _passed(step, cfg))):
            chain = chains[ci]
            chain[-1].repair_notes = notes + ([note] if note and _passed(step, cfg) else [])
            chain.append(Attempt(step=step))
        else:
            chains.append([Attempt(step=step)])
            ci = len(chains) - 1
        # a note on a step belongs to every rule whose chain is open (the repair ran in between)
        for other in list(pending):
            if other != key and note:
                pending[other].append(note)
        if _passed(step, cfg):
            open_chain.pop(key, None)
            pending.pop(key, None)
        else:
            open_chain[key] = ci
            pending[key] = [note] if note else []
    return chains


COMMAND_WORDS = frozenset("""cd export echo printf mkdir rm cp mv ln sed awk grep cat touch sleep true false test
exit set unset env bash sh git checkout config clone fetch apt-get apt dpkg install update upgrade remove add
uv pip pip3 python python3 venv npm npx yarn pnpm node corepack cargo rustc rustup go mod tidy download get vendor
mvn gradle java javac make cmake ctest ninja bundle gem ruby rake composer php testbed tmp opt root usr local bin
lib share etc""".split())
"""Words of repair commands that are vocabulary, not data, even when the error output has them too."""

_PART_SPLIT = re.compile(r"[@=,:]")


def _tokens(command: str) -> set[str]:
    return set(re.findall(r"[A-Za-z0-9_.+/-]+", command))


def _copied(word: str, text: str, failed: set[str]) -> list[str]:
    """The pieces of one shell word that were copied from the error `text`."""
    if word.startswith("-") and "=" not in word:
        return []  # a flag
    pieces = [word] if word in text and word not in failed else []
    if pieces and not re.fullmatch(r"[A-Za-z0-9_.+/-]+", word):
        return pieces  # shell syntax or spaces copied from the output: never kept
    out = []
    for part in _PART_SPLIT.split(word.lstrip("-") if word.startswith("-") else word):
        for piece in part.split("/"):
            if (len(piece) >= 2 and piece not in failed and piece.lower() not in COMMAND_WORDS
                    and re.search(rf"(?<![A-Za-z0-9_.+-]){re.escape(piece)}(?![A-Za-z0-9_.+-])", text)):
                out.append(piece)
    return out


def generalise(actions: list[Action], error_text: str, failed_command: str = "") -> tuple[list[Action], str | None]:
    """(actions, signature): `shell` actions with every piece copied from `error_text` made a
    placeholder `${argN}` (the returned signature, None when nothing was copied, captures it), or
    dropped when a piece cannot be (see the module docstring). Other kinds pass unchanged."""
    text = clean(error_text)
    failed = _tokens(failed_command)
    captures: dict[str, str] = {}
    out: list[Action] = []
    for action in actions:
        if not isinstance(action, ShellAction):
            out.append(action)
            continue
        try:
            words = shlex.split(action.command)
        except ValueError:
            continue  # unbalanced quotes: nothing to reason about
        copied = [p for w in words for p in _copied(w, text, failed)]
        if not copied:
            out.append(action)
            continue
        names = {v: n for n, v in captures.items()}
        trial = dict(captures)
        for piece in copied:
            if piece not in names:
                names[piece] = f"arg{len(trial) + 1}"
                trial[names[piece]] = piece
        if signature_with_captures(text, trial) is None:
            continue  # not a token of the key statement: the action is not learned
        captures = trial
        command = action.command
        for piece in sorted(copied, key=len, reverse=True):
            command = re.sub(rf"(?<![A-Za-z0-9_.+-]){re.escape(piece)}(?![A-Za-z0-9_.+-])",
                             lambda _m, n=names[piece]: "${" + n + "}", command)
        out.append(ShellAction(command=command))
    return out, (signature_with_captures(text, captures) if captures else None)


SCORE_PREFIX = "score:"
"""Rule prefix of a use's score step (`score:<entry id>`, agent `memory`)."""


def trajectory_context(trajectory: Sequence[StepRecord]) -> RepoContext | None:
    """The project's context the loop recorded (the last `memory` step of rule `context`), or None."""
    for s in reversed(trajectory):
        if s.agent == "memory" and s.rule == "context" and s.note:
            try:
                return RepoContext.model_validate_json(s.note)
            except ValueError:
                return None
    return None


def _named(dep: str) -> str:
    """A regex finding the normalised dependency name `dep` (`foo-bar`) in an error however the
    error spells it: `foo-bar`, `foo_bar`, `foo.bar` (`typing_extensions`, `zope.interface`, Go's
    `github.com/a/b` normalised to `github-com/a/b`), as a whole name."""
    return r"(?<![\w-])" + "[-_.]".join(re.escape(p) for p in dep.split("-")) + r"(?![\w-])"


def lesson_context(actions: list[Action], error_text: str, repo: str, ctx: RepoContext | None) -> EntryContext:
    """A learned entry's context: its repository, the project's build systems, and the dependencies
    it concerns (named by its actions, or declared by the project and named in its error's
    statement -- the line its signature is built from, `text.error_line`: not the whole output,
    whose install log names most of the project's dependencies, "Requirement already satisfied:
    numpy", and would key the lesson on them)."""
    deps = action_dependencies(actions)
    if ctx is not None:
        low = error_line(error_text).lower()
        deps += [d for d in sorted(ctx.dependency_names())
                 if len(d) >= 3 and d not in deps and re.search(_named(d), low)]
    return EntryContext(repos=[repo] if repo else [], build_systems=list(ctx.build_systems) if ctx else [],
                        dependencies=deps[:12])


def scores(trajectory: Sequence[StepRecord]) -> list[tuple[str, bool]]:
    """(entry id, worked) of every `score:<id>` step of the trajectory, in order."""
    return [(s.rule[len(SCORE_PREFIX):], s.exit_code == 0) for s in trajectory
            if s.agent == "memory" and s.rule.startswith(SCORE_PREFIX) and s.exit_code is not None]


def net_outcomes(refs: Sequence[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """One (entry id, worked) per entry of `refs` (one instance's uses), in order of first use:
    it worked when its successes in the instance are at least its failures (a tie worked), else
    it failed. An instance counts once on an entry however often it used it, so one instance
    whose build reports its missing headers one at a time (a use per header, each retry failing
    on the next one) cannot drop a rule by itself; and an entry that mostly fails is not hidden by
    one success per instance (six instances of four failed uses and one success each count 0/6,
    not 6/6)."""
    tally: dict[str, list[int]] = {}
    for ref, ok in refs:
        tally.setdefault(ref, [0, 0])[0 if ok else 1] += 1
    return [(ref, worked >= failed) for ref, (worked, failed) in tally.items()]


def _setup_step_scored(trajectory: Sequence[StepRecord]) -> set[str]:
    """The entries Execution scored on a setup step's retry (`score:<id>` steps of stage
    `setup-step`, with or without an exit code): their repair notes are not counted again."""
    out: set[str] = set()
    for s in trajectory:
        if s.agent == "memory" and s.rule.startswith(SCORE_PREFIX):
            try:
                stage = json.loads(s.note or "{}").get("stage")
            except (ValueError, AttributeError):
                continue
            if stage == "setup-step":
                out.add(s.rule[len(SCORE_PREFIX):])
    return out


def _entry(step: StepRecord, actions: list[Action], notes: list[str], ecosystem: str, instance_id: str,
           negative: bool, repo: str = "", ctx: RepoContext | None = None, rule: str = "") -> Experience | None:
    """A lesson of `step`'s error and the repair `actions` (none: no fix known); `rule`: the entry
    id of the hand-written rule that made the repair (a lesson bound to that rule and to `repo`,
    module docstring), "" for another's."""
    text = clean(step.output_excerpt)
    if len(text.strip()) < MIN_ERROR_CHARS:
        return None
    actions, captured = generalise(actions, text, step.command)
    sig = captured or signature_for(text)
    key = f"{ecosystem}|{sig}|{actions_key(actions)}|{negative}" + (f"|{rule}|{repo}" if rule else "")
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    if negative:
        solution = ("tried without success: " + "; ".join(notes)) if notes else "no fix found"
    else:
        solution = "repair: " + "; ".join(notes)
    return Experience(id=f"learned-{ecosystem}-{digest}", problem=error_excerpt(text) or text[-600:],
                      solution=solution, actions=actions, ecosystem=ecosystem,  # type: ignore[arg-type]
                      tags=["learned", step.rule.split(":")[0]] + sorted({a.kind for a in actions}),
                      error_signature=sig,
                      provenance=Provenance(source="learned", instance_ids=[instance_id], rule=rule),
                      context=lesson_context(actions, text, repo, ctx),
                      times_applied=1, times_worked=0 if negative else 1, negative=negative)


def rule_repairs(trajectory: Sequence[StepRecord], ecosystem: str) -> dict[str, str]:
    """The repairs of the trajectory that hand-written rules made: repair note (the text after
    "repair:") -> the rule's entry id (`knowledge.rule_of_repair` of the note's step: its rule
    `diagnosis:<id>`, or its actions being exactly a data repair's shell commands)."""
    out: dict[str, str] = {}
    for s in trajectory:
        note = _repair(s.note) if s.command else None
        if note is None or _EXP_REF.match(note):
            continue
        actions = parse_repair(note)
        commands = [a.command for a in actions] if all(isinstance(a, ShellAction) for a in actions) else []
        if entry := rule_of_repair(ecosystem, s.rule, commands):
            out[note] = entry
    return out


def candidates(trajectory: Sequence[StepRecord], ecosystem: str, instance_id: str,
               cfg: DistilConfig | None = None,
               repo: str = "") -> tuple[list[tuple[Experience, str]], list[tuple[str, bool]]]:
    """The raw lessons of one trajectory, deduplicated among themselves.

    Returns ((entry, error text) pairs, (referenced entry id, worked) pairs: the repair notes'
    references (`repair: experience <id>`, and a hand-written rule's repair, `rule_repairs`, on
    the rule's entry, unless Execution scored that rule's setup-step uses itself: its `score:<id>`
    steps count them, once each), then the `score:<id>` steps). A diagnosis rule's repair teaches a lesson
    bound to the rule and to `repo` (none without `repo`), apart from the other repairs' lesson;
    a data repair's none.
    """
    cfg = cfg or DistilConfig()
    ctx = trajectory_context(trajectory)
    ruled = rule_repairs(trajectory, ecosystem)
    stepped = _setup_step_scored(trajectory)
    found: dict[str, tuple[Experience, str]] = {}
    refs: list[tuple[str, bool]] = []
    for chain in attempt_chains(trajectory, cfg):
        last = chain[-1].step
        success = _passed(last, cfg)
        for a, nxt in zip(chain, chain[1:], strict=False):
            if nxt.step.exit_code in KILLED_EXIT_CODES:
                continue  # the retry was killed by a limit: the repair before it is not scored
            same = same_error(a.step.output_excerpt, nxt.step.output_excerpt)
            worked = _passed(nxt.step, cfg) or (success and not same)
            plain = [n for n in a.repair_notes if not _EXP_REF.match(n) and n not in ruled]
            refs += [(m.group(1), worked) for n in a.repair_notes if (m := _EXP_REF.match(n))]
            refs += [(ruled[n], worked) for n in a.repair_notes if n in ruled and ruled[n] not in stepped]
            if not (success or same):
                continue
            groups = [("", plain)] + [(rule, [n for n in a.repair_notes if ruled.get(n) == rule])
                                      for rule in dict.fromkeys(ruled[n] for n in a.repair_notes if n in ruled)
                                      if repo and teaches_binding(rule)]  # serves its repository only
            for rule, notes in groups:
                actions = [act for n in notes for act in parse_repair(n)]
                exp = _entry(a.step, actions, notes, ecosystem, instance_id, negative=not worked, repo=repo,
                             ctx=ctx, rule=rule) if actions else None
                if exp:
                    found.setdefault(exp.id, (exp, a.step.output_excerpt))
        if not success and last.exit_code not in KILLED_EXIT_CODES:  # a killed step's output is cut short
            exp = _entry(last, [], [], ecosystem, instance_id, negative=True, repo=repo, ctx=ctx)
            if exp:
                found.setdefault(exp.id, (exp, last.output_excerpt))
    return list(found.values()), refs + scores(trajectory)


LESSON_RULE = "lesson:moves"
"""Rule of the loop's step (agent `memory`) holding the moves of a row verified in round >= 2."""
NEVER = "(?!)"
"""The signature of a lesson of moves: it matches no error text (it is found by repository and
candidate, `retrieve.Retriever.move_lessons`, never by an error or a word)."""


class MovesLesson(BaseModel):
    """The note of a `lesson:moves` step: the candidate and build systems of the verified round,
    its number, and the moves that shaped the rounds before it (`MoveAction`s, in order)."""

    model_config = ConfigDict(extra="forbid")
    candidate: str
    round: int
    build_systems: list[str] = Field(default_factory=list)
    actions: list[MoveAction] = Field(min_length=1)


def move_lessons(trajectory: Sequence[StepRecord], ecosystem: str, instance_id: str,
                 repo: str = "") -> list[Experience]:
    """The lessons of the loop's moves a trajectory records (its `lesson:moves` steps): one entry
    per step, keyed by repository and build context (`EntryContext.repos`, `build_systems`,
    `candidates`), its actions the moves as data. The id depends on the context and the actions,
    not on the repository: the same moves on the same candidate learned elsewhere reinforce it."""
    out: list[Experience] = []
    for s in trajectory:
        if s.agent != "memory" or s.rule != LESSON_RULE or not s.note:
            continue
        try:
            lesson = MovesLesson.model_validate_json(s.note)
        except ValueError:
            continue
        builds = sorted(set(lesson.build_systems))
        digest = hashlib.sha1(f"{ecosystem}|{lesson.candidate}|{','.join(builds)}|{actions_key(lesson.actions)}"
                              .encode()).hexdigest()[:12]
        kinds = [a.move for a in lesson.actions]
        out.append(Experience(
            id=f"learned-moves-{ecosystem}-{digest}", ecosystem=ecosystem,  # type: ignore[arg-type]
            problem=f"{repo or 'a repository'} ({lesson.candidate}) verified only in round {lesson.round}: "
                    f"the first build or test configuration gave nothing to grade",
            solution="replay before the first build: " + "; ".join(
                f"{a.move}" + (f" ({a.evidence[:120]})" if a.evidence else "") for a in lesson.actions),
            actions=list(lesson.actions), tags=["learned", "moves"] + sorted(set(kinds)), error_signature=NEVER,
            provenance=Provenance(source="learned", instance_ids=[instance_id]),
            context=EntryContext(repos=[repo] if repo else [], build_systems=builds, candidates=[lesson.candidate]),
            times_applied=1, times_worked=1))
    return out


def _same_lesson(existing: Experience, cand: Experience, error_text: str) -> bool:
    """Same error (its signature matches the text, or equal signatures) and same actions (the
    existing entry's placeholders bound from the error)."""
    if existing.error_signature != cand.error_signature and not existing.signature_re.search(clean(error_text)):
        return False
    if actions_key(existing.actions) == actions_key(cand.actions):  # the same (generalised) template
        return True
    bound, unbound = bind_actions(existing.actions, error_variables(existing, error_text))
    return not unbound and actions_key(bound) == actions_key(cand.actions)


def distil(trajectory: Sequence[StepRecord], ecosystem: str, instance_id: str,
           store: ExperienceStore | None = None, cfg: DistilConfig | None = None, repo: str = "") -> list[Experience]:
    """Distil one instance's trajectory into experiences.

    Without `store`: the new entries (deduplicated within the trajectory). With `store`, each
    lesson is merged: the same error + actions as a stored entry reinforces it (a positive lesson:
    times_applied and times_worked + 1; a repair that did not work: times_applied + 1 on the
    positive entry, or on the matching negative one); otherwise it is added. The uses the
    trajectory records (`repair: experience <id>` notes and `score:<id>` steps) count once per
    entry: worked when its successes are at least its failures (`net_outcomes`). Returns the entries as stored
    (added or reinforced), the entries it scored included.

    Args:
        trajectory: the instance's steps (`agents.models.StepRecord`), in order.
        ecosystem: the repository's ecosystem ("python", ...).
        instance_id: recorded in each entry's provenance.
        repo: the instance's repository (owner/name): the lessons' context.
    """
    lessons, refs = candidates(trajectory, ecosystem, instance_id, cfg, repo=repo)
    moves = move_lessons(trajectory, ecosystem, instance_id, repo)
    if store is None:
        return [exp for exp, _ in lessons] + moves
    out: dict[str, Experience] = {}
    for ref, worked in net_outcomes(refs):
        if store.get(ref) is not None:
            out[ref] = store.record_outcome(ref, worked, instance_id, repo)
    for lesson in moves:  # the same moves on the same context: reinforced (and its repository added)
        if store.get(lesson.id) is not None:
            out[lesson.id] = store.record_outcome(lesson.id, worked=True, instance_id=instance_id, repo=repo)
        else:
            store.add(lesson)
            out[lesson.id] = lesson
    pool = store.all(ecosystem, include_negative=True)
    for cand, error_text in lessons:
        # a lesson bound to a rule merges only with its repository's lesson of that rule, another
        # lesson never with one bound to a rule (`Provenance.rule`)
        same = [e for e in pool if e.provenance.rule == cand.provenance.rule
                and (not cand.provenance.rule or set(cand.context.repos) <= set(e.context.repos))
                and _same_lesson(e, cand, error_text)]
        target = next((e for e in same if not e.negative), None) if cand.actions else None
        target = target or next((e for e in same if e.negative == cand.negative), None)
        if target is not None:
            out[target.id] = store.record_outcome(target.id, worked=not cand.negative, instance_id=instance_id,
                                                  repo=repo)
        else:
            store.add(cand)
            pool.append(cand)
            out[cand.id] = cand
    return list(out.values())

