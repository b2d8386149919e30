"""Debian's own file index as the answer to "which package provides this?" (apt-file, Debian's
tool for the question), for every ecosystem.

A `Need` is what a failure (or a repository's test driver) says the image lacks: a command, a C
header, a shared library (`libX.so.N`), a link library (`-lX`) or a pkg-config module. How each
kind becomes a path regex of the index is data (`index` in
`agents/ecosystems/recipes/diagnosis.yaml`); `DebianIndex.resolve` answers needs with Debian
packages:

1. commands the build sandbox already has (`command -v`) are not needs;
2. the index image -- the plan's base image plus ``apt-file`` and its ``apt-file update``, made
   once per base image on the build network and committed as
   ``<image_repository>:debian-index-<hash>`` -- runs ``apt-file search --regexp <query>`` per
   need in a throwaway sandbox (the environment image never gets apt-file or its 150 MB index);
3. the answer (``package: /path`` lines) is ranked (`pick`: fewer penalised words such as
   ``-dbg`` or ``mingw``, the shallowest path, named like the need, the shorter name) and every
   query is a trajectory step (`debian-index`: the query as its command, the answer as its
   output, the choice in its note). Answers are cached per base image under
   ``WORKDIR/cache/debian-index`` (a cached answer is still recorded, noted as cached).

An index that could not be built or queried is no answer. The index image's build is tried
again with backoff (`envpool.aptmirror.retry_mirror`: a Debian mirror mid-sync fails ``apt-file
update`` with ``File has unexpected size ... Mirror sync in progress?``); still failing, the
indexes of neighbouring suites answer instead (`agents.debneighbour`, the order as data:
`index.neighbours`), each package they name taken only when this suite has it (`available`), the
step's note naming the neighbour and the confirmation (`IndexAnswer.suite`; their answers are
cached in the neighbour's own file). When none answers, the index
of this run is *unavailable*: each need it cannot answer gets an `IndexAnswer` whose
`unavailable` says why (the step's note: ``index unavailable (infrastructure)``), nothing is
cached, and a caller whose fix waits on the answer raises `IndexUnavailable` (`unanswered`), an
`InfraError`: the row ends `infra_error`, not `env_failed`, and no rebuild is spent on it.

`available(packages)` asks the same index image which of a list of names Debian has
(``apt-cache policy``: the candidates a CI file names, e.g. Ubuntu's ``tclx``, are kept only
when this suite has them).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents import debneighbour
from envpool.aptmirror import mirror_failure, retry_mirror
from agents.models import StepRecord
from envpool.errors import InfraError

RULES_PATH = Path(__file__).resolve().parent / "ecosystems" / "recipes" / "diagnosis.yaml"
NAME_RE = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+/-]{0,120}")
"""A need's name: a plain token (no space, quote, shell syntax, no `..`); anything else is refused."""
DEBIAN_NAME = re.compile(r"[a-z0-9][a-z0-9.+-]{0,80}")
APT_FILE_INSTALL = ("export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && "
                    "apt-get install -y -qq --no-install-recommends apt-file >/dev/null")
INDEX_SETUP = APT_FILE_INSTALL + " && apt-file update >/dev/null"
"""Shell of the index image's one layer (on the build network, at build time)."""

NeedKind = Literal["command", "header", "library", "link", "pkgconfig", "cmake"]


class Need(BaseModel):
    """Something the image lacks: `kind` and `name` (`command tclsh`, `header openssl/ssl.h`,
    `library libonig.so.5`, `link onig`, `pkgconfig libxml-2.0`). Raises ValueError for a name
    that is not a plain token."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: NeedKind
    name: str

    @field_validator("name")
    @classmethod
    def _plain(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v) or ".." in v or v.startswith("/"):
            raise ValueError(f"not a plain file or command name: {v!r}")
        return v

    @property
    def label(self) -> str:
        """`command tclsh` (for notes)."""
        return f"{self.kind} {self.name}"


class IndexAnswer(BaseModel):
    """One query and its answer: the need, the regex searched, the packages found (ranked, best
    first), the chosen one (None: Debian has no such file here, or the index is unavailable),
    whether it came from the cache, `unavailable`: why the index could not answer (the
    mirror's error; None: it answered), and `suite`: the neighbouring suite whose index answered
    instead of this suite's (its packages confirmed in this suite; None: this suite's own)."""

    model_config = ConfigDict(extra="forbid")
    need: Need
    query: str
    packages: list[str] = Field(default_factory=list)
    chosen: str | None = None
    cached: bool = False
    unavailable: str | None = None
    suite: str | None = None


class Borrowed(BaseModel):
    """A neighbouring suite's answer for a need this suite's index could not answer: the
    `suite`, its answer's `lines`, its packages this suite has (`packages`, best first) and
    those it lacks (`lacks`), its `command`, whether it was `cached`."""

    model_config = ConfigDict(extra="forbid")
    suite: str
    lines: list[str]
    packages: list[str]
    lacks: list[str]
    command: str
    cached: bool = False


class IndexUnavailable(InfraError):
    """Debian's file index could not be built or queried (the mirror mid-sync, unresolvable, a
    failed `apt-file update`) for needs a fix waits on; outcome `infra_error`. `needs`: their
    labels; `why`: the mirror's error."""

    def __init__(self, needs: list[str], why: str, **kw):
        super().__init__(f"Debian's file index is unavailable (infrastructure) for {', '.join(needs)}: {why}", **kw)
        self.needs = list(needs)
        self.why = why


def unanswered(answers: list[IndexAnswer], **kw) -> None:
    """Raise `IndexUnavailable` (with `kw`: instance_id, log_path) when any of `answers` is
    unavailable (the index could not answer, no guess did)."""
    down = [a for a in answers if a.unavailable]
    if down:
        raise IndexUnavailable([a.need.label for a in down], down[0].unavailable or "", **kw)


@lru_cache(maxsize=1)
def index_data(path: str = str(RULES_PATH)) -> dict:
    """The `index` section of the diagnosis data: `queries` (need kind -> regex template with
    `{name}`, the name regex-escaped) and `penalties` (words that make a package a worse choice)."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))["index"]


def query_for(need: Need) -> str:
    """The apt-file regex for `need` (`^/(usr/)?s?bin/tclsh$` for `command tclsh`; `{lname}`:
    the name in lower case, as CMake's ``<name>-config.cmake`` files have it)."""
    return index_data()["queries"][need.kind].replace("{name}", re.escape(need.name)).replace(
        "{lname}", re.escape(need.name.lower()))


def library_guesses(need: Need) -> list[str]:
    """Debian's names for the development package of a library need (``cmake Leptonica``,
    ``pkgconfig lept``, ``link z``): ``lib<name>-dev``, ``<name>-dev`` (lower case, a leading
    ``lib`` and a version suffix dropped); [] for commands, headers and runtime libraries, whose
    names say nothing of their package. Debian's policy names -dev packages after the library,
    so the guess is only a fallback when the file index cannot answer, and only a name the
    suite has is taken (`DebianIndex.available`)."""
    if need.kind not in ("cmake", "pkgconfig", "link"):
        return []
    base = re.sub(r"[-_.]?\d+(?:\.\d+)*$", "", need.name.lower()).removeprefix("lib").replace("_", "-")
    if not DEBIAN_NAME.fullmatch(base) or len(base) < 2:
        return []
    return [f"lib{base}-dev", f"{base}-dev"]


def search_command(query: str) -> str:
    """The shell command searching the index for `query` (quoted)."""
    return f"apt-file search --regexp {shlex.quote(query)}"


def parse_answer(output: str) -> list[tuple[str, str]]:
    """(package, path) pairs of apt-file's ``package: /path`` lines (others ignored)."""
    out = []
    for line in (output or "").splitlines():
        pkg, sep, path = line.partition(": ")
        if sep and DEBIAN_NAME.fullmatch(pkg.strip()) and path.strip().startswith("/"):
            out.append((pkg.strip(), path.strip()))
    return out


def pick(need: Need, pairs: list[tuple[str, str]]) -> list[str]:
    """The packages of an answer, best first: fewer penalised words (`dbg`, `mingw`, `cross`,
    ...), the shallowest path (``/usr/include/zlib.h``, where the compiler looks, before
    ``/usr/include/botan-2/botan/zlib.h``), named like the need (`tcl` for tclsh, `zlib1g-dev`
    for zlib.h, `libssl-dev` for openssl/ssl.h), the shorter name."""
    penalties = index_data().get("penalties", [])
    base = re.sub(r"\.(h|hh|hpp|so.*|a|pc)$", "", need.name.rsplit("/", 1)[-1]).lower()
    stem = re.sub(r"[\d.]+$", "", re.sub(r"^lib", "", base)) or base
    depth: dict[str, int] = {}
    for p, path in pairs:
        depth[p] = min(depth.get(p, 99), path.count("/"))

    def rank(pkg: str) -> tuple[int, int, int, int, str]:
        words = [w for w in re.split(r"[-.+]", pkg) if len(w) >= 2]
        named = pkg.startswith(("lib" + stem, stem)) or any(
            w.startswith(stem) or stem.startswith(re.sub(r"\d+$", "", w) or w) for w in words)
        bad = sum(1 for p in penalties if p in words or pkg.endswith("-" + p))
        return (bad, depth[pkg], 0 if named else 1, len(pkg), pkg)

    return sorted(depth, key=rank)


class DebianIndex:
    """The index of one base image (module docstring).

    Args:
        run: the `agents.context.MintRun` (factory, config, trajectory, log).
        base_image: the toolchain image whose Debian suite answers (the plan's `image`).
        neighbour: (suite, mirror) when this is a neighbouring suite's index made from
            `base_image` (`agents.debneighbour`; its own image, cache file and search command,
            one build attempt), None for the base image's own suite.
    """

    def __init__(self, run, base_image: str, neighbour: tuple[str, str] | None = None):
        self.run = run
        self.base_image = base_image
        self.neighbour = neighbour
        from envpool.images import spec_hash

        self.key = spec_hash({"debian-index": base_image} if neighbour is None else
                             {"debian-index": base_image, "neighbour": list(neighbour)})
        cfg = run.config
        self.tag = f"debian-index-{self.key}"
        self.ref = f"{cfg.image_repository}:{self.tag}"
        self.cache_path = Path(cfg.workdir) / "cache" / "debian-index" / f"{self.key}.json"
        self._made = False
        self.unavailable: str | None = None
        """Why the index image could not be made (after every attempt), for the rest of this run."""
        self.sleep = time.sleep
        """The backoff's sleep (tests replace it)."""
        self.setup = INDEX_SETUP if neighbour is None else debneighbour.setup_script(APT_FILE_INSTALL, *neighbour)
        """The index image's layer (a test may make it fail)."""
        self.search_command = search_command if neighbour is None else debneighbour.search_command
        self._suite: tuple[str, str] | None = None
        self._probed = False
        self._policy: dict[str, bool] = {}
        """Package name -> whether this suite has it (`available`'s answers: a name is asked once)."""

    # -- the cache ------------------------------------------------------------------------
    def _cache(self) -> dict[str, list[str]]:
        try:
            return json.loads(self.cache_path.read_text())
        except (OSError, ValueError):
            return {}

    def _store(self, entries: dict[str, list[str]]) -> None:
        """Add `entries` (answers only: a failed query is never one) to the cache file."""
        if not entries:
            return
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            merged = {**self._cache(), **entries}
            tmp = self.cache_path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(merged, sort_keys=True))
            os.replace(tmp, self.cache_path)
        except OSError:
            pass  # a cache only

    # -- the index image --------------------------------------------------------------------
    def _image(self) -> str | None:
        """The index image's ref, made when the engine lacks it (a trajectory step
        `debian-index:image` per attempt, tried again with backoff while it fails because of the
        mirror: `envpool.aptmirror.retry_mirror`, `mirror_failure`; any other failure is tried once); None when every attempt failed (`unavailable` then says
        why, and later calls of this run return None at once). An engine failure is an InfraError."""
        from agents.envimage import image_id

        run = self.run
        if self._made or image_id(run.factory, self.ref):
            self._made = True
            return self.ref
        if self.unavailable is not None:
            return None
        repair = run.config.repair
        if self.neighbour is not None:  # one attempt: the next neighbour is the retry
            repair = repair.model_copy(update={"mirror_attempts": 1})
        what = f"index of {self.base_image}" + (
            f" from {self.neighbour[0]}'s Contents (a neighbouring suite)" if self.neighbour else "")

        mirror_down = [False]  # the last attempt failed because of the mirror: only that is tried again

        def attempt(k: int) -> bool:
            t = time.monotonic()
            with run.factory.sandbox(run.spec(self.base_image, "bridge"), run.log_path) as sb:
                r = sb.exec(self.setup, timeout=run.config.timeouts.setup_step, log_label="debian-index")
                run.traj(StepRecord(agent="execution", rule="debian-index:image", command=self.setup,
                                    exit_code=r.exit_code, output_excerpt=r.output[-1000:],
                                    duration=round(time.monotonic() - t, 2),
                                    note=what + (
                                        f" (attempt {k} of {repair.mirror_attempts})" if k > 1 or not r.ok else "")))
                if not r.ok:
                    tail = next((ln.strip() for ln in reversed(r.output.splitlines()) if ln.strip()), "")
                    mirror_down[0] = mirror_failure(r.output) is not None
                    self.unavailable = mirror_failure(r.output) or \
                        f"the index build failed ({'timed out' if r.timed_out else f'exit {r.exit_code}'}): {tail[:300]}"
                    return False
                sb.commit(run.config.image_repository, self.tag,
                          labels={"swemint.run": run.config.run_id, "swemint.kind": "debian-index",
                                  "swemint.base": self.base_image[:200],
                                  **({"swemint.suite": self.neighbour[0]} if self.neighbour else {})})
            self.unavailable = None
            return True

        if not retry_mirror(attempt, lambda ok: not ok and mirror_down[0], repair, sleep=self.sleep):
            return None
        self._made = True
        return self.ref

    def _search(self, commands: list[str], setup: str | None = None) -> list[tuple[int, str, float]] | None:
        """(exit code, output, seconds) of each command, run in one sandbox of the index image;
        without it, after `setup` in a sandbox of the base image, or None when there is no
        `setup` (a file search needs the index: it is unavailable)."""
        run = self.run
        image = self._image() or self.base_image
        if image != self.ref and setup is None:
            return None
        prefix = "" if image == self.ref else setup or ""
        out = []
        with run.factory.sandbox(run.spec(image, "bridge" if prefix else "none"), run.log_path) as sb:
            for i, cmd in enumerate(commands):
                r = sb.exec((prefix if i == 0 else "") + cmd, timeout=run.config.timeouts.setup_step,
                            log_label="debian-index")
                out.append((r.exit_code if r.exit_code is not None else -1, r.output, r.duration))
        return out

    # -- questions ----------------------------------------------------------------------------
    def resolve(self, needs: list[Need], sb=None) -> tuple[list[str], list[IndexAnswer]]:
        """(Debian packages to install, one answer per need asked) for `needs`; `sb`: the build
        sandbox, where commands already present are dropped first. Never raises for an answer
        Debian does not have (its `chosen` is None) nor for a need the index could not answer
        (its `unavailable` says why, nothing is cached; `unanswered` raises for it); an engine
        failure is an InfraError."""
        needs = list(dict.fromkeys(needs))
        if sb is not None:
            needs = [n for n in needs if n.kind != "command" or not sb.exec(
                f"command -v {shlex.quote(n.name)} >/dev/null 2>&1", timeout=30, log_label="debian-index").ok]
        if not needs:
            return [], []
        queries = [query_for(n) for n in needs]
        found, cached, outputs, down = self._lookup(queries)
        answers, packages = [], []
        borrowed, tried = self._borrowed([n for n, q in zip(needs, queries, strict=True) if q in down])
        guessed = self._guessed([n for n, q in zip(needs, queries, strict=True)
                                 if q not in found and not (n in borrowed and borrowed[n].packages)])
        for need, q in zip(needs, queries, strict=True):
            nb = borrowed.get(need)
            if nb is not None and nb.packages:
                ans = self._take(need, q, nb, down[q])
                answers.append(ans)
                packages += [ans.chosen] if ans.chosen and ans.chosen not in packages else []
                continue
            lines = found.get(q)
            code, output, secs = outputs.get(q, (0, "", 0.0))
            ranked = pick(need, parse_answer("\n".join(lines or [])))
            if lines is None and guessed.get(need):
                ranked = guessed[need]
                output = f"the file index did not answer; Debian has {ranked[0]} (named like the library)\n" + output
            why = down.get(q) if lines is None and not ranked else None
            if why and not output:
                output = why
            ans = IndexAnswer(need=need, query=q, packages=ranked[:10], chosen=ranked[0] if ranked else None,
                              cached=q in cached, unavailable=why)
            answers.append(ans)
            if ans.chosen and ans.chosen not in packages:
                packages.append(ans.chosen)
            said = ans.chosen or (f"index unavailable (infrastructure): {why}" if why else "no Debian package")
            if why and (nb or tried):
                said += "; " + "; ".join(([f"{nb.suite}'s index has {', '.join(nb.lacks) or 'no such file'}, "
                                           f"which this suite lacks" if nb.lacks else
                                           f"{nb.suite}'s index has no such file"] if nb else []) + tried)
            note = f"index: {need.label} -> {said}" + \
                (f" (of {', '.join(ranked[:5])})" if len(ranked) > 1 else "") + (" [cached]" if ans.cached else "")
            self.run.traj(StepRecord(agent="execution", rule="debian-index", command=self.search_command(q),
                                     exit_code=0 if lines is not None else ((code or -1) if why else code),
                                     output_excerpt="\n".join(lines or [])[:2000] if lines is not None
                                     else output[-1000:], duration=round(secs, 2), note=note))
        return packages, answers

    def _lookup(self, queries: list[str]) -> tuple[dict[str, list[str]], set[str], dict[str, tuple[int, str, float]],
                                                   dict[str, str]]:
        """For `queries`: (the answer's lines per query answered, those answered from the cache,
        (exit code, output, seconds) per query searched, why each query not answered was not).
        Fresh answers are cached; a failed search or an unavailable index never is."""
        cache = self._cache()
        ask = [q for q in dict.fromkeys(queries) if q not in cache]
        fresh: dict[str, list[str]] = {}
        outputs: dict[str, tuple[int, str, float]] = {}
        down: dict[str, str] = {}
        if ask:
            found = self._search([self.search_command(q) for q in ask])
            for i, q in enumerate(ask):
                if found is None:
                    down[q] = self.unavailable or "the index image could not be made"
                    continue
                outputs[q] = got = found[i]
                if got[0] in (0, 1) and not mirror_failure(got[1]):  # 1: nothing found (an answer too)
                    fresh[q] = [f"{p}: {path}" for p, path in parse_answer(got[1])][:50]
                else:  # the query itself failed: no answer, never cached
                    tail = next((ln.strip() for ln in reversed(got[1].splitlines()) if ln.strip()), "")
                    down[q] = mirror_failure(got[1]) or f"the index query failed (exit {got[0]}): {tail[:300]}"
            self._store(fresh)
        return ({q: cache[q] for q in queries if q in cache} | fresh, {q for q in queries if q in cache},
                outputs, down)

    # -- a neighbouring suite's index, when this suite's cannot answer ------------------------
    def suite(self) -> tuple[str, str] | None:
        """(suite, mirror) the base image's apt sources name (`agents.debneighbour.own_suite`),
        probed once (a step `debian-index:suite`, no network); None when they name none."""
        if not self._probed:
            run = self.run
            with run.factory.sandbox(run.spec(self.base_image, "none"), run.log_path) as sb:
                r = sb.exec(debneighbour.SUITE_PROBE, timeout=60, log_label="debian-index")
            self._probed, self._suite = True, debneighbour.own_suite(r.output) if r.ok else None
            run.traj(StepRecord(agent="execution", rule="debian-index:suite", command=debneighbour.SUITE_PROBE,
                                exit_code=r.exit_code, output_excerpt=r.output[-1000:], duration=round(r.duration, 2),
                                note=f"suite of {self.base_image}: " + (
                                    " from ".join(self._suite) if self._suite else "unknown (no neighbouring index)")))
        return self._suite

    def _borrowed(self, needs: list[Need]) -> tuple[dict[Need, Borrowed], list[str]]:
        """For `needs` this suite's index could not answer: the answers of neighbouring suites'
        indexes (`agents.debneighbour`, in the data's order; a need goes on to the next neighbour
        until a package of an answer is one this suite has: `available`, one policy query per
        neighbour), and a line per neighbour that could not answer."""
        got: dict[Need, Borrowed] = {}
        tried: list[str] = []
        own = self.suite() if needs and self.neighbour is None else None
        left = list(needs)
        for name in debneighbour.neighbours_of(own[0], index_data()) if own else []:
            if not left:
                break
            nb = index_for(self.run, self.base_image, (name, own[1]) if own else None)
            queries = [query_for(n) for n in left]
            found, cached, _, down = nb._lookup(queries)
            if down:
                tried.append(f"{name}'s index unavailable too: {next(iter(down.values()))}")
            ranked = {n: pick(n, parse_answer("\n".join(found[q])))[:10]
                      for n, q in zip(left, queries, strict=True) if q in found}
            have = set(self.available([p for r in ranked.values() for p in r]))
            for n, r in ranked.items():
                q = query_for(n)
                b = Borrowed(suite=name, lines=found[q], packages=[p for p in r if p in have],
                             lacks=[p for p in r if p not in have][:5], command=nb.search_command(q), cached=q in cached)
                if b.packages or n not in got:
                    got[n] = b
            left = [n for n in left if not (n in got and got[n].packages)]
        return got, tried

    def _take(self, need: Need, query: str, nb: Borrowed, why: str) -> IndexAnswer:
        """The answer to `need` from neighbour `nb` (its packages this suite has), recorded as the
        need's `debian-index` step: the neighbour's query and answer, the note naming the
        neighbour and the confirmation."""
        own = self._suite[0] if self._suite else "this suite"
        ans = IndexAnswer(need=need, query=query, packages=nb.packages, chosen=nb.packages[0], cached=nb.cached,
                          suite=nb.suite)
        note = (f"index: {need.label} -> {ans.chosen}" + (f" (of {', '.join(nb.packages[:5])})" if len(nb.packages) > 1
                                                         else "") +
                f" from {nb.suite}'s index, confirmed in {own} (apt-cache policy); {own}'s own index unavailable "
                f"(infrastructure): {why}" + (" [cached]" if nb.cached else ""))
        self.run.traj(StepRecord(agent="execution", rule="debian-index", command=nb.command, exit_code=0,
                                 output_excerpt="\n".join(nb.lines)[:2000], duration=0.0, note=note))
        return ans

    def _guessed(self, needs: list[Need]) -> dict[Need, list[str]]:
        """For library needs the file index could not answer (apt-file's Contents out of sync
        with the mirror), the development package named like the library that this suite has
        (`library_guesses`, confirmed by `available`): need -> [package] (one policy query for
        all of them)."""
        names = {n: library_guesses(n) for n in needs}
        names = {n: g for n, g in names.items() if g}
        if not names:
            return {}
        have = set(self.available([g for gs in names.values() for g in gs]))
        return {n: [next(g for g in gs if g in have)] for n, gs in names.items() if have & set(gs)}

    def available(self, packages: list[str]) -> list[str]:
        """The names of `packages` this suite has (``apt-cache policy``: a candidate version),
        in order; names that are not Debian package names are dropped. The query is the step
        `debian-index:policy`, run for the names this index has not been asked yet only (one
        query for them; a query that failed is asked again)."""
        names = [p for p in dict.fromkeys(packages) if DEBIAN_NAME.fullmatch(p)]
        unknown = [n for n in names if n not in self._policy]
        if not unknown:
            return [n for n in names if self._policy[n]]
        cmd = "apt-cache policy " + " ".join(shlex.quote(n) for n in unknown)
        # the package lists are enough: a file index (apt-file's Contents) that failed to
        # download must not hide which packages the suite has
        code, output, secs = (self._search([cmd], setup=POLICY_SETUP) or [(-1, "", 0.0)])[0]
        have, current = [], None
        for line in output.splitlines():
            if line and not line.startswith(" ") and line.endswith(":"):
                current = line[:-1].strip()
            elif current and line.strip().startswith("Candidate:") and "(none)" not in line:
                have.append(current)
        found = [n for n in unknown if n in have]
        if code == 0:  # an answer: a query that failed says nothing and is asked again
            self._policy.update({n: n in have for n in unknown})
        self.run.traj(StepRecord(agent="execution", rule="debian-index:policy", command=cmd, exit_code=code,
                                 output_excerpt=output[-2000:], duration=round(secs, 2),
                                 note=f"Debian has {found or 'none'} of {unknown}"))
        return [n for n in names if self._policy.get(n) or n in found]


POLICY_SETUP = "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null 2>&1; "
"""Before ``apt-cache policy`` in a sandbox of the base image (no index image): the package
lists only, whatever else fails."""


def index_for(run, base_image: str, neighbour: tuple[str, str] | None = None) -> DebianIndex:
    """The `DebianIndex` of `base_image` for this run (one per base image, neighbour and run)."""
    cache = run.__dict__.setdefault("_debian_index", {})
    key = base_image if neighbour is None else (base_image, *neighbour)
    if key not in cache:
        cache[key] = DebianIndex(run, base_image, neighbour)
    return cache[key]
