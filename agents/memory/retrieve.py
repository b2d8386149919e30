"""Context-aware retrieval of experiences (EnvPilot, arXiv 2609.07357, section "Trajectory-Derived
Memory"): a repository context becomes several likely-obstacle queries, each query gives one
BM25 ranking (optionally one dense ranking), and Reciprocal Rank Fusion (Cormack et al. 2009,
k=60) merges them. On a failed step, `retrieve_for_error` ranks entries whose error signature
matches the output first, then BM25 hits on the error text.
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
import fnmatch
import functools
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.memory.repo_context import ObstacleRules, RepoContext
from agents.memory.experience import Experience, family
from agents.memory.rank import RRF_K, BM25Index, DenseIndex, Embedder, rrf
from agents.memory.text import clean, key_lines, tokenize

MAX_ERROR_CHARS = 20_000
"""Only the last this many characters of an error output are searched (regex time is bounded)."""


class RetrievalConfig(BaseModel):
    """Retrieval settings (one per memory)."""

    model_config = ConfigDict(extra="forbid")
    k: int = Field(default=10, ge=1)
    """How many entries a retrieval returns."""
    rrf_k: int = Field(default=RRF_K, ge=0)
    """The Reciprocal Rank Fusion constant (60, Cormack et al. 2009)."""
    depth: int = Field(default=10, ge=1)
    """How deep each ranked list goes before fusion."""
    min_relative_score: float = Field(default=0.5, ge=0.0, le=1.0)
    """A context query's list keeps only entries scoring at least this fraction of its best."""
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    embeddings: bool = False
    """Add a dense ranking per query (needs an Embedder passed to the Retriever)."""
    min_similarity: float = 0.2
    """Dense hits below this cosine similarity are dropped."""
    include_negative: bool = False
    """Return negative experiences (failures without a fix) too."""
    floor: float = Field(default=0.34, ge=0.0, le=1.0)
    """An entry with at least `min_uses` scored uses and a reliability below this is dropped:
    never retrieved, applied, or (a diagnosis rule) consulted (`Experience.dropped`; never a
    negative lesson)."""
    min_uses: int = Field(default=4, ge=1)
    profile_query: bool = True
    """Add the project's own query (`RepoContext.profile_query`) to the templates' queries."""


def context_match(e: Experience, ctx: RepoContext) -> str:
    """Why `e`'s context matches `ctx` ("build system maven; dependency jackson-core"), or "" when
    it does not: every context list the entry names must share an element with the project's,
    and it must name a build system or a dependency (an entry without one is not specific)."""
    c = e.context
    builds = sorted(set(c.build_systems) & set(ctx.build_systems))
    deps = sorted(set(c.dependencies) & ctx.dependency_names())
    if (c.build_systems and not builds) or (c.dependencies and not deps) or not (builds or deps):
        return ""
    return "; ".join(([f"build system {', '.join(builds)}"] if builds else [])
                     + ([f"dependency {', '.join(deps[:5])}"] if deps else []))


MIN_REPOS_BY_BUILD = 2
"""Another repository's learned lesson whose context matches only on the build system is eligible
once it has worked in at least this many distinct repositories (`EntryContext.repos`)."""


def learned_match(e: Experience, ctx: RepoContext) -> str:
    """Why another repository's learned lesson `e` matches the project `ctx`, or "" when it does
    not: its context must match (`context_match`) on more than the build system -- a dependency it
    concerns that the project declares too -- or, matching on the build system alone, it must have
    worked in at least `MIN_REPOS_BY_BUILD` distinct repositories (`EntryContext.repos`). A build
    system alone (`pip`) is shared by too many projects to make one repository's lesson specific."""
    match = context_match(e, ctx)
    if not match or set(e.context.dependencies) & ctx.dependency_names():
        return match
    repos = len(set(e.context.repos))
    return f"{match}; worked in {repos} repositories" if repos >= MIN_REPOS_BY_BUILD else ""


def project_names(ctx: RepoContext) -> set[str]:
    """The package names a project names: its declared dependencies, its test frameworks
    (`jest`, `pytest`) and the words of its commands (an `apt-get install libonig-dev` of its CI
    or plan), normalised."""
    return ctx.dependency_names() | _command_names(tuple(ctx.commands), tuple(ctx.frameworks))


@functools.lru_cache(maxsize=64)
def _command_names(commands: tuple[str, ...], frameworks: tuple[str, ...]) -> frozenset[str]:
    """`project_names`' words of the commands and test frameworks, normalised; cached because a
    retrieval asks once per hand-written entry (`hand_written_reason`, ~270 per mask)."""
    words = {w.lower() for c in commands for w in re.findall(r"[A-Za-z0-9][\w.+-]*", c)}
    words |= {f.lower() for f in frameworks}
    return frozenset(re.sub(r"[-_.]+", "-", w) for w in words)


def _versions_in(spec: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)*", spec)


def _just_above(v: str) -> str:
    """The version right above `v` as `satisfies` compares (its last part + 1: `6.0` -> `6.1`;
    a comparison uses as many parts as the constraint names, so `6.0.0.1` is not above `>6.0`)."""
    parts = v.split(".")
    return ".".join(parts[:-1] + [str(int(parts[-1]) + 1)])


def ranges_meet(a: str, b: str) -> bool:
    """Whether some version satisfies both ranges (`satisfies` syntax; "" admits every version).
    Tried on the versions either names, the one right above each, and 0: `<58` and `>=61`
    do not meet, `<58` and `>=40` do, `>6.0` and `<6.2.5` do (6.1)."""
    from agents.ecosystems.toolchain import satisfies

    if not a.strip() or not b.strip():
        return True
    tries = ["0"] + [t for v in _versions_in(a) + _versions_in(b) for t in (v, _just_above(v), f"{v}.0.0.1")]
    return any(satisfies(v, a) and satisfies(v, b) for v in tries)


def outside_range(e: Experience, ctx: RepoContext) -> str:
    """Why the hand-written entry `e` is outside the project's known context by its declared
    ranges, or "" when it is not (or the fact is unknown): the project's toolchain version
    (`RepoContext.toolchain`; the first dotted number of a label, `gcc 12, cmake 3.25` -> 12, as
    `agents.memory.before.context_for` reads the plan's) is outside `EntryContext.toolchain`; the project's files
    (`RepoContext.files`, when known) match none of `EntryContext.files`; or the project declares a
    package of `EntryContext.versions` with a specifier that admits none of those versions.
    `Retriever.retrieve` holds such an entry back before planning; the error text still finds it."""
    from agents.ecosystems.toolchain import satisfies

    c = e.context
    tool = next(iter(_versions_in(ctx.toolchain or "")), "")  # its version, as `before.context_for` reads a label
    if c.toolchain and tool and not satisfies(tool, c.toolchain):  # (`go 1.22`, `jdk 17 + maven`: unknown if none)
        return f"toolchain {ctx.toolchain} outside {c.toolchain}"
    if c.files and ctx.files and not any(fnmatch.fnmatch(f, pat) for f in ctx.files for pat in c.files):
        return f"none of {', '.join(c.files)}"
    declared = {canonicalize_name(k): v for k, v in ctx.declared.items()}
    for name, want in c.versions.items():
        have = declared.get(name, "")
        if have and _versions_in(have) and not ranges_meet(have, want):
            return f"declares {name}{have}, outside {want}"
    return ""


def lesson_match(e: Experience, ctx: RepoContext) -> str | None:
    """Why a lesson of the loop's moves (`Experience.moves`) may be replayed for the project `ctx`,
    None when it may not: on a plan of the lesson's candidate only, and then for its own
    repositories, or for another repository whose context matches exactly (the same language,
    the same candidate, the same build systems -- never by a shared word or an overlap)."""
    c = e.context
    if not ctx.candidate or ctx.candidate not in c.candidates:
        return None
    if ctx.repo and ctx.repo in c.repos:
        return f"same repository {ctx.repo}; candidate {ctx.candidate}"
    if e.ecosystem == ctx.ecosystem and c.build_systems and sorted(set(c.build_systems)) == sorted(set(ctx.build_systems)):
        return f"context: exact (language {ctx.ecosystem}, candidate {ctx.candidate}, build systems " \
               f"{', '.join(sorted(set(ctx.build_systems)))})"
    return None


def hand_written_reason(e: Experience, ctx: RepoContext) -> str:
    """Why the hand-written entry `e` may serve the project `ctx`, for `eligible`'s why (a
    hand-written entry serves every project of its ecosystems; this says on what grounds):

    - its context matches the project's declared dependencies / build systems (`context_match`):
      `context: dependency pytest`;
    - it names no package or build system: `context not required (it names no package or build
      system)`, or "" when its `generic` reason says why (`Hit.report` adds that reason);
    - otherwise, per list it names: the packages the project names without declaring them
      (`named by the project: pytest (test framework)`; "its commands" for a word of its
      commands: `project_names`, what lets it through before planning), the build systems the
      project uses or `build systems unknown`, and those the project neither names nor uses
      (`about zlib1g-dev, which the project does not name`), then `its error decides (after a
      failure)` -- `Retriever.retrieve` holds such an entry back before planning, so it is found
      only by a failed step's output (`retrieve_for_error`).

    Never says `context:` unless `context_match` holds (`agents.memory.before.proactive` reads it)."""
    match = context_match(e, ctx)
    if match:
        return f"context: {match}"
    c = e.context
    if not (c.dependencies or c.build_systems):
        return "" if c.generic else "context not required (it names no package or build system)"
    parts: list[str] = []
    missing = False
    if c.dependencies:
        names = project_names(ctx)
        declared = ctx.dependency_names()
        frameworks = {f.lower() for f in ctx.frameworks}
        named = [d for d in c.dependencies if d in names]
        if named:
            parts.append("named by the project: " + ", ".join(
                f"{d} ({'declared' if d in declared else 'test framework' if d in frameworks else 'its commands'})"
                for d in named[:5]))
        else:
            missing = True
            parts.append(f"about {', '.join(c.dependencies[:5])}, which the project does not name")
    if c.build_systems:
        shared = sorted(set(c.build_systems) & set(ctx.build_systems))
        if shared:
            parts.append(f"build system {', '.join(shared)}")
        elif not ctx.build_systems:
            parts.append(f"build systems unknown (it is about {', '.join(c.build_systems)})")
        else:
            missing = True
            parts.append(f"about {', '.join(c.build_systems)}, which the project does not use")
    if missing:
        parts.append("its error decides (after a failure)")
    return "; ".join(parts)


def eligible(e: Experience, ctx: RepoContext | None) -> str | None:
    """Why entry `e` may serve the project `ctx` (the retrieval report's "why"), None when it may
    not. A learned entry serves its own repositories, and another only when their contexts match
    on a shared dependency, or on the build system once it has worked in several repositories
    (`learned_match`); a hand-written entry serves every project of its ecosystems, its why saying
    on what grounds (`hand_written_reason`). Without a context (a caller that knows only the error):
    "no context". A lesson bound to a hand-written rule (`Provenance.rule`) serves only its own
    repositories, never another nor a caller without a context: the rule itself serves them."""
    if e.provenance.rule:
        return f"same repository; bound to rule {e.provenance.rule}" \
            if ctx is not None and ctx.repo and ctx.repo in e.context.repos else None
    if ctx is None:
        return "no context"
    if e.context.ecosystems and not set(e.context.ecosystems) & set(family(ctx.ecosystem)):
        return None
    if e.moves:  # a lesson of the loop's moves: its repository, or an exact context (`lesson_match`)
        return lesson_match(e, ctx)
    if e.provenance.source == "learned":
        if ctx.repo and ctx.repo in e.context.repos:
            match = context_match(e, ctx)
            return "same repository" + (f"; {match}" if match else "")
        match = learned_match(e, ctx)
        return f"context: {match}" if match else None
    reason = hand_written_reason(e, ctx)
    return "hand-written" + (f"; {reason}" if reason else "")


class Hit(BaseModel):
    """One retrieved entry. `via`: "signature" (its error_signature matched the error text),
    "bm25" (text ranking only), "fused" (context retrieval) or "keyed" (a lesson of the loop's
    moves, found by repository and candidate: `Retriever.move_lessons`); `score`: higher is better
    (signature hits: 1 + reliability; keyed: the reliability; others: the RRF score); `queries`: the rule ids or query
    texts that found it; `why`: why the entry may serve this project (`eligible`)."""

    model_config = ConfigDict(extra="forbid")
    experience: Experience
    score: float
    via: Literal["signature", "bm25", "fused", "keyed"]
    queries: list[str] = Field(default_factory=list)
    why: str = ""

    def found_by(self) -> list[str]:
        """The queries and lists that found this hit, in words: `query <template id>` (a
        likely-obstacle template of `obstacles.yaml`), `profile` (the project's own query),
        `same-repository lessons` / `context lessons` (learned entries keyed by context), `error
        signature`, `error words` (BM25 on the error text), `keyed lesson` (a lesson of the
        loop's moves), `query '<text>'` (a caller's extra query)."""
        named = {"profile": "profile", "same-repository": "same-repository lessons", "context": "context lessons",
                 "signature": "error signature", "bm25": "error words", "moves": "keyed lesson"}
        out = []
        for q in self.queries:
            if q in named:
                out.append(named[q])
            elif re.fullmatch(r"[a-z0-9][a-z0-9._-]*", q):
                out.append(f"query {q}")
            else:
                out.append(f"query '{q[:60]}'")
        return out

    def report(self) -> dict:
        """The retrieval report's line for this hit: id, score, via, reliability, uses, source
        (seed, rule, learned), `why` (why the entry may serve the project -- `eligible` -- then,
        for a hand-written entry about no package, its `generic` reason, then what found it:
        "hand-written; generic: the build host's network or resources: any project may meet it;
        found by query py-tls; profile"), `found_by` (the same as a list) and `queries` (the raw
        query ids or texts that found it, at most 4)."""
        e = self.experience
        found = self.found_by()
        generic = f"generic: {e.context.generic}" if e.context.generic else ""
        why = "; ".join(x for x in (self.why, generic, f"found by {'; '.join(found)}" if found else "") if x)
        return {"id": e.id, "score": round(self.score, 4), "via": self.via, "reliability": round(e.reliability, 3),
                "uses": f"{e.times_worked}/{e.times_applied}", "source": e.provenance.source, "why": why,
                "found_by": found, "queries": self.queries[:4]}



def dropped_flags(entries: Sequence[Experience], floor: float, min_uses: int) -> list[bool]:
    """Per entry, whether it is dropped (not served, not consulted): below the floor
    (`Experience.dropped`), or a lesson bound to a rule (`Provenance.rule`) that is dropped or
    is no longer a rule of the data (`knowledge.rule_entries`) -- a rule's lesson acts only while
    its rule would. The retriever and `swemint memory list/show` use this one rule."""
    from agents.memory.knowledge import rule_entries

    own = [e.dropped(floor, min_uses) for e in entries]
    if not any(e.provenance.rule for e in entries):
        return own
    gone = {e.id for e, d in zip(entries, own, strict=True) if d}
    rules = {e.id for e in rule_entries()}
    return [d or (bool(e.provenance.rule) and (e.provenance.rule in gone or e.provenance.rule not in rules))
            for e, d in zip(entries, own, strict=True)]

class Retriever:
    """Ranks a fixed list of entries; build a new one when the store changes.

    Args:
        entries: every entry (negatives included; filtering happens per query).
        config: RetrievalConfig.
        rules: likely-obstacle rules (default: `data/experiences/obstacles.yaml`).
        embedder: optional; used only when `config.embeddings` is true.

    Raises:
        ValueError: `config.embeddings` is true but no embedder is given.
    """

    def __init__(self, entries: Sequence[Experience], config: RetrievalConfig | None = None,
                 rules: ObstacleRules | None = None, embedder: Embedder | None = None):
        self.config = config or RetrievalConfig()
        self.entries = list(entries)
        self.rules = rules if rules is not None else ObstacleRules.load()
        self._eco = np.array([e.ecosystem for e in self.entries], dtype=object)
        self._neg = np.array([e.negative for e in self.entries], dtype=bool)
        self._bound = np.array([bool(e.provenance.rule) for e in self.entries], dtype=bool)
        self._drop = self._dropped()
        self._bm25 = BM25Index([tokenize(e.search_text()) for e in self.entries],
                               k1=self.config.bm25_k1, b=self.config.bm25_b)
        self._dense: DenseIndex | None = None
        if self.config.embeddings:
            if embedder is None:
                raise ValueError("retrieval.embeddings is on but no embedder was given")
            self._dense = DenseIndex([e.search_text() for e in self.entries], embedder)

    def replace(self, exp: Experience) -> bool:
        """Swap in a new version of a stored entry whose text, ecosystem and negative flag are
        unchanged (e.g. new counters), without re-indexing. Returns False when the id is unknown."""
        for i, old in enumerate(self.entries):
            if old.id == exp.id:
                if (old.search_text(), old.ecosystem, old.negative) != (exp.search_text(), exp.ecosystem, exp.negative):
                    raise ValueError(f"entry {exp.id} changed more than its counters: rebuild the Retriever")
                self.entries[i] = exp
                self._drop = self._dropped()  # a rule's new counters drop (or restore) the lessons bound to it
                return True
        return False

    def _dropped(self) -> np.ndarray:
        """Bool array of `dropped_flags` over the entries."""
        return np.array(dropped_flags(self.entries, self.config.floor, self.config.min_uses), dtype=bool)

    def dropped(self) -> list[Experience]:
        """The entries not served because they are below the floor, or bound to a dropped rule."""
        return [e for e, d in zip(self.entries, self._drop, strict=True) if d]

    def mask(self, ecosystem: str | None, include_negative: bool | None = None,
             ctx: RepoContext | None = None) -> np.ndarray:
        """Bool array: entries of the ecosystem's family (or all when None) not dropped below the
        floor, negatives only if asked, and with `ctx` only those `eligible` for that project
        (without it, none bound to a rule: such a lesson serves its own repository only)."""
        neg_ok = self.config.include_negative if include_negative is None else include_negative
        m = np.ones(len(self.entries), dtype=bool) if not ecosystem else np.isin(self._eco, family(ecosystem))
        m = m & ~self._drop
        if ctx is not None:
            m = m & np.array([bool(m[i]) and eligible(e, ctx) is not None for i, e in enumerate(self.entries)],
                             dtype=bool)
        else:
            m = m & ~self._bound
        return m if neg_ok else m & ~self._neg

    def _lists(self, query: str, mask: np.ndarray, min_relative: float = 0.0) -> list[list[int]]:
        lists = [self._bm25.rank(tokenize(query), mask, self.config.depth, min_relative)]
        if self._dense is not None:
            lists.append(self._dense.rank(query, mask, self.config.depth, self.config.min_similarity))
        return lists

    def search(self, query: str, ecosystem: str | None = None, k: int | None = None,
               include_negative: bool | None = None) -> list[Hit]:
        """One query, BM25 (plus dense when on, fused): the top `k` entries."""
        lists = self._lists(query, self.mask(ecosystem, include_negative))
        fused = rrf(lists, k=self.config.rrf_k)[: k or self.config.k]
        return [Hit(experience=self.entries[i], score=s, via="bm25", queries=[query]) for i, s in fused]

    def retrieve(self, ctx: RepoContext, k: int | None = None, include_negative: bool | None = None,
                 extra_queries: Sequence[str] = ()) -> list[Hit]:
        """Context-aware retrieval: likely-obstacle queries for `ctx` (plus `extra_queries`) and the
        project's own query, one ranked list per query, plus its lessons keyed by context, fused
        by RRF; the top `k` of the entries eligible for the project. A hand-written entry about
        packages (its actions', or the subject its line declares) the project names nowhere
        (`project_names`), or about build systems the project does not use (when its build systems
        are known), is left to the error that names them: a C project without ncurses gets no ncurses entry before a failure, a
        project without Django no Django entry, an autotools project no CMake entry. So is one whose
        declared toolchain range, files or package versions the project's known context is outside
        (`outside_range`): a Python 3.11 project gets no Python 3.12 removal entry, a project
        without setup.py no `setup.py test` entry. Learned lessons are not held back here."""
        queries = [(r.id, r.query, r.weight) for r in self.rules.queries(ctx)] + [(q, q, 1.0) for q in extra_queries]
        if self.config.profile_query and (pq := ctx.profile_query()):
            queries.append(("profile", pq, 0.5))  # half a template: the profile adds, the templates lead
        mask = self.mask(ctx.ecosystem, include_negative, ctx)
        names = project_names(ctx)
        builds = set(ctx.build_systems)
        for i, e in enumerate(self.entries):  # an entry about packages the project does not name waits for its error
            if mask[i] and e.provenance.hand_written and (
                    (e.context.dependencies and not set(e.context.dependencies) & names)
                    or (e.context.build_systems and builds and not set(e.context.build_systems) & builds)
                    or outside_range(e, ctx)):
                mask[i] = False
        lists: list[list[int]] = []
        weights: list[float] = []
        found_by: dict[int, list[str]] = {}
        for qid, text, weight in queries:
            for ranking in self._lists(text, mask, self.config.min_relative_score):
                lists.append(ranking)
                weights.append(weight)
                for i in ranking:
                    found_by.setdefault(i, [])
                    if qid not in found_by[i]:
                        found_by[i].append(qid)
        # lessons keyed by context, not by words: the project's own repository's, then other
        # repositories' whose context matches, each list ranked by reliability
        for key, keep in (("same-repository", lambda why: why.startswith("same repository")),
                          ("context", lambda why: why.startswith("context:"))):
            keyed = [i for i, e in enumerate(self.entries) if mask[i] and e.provenance.source == "learned"
                     and keep(eligible(e, ctx) or "")]
            keyed.sort(key=lambda i: -self.entries[i].reliability)
            if keyed:
                lists.append(keyed[: self.config.depth])
                weights.append(1.0)
                for i in keyed[: self.config.depth]:
                    found_by.setdefault(i, [])
                    found_by[i].append(key)
        fused = rrf(lists, k=self.config.rrf_k, weights=weights)[: k or self.config.k]
        return [Hit(experience=self.entries[i], score=s, via="fused", queries=found_by[i],
                    why=eligible(self.entries[i], ctx) or "") for i, s in fused]

    def move_lessons(self, ctx: RepoContext, k: int = 5) -> list[Hit]:
        """The lessons of the loop's moves that may be replayed for `ctx` (`lesson_match`), not
        negative nor dropped below the floor: those of the project's own repository first, then
        by reliability, then by successes. Keyed by repository and candidate, never by words."""
        hits = []
        for i, e in enumerate(self.entries):
            if self._drop[i] or e.negative or not e.moves:
                continue
            why = lesson_match(e, ctx)
            if why:
                hits.append(Hit(experience=e, score=e.reliability, via="keyed", queries=["moves"], why=why))
        hits.sort(key=lambda h: (not h.why.startswith("same repository"), -h.score, -h.experience.times_worked,
                                 h.experience.id))
        return hits[:k]

    def signature_matches(self, error_text: str, ecosystem: str | None = None,
                          include_negative: bool | None = None, ctx: RepoContext | None = None) -> list[int]:
        """Indices of the entries (after the ecosystem/negative/context filter) whose signature matches."""
        text = clean(error_text)[-MAX_ERROR_CHARS:]
        mask = self.mask(ecosystem, include_negative, ctx)
        return [i for i, e in enumerate(self.entries) if mask[i] and e.signature_re.search(text)]

    def retrieve_for_error(self, error_text: str, ecosystem: str | None = None, k: int | None = None,
                           include_negative: bool | None = None, ctx: RepoContext | None = None) -> list[Hit]:
        """Entries for a failed step's output: signature matches first (ordered by reliability,
        then BM25 score, then signature length), then BM25-only hits (RRF of a ranking on the
        error's key lines and one on the whole text). With `ctx`, only entries `eligible` for
        that project (another repository's lesson only when the contexts match)."""
        text = clean(error_text)[-MAX_ERROR_CHARS:]
        mask = self.mask(ecosystem, include_negative, ctx)
        key_text = "\n".join(key_lines(text, n=6))
        bm = self._bm25.scores(tokenize(key_text))
        sig = self.signature_matches(text, ecosystem, include_negative, ctx)
        sig.sort(key=lambda i: (-round(self.entries[i].reliability, 2), -float(bm[i]),
                                -len(self.entries[i].error_signature)))
        hits = [Hit(experience=self.entries[i], score=1.0 + self.entries[i].reliability, via="signature",
                    queries=["signature"], why=f"signature; {eligible(self.entries[i], ctx)}") for i in sig]
        lists = self._lists(key_text, mask) + [self._bm25.rank(tokenize(text), mask, self.config.depth)]
        taken = set(sig)
        for i, s in rrf(lists, k=self.config.rrf_k):
            if i not in taken:
                hits.append(Hit(experience=self.entries[i], score=s, via="bm25", queries=["bm25"],
                                why=f"error words; {eligible(self.entries[i], ctx)}"))
        return hits[: k or self.config.k]


def format_for_prompt(hits: Sequence[Hit], max_chars: int = 4000) -> str:
    """A plain-text block of retrieved experiences for an LLM prompt (problem, solution,
    actions as JSON, success counts), cut at `max_chars`."""
    blocks = []
    for n, h in enumerate(hits, start=1):
        e = h.experience
        acts = ", ".join(a.model_dump_json() for a in e.actions) or "(none)"
        kind = "NEGATIVE (did not work)" if e.negative else f"worked {e.times_worked}/{e.times_applied}"
        blocks.append(f"[{n}] {e.id} ({e.ecosystem}; {kind}; matched by {h.via})\n"
                      f"problem: {e.problem}\nsolution: {e.solution}\nactions: {acts}")
    return "\n\n".join(blocks)[:max_chars]
