"""Script- and target-driven suites as tests (issue 25 item 2): when a suite's runner gives no
per-test report (``make -k check`` of a project whose harness prints no ``PASS: x`` lines, shell
scripts run one by one), the tests are the scripts and make targets that the touched files
belong to, each graded by its exit status, as Multi-SWE-bench names them: the script's path
(relative to its suite's folder) or the make target (``<folder>/<target>``, the folder of its
Makefile; a root Makefile's target alone). PASS_TO_PASS is the other such tests of the suite.

`find_units(tree, touched)` reads the tree only (no checkout):
- a touched *test script* (a script suffix -- ``.sh``, ``.bash``, ``.py``, ``.pl``, ``.tcl``,
  ``.exp``, ``.bats``, ``.rb`` -- in a test folder or named ``test*``) is a unit run with its
  ``#!`` interpreter (else the suffix's) from its own folder; its id is its path relative to the
  suite's folder (the nearest folder at or above it holding a Makefile, a CMakeLists.txt or a
  ``run*`` script; else the repository);
- any other touched file belongs to the *test targets* (``test``, ``check``, ``test-x``,
  ``x-test``, ...) of the Makefiles (at most three folders down) whose prerequisites or recipe
  name it (its file name or its stem as a word: ``tests/fullbench.c`` -> ``test-fullbench:
  fullbench``), directly or through one prerequisite whose own rule names it -- the program
  built from the file (``calc_test: calc_test.c``) is not itself a test target; when no target
  runs it, that program is the unit, built by make and run from its folder; a recipe or
  prerequisite word that is a glob (``cram -v tests/*.t``, ``prove t/*.t``, ``bats test/*.bats``:
  the class of suites whose test files are data a tool reads, not programs) names every file
  it matches, component by component (a ``*`` never crosses a ``/``; a leading ``./`` or
  ``$(srcdir)/`` is dropped); a target the
  project's CI runs (``make -C tests test-x``, `agents.ecosystems.ci`) ranks first and its
  CI file is evidence;
- the siblings: the other test scripts of the touched scripts' folders, the other test targets
  an aggregate target of the same Makefile runs (``test: test-a test-b``), at most
  `MAX_SIBLINGS`, existing at base_commit.

`units_command(units)` is one bash command running every unit in /testbed under ``timeout
UNIT_SECONDS`` and printing, after the tail of its output (each line behind ``| ``, so a unit
cannot print a result line), its per-file report lines behind ``|: `` and ``pass  <id>`` or
``FAIL  <id>``. The `unit_report_log` parser (`envpool.testrun.polyglot.units_log`) grades a
unit whose tool reported each file (``cram -v``: ``tests/x.t: passed``; ``prove``: ``t/x.t ..
ok``; automake's ``PASS: x``) per file -- ids as the tool prints them -- so one unrelated
failing file no longer hides the fix (issue 25, S13: ``make test`` running 43 cram files, one
failing on both sides, was one FAILED unit on both sides); a unit with no such report stays
graded by its exit status. Every word from the tree is shell-quoted.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agents.gitrepo import GitTree
from envpool.testpaths import role

__all__ = ["MAX_SIBLINGS", "MAX_TOUCHED", "UNIT_SECONDS", "Rule", "Unit", "UnitSuite", "find_units",
           "makefile_rules", "is_test_target", "units_command", "REPORT_ENV", "AFTER_LINES"]

MAX_TOUCHED = 6
"""At most this many units for the touched files."""
MAX_SIBLINGS = 4
"""At most this many sibling units (the suite's other tests, for PASS_TO_PASS)."""
UNIT_SECONDS = 600
"""Seconds one unit may run before `timeout` stops it (a stopped unit is FAIL)."""
MAKEFILES = ("Makefile", "makefile", "GNUmakefile", "Makefile.am")
SCRIPT_SUFFIXES = {".sh": "bash", ".bash": "bash", ".py": "python3", ".pl": "perl", ".tcl": "tclsh",
                   ".exp": "expect", ".bats": "bats", ".rb": "ruby"}
_TEST_TARGET = re.compile(r"^(?:tests?|check|checks|unittests?|unit-tests?)(?:[-_.][\w.+-]+)?$|"
                          r"^[\w.+-]+[-_.](?:tests?|check)$", re.I)
_NOT_TARGET = re.compile(r"^(?:\.|%)|\$|/")
_RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*(.*)$")
_WORD = re.compile(r"[\w.+/-]+")
_GLOB_WORD = re.compile(r"""[^\s'"`;|&<>()]*[*?][^\s'"`;|&<>()]*""")
_VAR_DIR = re.compile(r"\$[({][\w.]+[)}]/")


@dataclass
class Rule:
    """One Makefile rule: its prerequisites and recipe lines (variables left as written)."""

    prereqs: list[str] = field(default_factory=list)
    recipe: list[str] = field(default_factory=list)

    def words(self) -> set[str]:
        """Every word of its prerequisites and recipe, and each word's file name."""
        out: set[str] = set()
        for text in [" ".join(self.prereqs), *self.recipe]:
            for w in _WORD.findall(text):
                out.add(w)
                out.add(PurePosixPath(w).name)
        return out

    def globs(self) -> list[str]:
        """The glob words of its prerequisites and recipe (``tests/*.t``), a leading ``./`` or
        ``$(var)/`` dropped; words holding other variables, and bare wildcards (``*``), are left
        out."""
        out: list[str] = []
        for text in [" ".join(self.prereqs), *self.recipe]:
            for w in _GLOB_WORD.findall(_VAR_DIR.sub("", text)):
                w = w.removeprefix("./")
                if re.search(r"\w", re.sub(r"[*?]", "", w)) and "$" not in w and w not in out:
                    out.append(w)
        return out


def glob_names(pattern: str, path: str) -> bool:
    """Whether the glob `pattern` (relative, as a recipe writes it) matches the relative `path`
    component by component (``tests/*.t`` matches ``tests/a.t``, not ``tests/big/a.t``)."""
    from fnmatch import fnmatchcase

    pp, fp = pattern.strip("/").split("/"), path.split("/")
    return len(pp) == len(fp) and all(fnmatchcase(f, p) for p, f in zip(pp, fp))


@dataclass
class Unit:
    """One test of a script- or target-driven suite: `id` (as Multi-SWE-bench names it), the
    `argv` that runs it from /testbed, and the `evidence` that makes it one. `after`: a bash
    script run (as the caller) when the unit exited non-zero, after its output and before its
    end line, its own output kept to `AFTER_LINES` lines (`units_command`); "" = none."""

    id: str
    argv: list[str]
    evidence: str
    after: str = ""


@dataclass
class UnitSuite:
    """The units of the touched files (`touched`) and their siblings (`siblings`)."""

    touched: list[Unit] = field(default_factory=list)
    siblings: list[Unit] = field(default_factory=list)

    def all(self) -> list[Unit]:
        """Touched units first, then siblings."""
        return self.touched + self.siblings


def makefile_rules(text: str) -> dict[str, Rule]:
    """The explicit rules of a Makefile: target -> Rule (continuation lines joined; pattern
    rules, special ``.X`` targets, targets holding variables or paths and variable assignments
    left out; a target listed in several rules gets them merged)."""
    rules: dict[str, Rule] = {}
    current: list[Rule] = []
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("\t"):
            for r in current:
                r.recipe.append(line.strip())
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _RULE.match(line)
        if not m or re.match(r"^\s*(?:ifn?eq|ifn?def|else|endif|include|-include|export|define|endef)\b", line):
            current = []
            continue
        prereqs_text, _, inline = m.group(2).partition(";")
        current = []
        for target in m.group(1).split():
            if _NOT_TARGET.search(target):
                continue
            rule = rules.setdefault(target, Rule())
            rule.prereqs += prereqs_text.split()
            if inline.strip():
                rule.recipe.append(inline.strip())
            current.append(rule)
    return rules


def is_test_target(name: str) -> bool:
    """Whether a make target is named like a test target (``test``, ``check``, ``test-x``,
    ``x_test``, ``unittest``)."""
    return bool(_TEST_TARGET.match(name))


def _makefiles(tree: GitTree) -> list[str]:
    return [f for f in tree.files if f.count("/") <= 3 and PurePosixPath(f).name in MAKEFILES][:300]


def _folder(path: str) -> str:
    d = str(PurePosixPath(path).parent)
    return "" if d == "." else d


def _ci_targets(tree: GitTree) -> dict[tuple[str, str], str]:
    """(folder, target) -> CI file for each ``make [-C dir] target`` of the CI's run steps."""
    from agents.ecosystems.ci import ci_steps, command_lines, split_words

    out: dict[tuple[str, str], str] = {}
    for step in ci_steps(tree):
        for line in command_lines(step.resolved()):
            words = split_words(line)
            for i, w in enumerate(words):
                if PurePosixPath(w).name not in ("make", "gmake"):
                    continue
                folder, j = "", i + 1
                while j < len(words):
                    a = words[j]
                    if a == "-C" and j + 1 < len(words):
                        folder, j = words[j + 1].strip("./") if words[j + 1] not in (".", "./") else "", j + 2
                        continue
                    if a.startswith("-") or "=" in a:
                        j += 1
                        continue
                    out.setdefault((folder.rstrip("/"), a), step.path)
                    j += 1
    return out


def _script(tree: GitTree, path: str) -> bool:
    """A test script: a script (`SCRIPT_SUFFIXES`) in the C-family group's `script` role of the
    one test-path rule set (`envpool.testpaths`: in a test folder or named like a test)."""
    return PurePosixPath(path).suffix in SCRIPT_SUFFIXES and role("cfamily", "script").matches(path)


def _suite_root(tree: GitTree, path: str) -> str:
    """The nearest folder at or above `path`'s holding a Makefile, a CMakeLists.txt or a
    ``run*`` file ("" = the repository)."""
    d = _folder(path)
    while d:
        names = {PurePosixPath(f).name for f in tree.files if _folder(f) == d}
        if names & {*MAKEFILES, "CMakeLists.txt"} or any(n.startswith(("run.", "run-", "run_")) for n in names):
            return d
        d = _folder(d)
    return ""


def _script_unit(tree: GitTree, path: str, why: str) -> Unit:
    from agents.ecosystems.drivers import shebang

    interp = shebang(tree.read(path, limit=4096) or "") or SCRIPT_SUFFIXES[PurePosixPath(path).suffix]
    root = _suite_root(tree, path)
    uid = path[len(root) + 1:] if root else path
    folder = _folder(path)
    cd = f"cd {shlex.quote(folder)} && " if folder else ""
    return Unit(id=uid, argv=["bash", "-c", f"{cd}{shlex.quote(interp)} ./{shlex.quote(PurePosixPath(path).name)}"],
                evidence=why)


def _target_unit(mk: str, target: str, why: str, program: bool = False) -> Unit:
    folder = _folder(mk)
    make = ["make", *(["-C", folder] if folder else []), target]
    if program:  # built by its target, then run from its folder
        cd = f"cd {shlex.quote(folder)} && " if folder else ""
        make = ["bash", "-c", f"{' '.join(shlex.quote(w) for w in make)} && {cd}./{shlex.quote(target)}"]
    return Unit(id=f"{folder}/{target}" if folder else target, argv=make, evidence=why)


def _owners(rules: dict[str, Rule], path: str) -> list[tuple[str, str]]:
    """(test target, why) of the rules naming `path` (its file name, or its stem as a word),
    directly or through one prerequisite whose rule names it; an aggregate target that runs
    another of them (``test: test-a test-b``) is left out for it."""
    name = PurePosixPath(path).name
    stem = PurePosixPath(path).stem
    keys = {name, path} | ({stem} if len(stem) >= 3 else set())
    naming = {t for t, r in rules.items() if keys & r.words() or t in keys or
              any(glob_names(g, path) for g in r.globs())}
    programs = keys & set(rules)  # the program built from the file (``calc_test: calc_test.c``)
    out: list[tuple[str, str]] = []
    for t in sorted(naming - programs):
        if is_test_target(t):
            glob = next((g for g in rules[t].globs() if glob_names(g, path)), None)
            out.append((t, f"target {t} runs {glob}, which matches {name}" if glob and not keys & rules[t].words()
                        else f"target {t} names {name}"))
    for t, r in sorted(rules.items()):
        via = sorted(n for n in naming if n != t and n in r.words())
        if is_test_target(t) and via and all(t != o for o, _ in out):
            out.append((t, f"target {t} runs {via[0]}, which names {name}"))
    found = {t for t, _ in out}  # the most specific: an aggregate of another found target goes
    out = [(t, why) for t, why in out if not found & (set(rules[t].words()) - {t})]
    if not out:  # no target runs it: the test program itself, built and run
        out = [(t, f"program {t} is built from {name}") for t in sorted(programs) if is_test_target(t)]
    return out


def find_units(tree: GitTree, touched: list[str], exists=None) -> UnitSuite:
    """The units of `touched` and their siblings (module docstring). `exists(path)`: whether a
    sibling exists at base_commit (default `tree.exists`)."""
    exists = exists or tree.exists
    suite = UnitSuite()
    ci = _ci_targets(tree)
    makefiles = {mk: makefile_rules(tree.read(mk, limit=400_000) or "") for mk in _makefiles(tree)}
    seen: set[str] = set()
    targets: list[tuple[int, str, str, str]] = []  # (rank, makefile, target, why)
    for path in touched:
        if _script(tree, path):
            unit = _script_unit(tree, path, f"{path} is a test script of the test_patch")
            if unit.id not in seen:
                seen.add(unit.id)
                suite.touched.append(unit)
            continue
        for mk, rules in makefiles.items():
            folder = _folder(mk)
            if folder and not path.startswith(folder + "/") and PurePosixPath(path).name not in \
                    {w for r in rules.values() for w in r.words()}:
                continue
            rel = path[len(folder) + 1:] if folder and path.startswith(folder + "/") else path
            for target, why in _owners(rules, rel) + ([] if rel == path else _owners(rules, path)):
                by = ci.get((folder, target))
                rank = 0 if by else 1
                targets.append((rank, mk, target, f"{mk}: {why}" + (f"; CI {by} runs it" if by else "")))
    for _, mk, target, why in sorted(targets, key=lambda x: x[0]):
        unit = _target_unit(mk, target, why, program=why.startswith(f"{mk}: program "))
        if unit.id not in seen and len(suite.touched) < MAX_TOUCHED:
            seen.add(unit.id)
            suite.touched.append(unit)
    # siblings: the suite's other tests
    for unit in list(suite.touched):
        if len(suite.siblings) >= MAX_SIBLINGS:
            break
        if unit.argv and unit.argv[0] == "make" and unit.argv[-1] in {t for r in makefiles.values() for t in r}:
            mk_folder = unit.argv[2] if unit.argv[1:2] == ["-C"] else ""
            target = unit.argv[-1]
            mk = next((m for m in makefiles if _folder(m) == mk_folder), None)
            rules = makefiles.get(mk, {}) if mk else {}
            groups = [r.prereqs for t, r in rules.items() if target in r.prereqs]
            others = [t for g in groups for t in g if t != target and is_test_target(t) and t in rules]
            for t in dict.fromkeys(others):
                sib = _target_unit(mk, t, f"{mk}: {t} runs beside {target}")
                if sib.id not in seen and len(suite.siblings) < MAX_SIBLINGS:
                    seen.add(sib.id)
                    suite.siblings.append(sib)
        else:
            path = next((p for p in touched if _script(tree, p) and _script_unit(tree, p, "").id == unit.id), None)
            if path is None:
                continue
            folder, suffix = _folder(path), PurePosixPath(path).suffix
            for f in sorted(tree.files):
                if _folder(f) == folder and f not in touched and PurePosixPath(f).suffix == suffix and \
                        _script(tree, f) and exists(f):
                    sib = _script_unit(tree, f, f"{f}: a test script beside {path}")
                    if sib.id not in seen and len(suite.siblings) < MAX_SIBLINGS:
                        seen.add(sib.id)
                        suite.siblings.append(sib)
    return suite


REPORT_ENV = {"CRAM": "-v"}
"""Environment asking a unit's tool for its per-file report when the recipe did not (cram reads
extra options from ``CRAM``: ``cram tests/*.t`` prints ``.!.`` without it, ``tests/a.t: passed``
with it); a value the environment already holds is kept. prove prints one line per file
without being asked."""
REPORT_LINES = 5000
"""At most this many report lines per unit."""
AFTER_LINES = 1500
"""At most this many lines of a unit's `Unit.after` output."""


AFTER_SECONDS = 120
"""The limit of a unit's after-script (it reads files the repository's run wrote, of any size)."""

PLAIN_ID = re.compile(r"[!-~](?:[ -~]*[!-~])?")
"""A unit id `units_command` runs: printable ASCII, spaces only inside (no newline or control)."""


def units_command(units: list[Unit], seconds: int = UNIT_SECONDS) -> str:
    """One bash command running `units` in order (module docstring): per unit, the tail of its
    output behind ``| ``, the lines of its whole output that may be per-file report lines
    (`envpool.testrun.polyglot.units_log.REPORT_LINE_ERE`, at most `REPORT_LINES`; none starting
    with `units_log.RUNNER_LINE`, ``swemint-``: those behind ``|: `` are the after-scripts') behind ``|: ``,
    ``swemint-unit: <id> exit <rc>`` and ``pass|FAIL  <id>``. Read by `unit_report_log` (per
    file where the tool reported files, else by exit status); `script_status_log` reads the
    ``pass|FAIL`` lines (exit status only). The tail's last line is ended when the unit's output
    did not end its own (pg_regress 16+ ends with ``Bail out!`` and no newline): else the first
    report line would be glued to it and lost.

    A unit with an `Unit.after` script that exited non-zero runs it (``bash -c``, the unit's
    output still in ``/tmp/swemint-unit.log``; given as ``SWEMINT_AFTER`` for that call only)
    before its end line, its output cut to `AFTER_LINES`: what it prints behind ``| `` is log,
    behind ``|! `` (`units_log.RUNNER_PREFIX`) it reaches the parser as the runner's own lines.
    Without such a unit the command is as before (the hook is not written).

    A unit whose id is not printable ASCII (`PLAIN_ID`: a file name with a newline or a control
    character, which a repository can commit) is left out: its end line ``swemint-unit: <id>
    exit <rc>`` could not be read back as its own (a newline in it could print a forged end
    line). Spaces inside an id are kept (the parsers read the id up to the last `` exit N``)."""
    from envpool.testrun.polyglot.units_log import REPORT_LINE_ERE, RUNNER_LINE

    units = [u for u in units if PLAIN_ID.fullmatch(u.id)]

    env = " ".join(f'{k}="${{{k}:-{v}}}"' for k, v in REPORT_ENV.items())
    hook = (f'if [ $rc -ne 0 ] && [ -n "${{SWEMINT_AFTER:-}}" ]; then timeout {AFTER_SECONDS} bash -c "$SWEMINT_AFTER" 2>&1 | '
            f"head -n {AFTER_LINES}; fi; ") if any(u.after for u in units) else ""
    fn = ("swemint_unit() { n=$1; shift; " + env + " timeout " + str(int(seconds)) +
          " \"$@\" > /tmp/swemint-unit.log 2>&1; "
          "rc=$?; tail -n 40 /tmp/swemint-unit.log | sed -e 's/^/| /' -e '$a\\'; "
          f"grep -aE {shlex.quote(REPORT_LINE_ERE)} /tmp/swemint-unit.log | grep -av {shlex.quote('^' + RUNNER_LINE)} | "
          f"head -n {REPORT_LINES} | sed 's/^/|: /'; "
          + hook +
          "echo \"swemint-unit: $n exit $rc\"; "
          "if [ $rc -eq 0 ]; then echo \"pass  $n\"; else echo \"FAIL  $n\"; fi; }")
    runs = "; ".join((f"SWEMINT_AFTER={shlex.quote(u.after)} " if u.after else "") + "swemint_unit "
                     + " ".join(shlex.quote(w) for w in [u.id, *u.argv]) for u in units)
    return f"{fn}; {runs}"
