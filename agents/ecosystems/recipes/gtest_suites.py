"""The GoogleTest suites some test files define, and a run of a GoogleTest binary narrowed to them
(inside the container; class S33).

One GoogleTest binary is often built from many test files (faiss's ``faiss_test``: dozens of
``tests/*.cpp``); the touched files' owner is then the whole suite, often over the run limit on a
loaded host. ``cmake_tests.py`` (installed beside this file) narrows the run to the suites the
touched files define, as the project runs only the touched files for pytest or Jest:

- `file_suites` reads them from a file as it is on the side being run (the test_patch applied,
  so a suite it adds counts), as GoogleTest filter patterns: ``TEST``/``TEST_F``/``GTEST_TEST``
  (S, N) -> ``S.*``; ``TEST_P(S, N)`` -> ``Prefix/S.*`` for each
  ``INSTANTIATE_TEST_SUITE_P``/``INSTANTIATE_TEST_CASE_P(Prefix, S, ...)`` of the file (none:
  ``*/S.*``); ``TYPED_TEST(S, N)``/``TYPED_TEST_SUITE(S, ...)`` -> ``S/*.*``; ``TYPED_TEST_P``
  -> ``Prefix/S/*.*`` for each ``INSTANTIATE_TYPED_TEST_SUITE_P`` (none: ``*/S/*.*``);
- a binary CTest runs whole gets them as the positive part of ``GTEST_FILTER`` (`narrowed`: a
  caller's own positive part, a targeted rerun's, replaces it; its negative part, and step 5's
  dead tests, `with_excluded`, stay), after `listed_tests` shows the filter selects a test;
- tests registered one CTest test per case (``gtest_discover_tests``/``gtest_add_tests``: a
  ``--gtest_filter=Suite.Test`` argument) are kept when their case matches (`case_matches`),
  and the helper runs them with ``ctest -R``.
Standard library only (python3 >= 3.5).
"""

import fnmatch
import functools
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctest_reruns  # noqa: E402  (installed beside this file)
from ctest_reruns import log  # noqa: E402

_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
_ID = r"\s*([A-Za-z_]\w*)\s*"
_TESTS = re.compile(r"\b(TEST|TEST_F|GTEST_TEST|TEST_P|TYPED_TEST|TYPED_TEST_P)\s*\(" + _ID + "," + _ID + r"\)")
_TYPED = re.compile(r"\b(?:TYPED_TEST_SUITE|TYPED_TEST_CASE)\s*\(" + _ID + ",")
_INSTANCES = re.compile(r"\b(INSTANTIATE_TEST_SUITE_P|INSTANTIATE_TEST_CASE_P|INSTANTIATE_TYPED_TEST_SUITE_P|"
                        r"INSTANTIATE_TYPED_TEST_CASE_P)\s*\(\s*([A-Za-z_]\w*)?\s*," + _ID + ",")
_FILTER_ARG = "--gtest_filter="
MARKERS = (b"gtest_list_tests", b"_ZN7testing8internal")
"""Strings in every GoogleTest binary: the help text's flag (a static link) or the mangled names
of its internals it imports (a shared libgtest)."""
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".m", ".mm")
LIST_SECONDS = 120


def strip_comments(text):
    """`text` without comments (string literals kept, so a ``"/*"`` inside one starts none)."""
    return _NOISE.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text)


@functools.lru_cache(maxsize=64)
def definitions(text):
    """What C++ source `text` defines for GoogleTest, parsed once per text (the selection,
    `suites`, and the ids of a target that failed to build, `declared`, read the same file):
    (the ``TEST``-family macros as (kind, suite, name), in order; value-parameterised
    instantiations {suite: [prefix, ...]}; typed ones likewise; the suites of
    ``TYPED_TEST_SUITE``/``TYPED_TEST_CASE``, in order). Shared between callers: not to be changed."""
    code = strip_comments(text)
    values, typed = {}, {}
    for kind, prefix, suite in ((m.group(1), m.group(2) or "", m.group(3)) for m in _INSTANCES.finditer(code)):
        (typed if "TYPED" in kind else values).setdefault(suite, []).append(prefix)
    tests = tuple((m.group(1), m.group(2), m.group(3)) for m in _TESTS.finditer(code))
    return tests, values, typed, tuple(m.group(1) for m in _TYPED.finditer(code))


def unique(items):
    """`items` in order, each once (python3 >= 3.5: dicts keep no order there)."""
    seen = set()
    return [i for i in items if not (i in seen or seen.add(i))]


def suites(text):
    """The GoogleTest filter patterns of the suites C++ source `text` defines (module docstring),
    in order, each once; [] when it defines none this reading recognises."""
    tests, values, typed, typed_suites = definitions(text)
    out = []
    for kind, suite, _ in tests:
        if kind == "TEST_P":
            out += [(p + "/" if p else "") + suite + ".*" for p in values.get(suite, ["*"])]
        elif kind == "TYPED_TEST_P":
            out += [(p + "/" if p else "") + suite + "/*.*" for p in typed.get(suite, ["*"])]
        elif kind == "TYPED_TEST":
            out.append(suite + "/*.*")
        else:
            out.append(suite + ".*")
    return unique(out + [s + "/*.*" for s in typed_suites])


def declared(text):
    """The collectors (`envpool.grading.in_failed_collector`: the id itself, or a prefix the id
    continues with ``/``) covering the GoogleTest ids C++ source `text` declares, as GoogleTest
    prints them (class S34: a target that failed to build cannot run them): ``TEST``/``TEST_F``/
    ``GTEST_TEST`` (S, N) -> ``S.N``; ``TEST_P(S, N)`` -> ``P/S.N`` (``S.N`` for an empty
    prefix) for each instantiation of S in the file -- its ids are ``P/S.N/<param>`` -- none
    there: left out (its prefixes are unknown); ``TYPED_TEST(S, N)`` -> ``S`` (ids ``S/<i>.N``;
    every typed test of S is in S's file); ``TYPED_TEST_P`` -> ``P/S`` for each typed
    instantiation, none: left out. In order, each once."""
    tests, values, typed, _ = definitions(text)
    out = []
    for kind, suite, name in tests:
        if kind == "TEST_P":
            out += [(p + "/" if p else "") + suite + "." + name for p in values.get(suite, [])]
        elif kind == "TYPED_TEST_P":
            out += [(p + "/" if p else "") + suite for p in typed.get(suite, [])]
        elif kind == "TYPED_TEST":
            out.append(suite)
        else:
            out.append(suite + "." + name)
    return unique(out)


def file_suites(path, read=suites):
    """`suites` (or `read`: `declared`) of the file at `path`; [] when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return read(f.read())
    except (IOError, OSError):
        return []


def matches(name, patterns):
    """Whether `name` matches one of the wildcard `patterns` (``*``, ``?``; ``[`` literal)."""
    return any(fnmatch.fnmatchcase(name, p.replace("[", "[[]")) for p in patterns if p)


def selects(flt, name):
    """Whether the GTEST_FILTER value `flt` selects the test `name` (``Suite.Test``): GoogleTest's
    rule -- a match of a positive pattern (none given: ``*``) and of no negative one; ``*`` any
    string, ``?`` one character, ``:`` between patterns, ``-`` before the negative ones."""
    pos, _, neg = (flt or "").partition("-")
    return matches(name, pos.split(":") if pos else ["*"]) and not matches(name, neg.split(":"))


def narrowed(patterns, base):
    """The GTEST_FILTER value running the suites `patterns` under a caller's value `base` (None:
    none): base's positive part, when it has one (a targeted rerun naming cases), replaces the
    patterns; its negative part stays."""
    if not base:
        return ":".join(patterns)
    pos, _, neg = base.partition("-")
    if pos:
        return base
    return ":".join(patterns) + ("-" + neg if neg else "")


def case_of(cmd):
    """The one case a CTest test's command runs (its ``--gtest_filter=X`` argument, as
    ``gtest_discover_tests`` and ``gtest_add_tests`` register them); None for another test."""
    for arg in cmd[1:] if cmd else []:
        if arg.startswith(_FILTER_ARG):
            return arg[len(_FILTER_ARG):]
    return None


def case_matches(case, patterns):
    """Whether a per-case CTest test's case (``Suite.Test``, ``Prefix/Suite.Test/0``,
    ``Suite/0.Test``; gtest_add_tests: ``*/Suite.Test/*``) is in one of the suites `patterns`."""
    return matches(case, patterns) or _suite(case) in set(_suite(p) for p in patterns)


def _suite(name):
    """The suite a case or pattern names: the part before ``.`` without its instantiation prefix,
    its type index and wildcards (``P/S.T/0``, ``S/1.T``, ``*/S/*.*``: S)."""
    comps = [c for c in name.split(".", 1)[0].split("/") if c and c != "*"]
    while len(comps) > 1 and comps[-1].isdigit():
        comps.pop()
    return comps[-1] if comps else None


def is_gtest(path):
    """Whether the executable at `path` is a GoogleTest binary (one of `MARKERS` in it)."""
    return any(ctest_reruns.has_marker(path, m) for m in MARKERS)


def parse_listing(text):
    """The test names of a ``--gtest_list_tests`` output (``Suite.`` lines, indented tests, either
    maybe followed by ``  # GetParam() = ...``)."""
    out, suite = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith("Note: Google Test filter"):
            continue
        word = line.split("#", 1)[0].strip()
        if not line[0].isspace():
            suite = word if word.endswith(".") else None
        elif suite and word:
            out.append(suite + word)
    return out


def listed_tests(exe, cwd, env):
    """The tests the GoogleTest binary `exe` defines (``--gtest_list_tests``, run without any
    GTEST_FILTER in `env`); None when it cannot list them."""
    env = dict((k, v) for k, v in env.items() if k != "GTEST_FILTER")
    try:
        raw = subprocess.check_output([exe, "--gtest_list_tests"], cwd=cwd if os.path.isdir(cwd) else None, env=env,
                                      stderr=subprocess.DEVNULL, timeout=LIST_SECONDS)
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_listing(raw.decode("utf-8", "replace"))


def runs(cmd, arts):
    """Whether a CTest test's command runs one of the artifacts `arts` (its program or an
    absolute argument)."""
    return bool(cmd) and any(os.path.realpath(x) in arts for x in cmd[:1] + [a for a in cmd[1:] if os.path.isabs(a)])


def narrow(build, owners, tests, selected, base):
    """Narrow a run to the GoogleTest suites the touched files define (module docstring).

    `owners`: [(target, its artifacts, {touched source: its `file_suites`}, how many other
    sources it has)] of the targets owning the touched files; `tests`: [(CTest name, command)];
    `selected`: the CTest names the run would run; `base`: the caller's GTEST_FILTER (None: none).
    Returns (the CTest names to run, in order, and the GTEST_FILTER value for the binaries CTest
    runs whole, or None). A GoogleTest owner built from other sources as well narrows; when a
    touched source of one defines no suite this module reads, the binary cannot list its tests or
    the filter selects none of them, every binary stays whole (a helper line says why). Per-case
    CTest tests of an owner are kept when their case is in the suites (none is: all stay)."""
    keep, patterns, whole, gtests = set(selected), [], [], []
    for name, arts, mine, others in owners:
        arts = set(arts)
        mine_tests = [(n, c) for n, c in tests if n in keep and runs(c, arts)]
        if mine_tests and (any(case_of(c) for _, c in mine_tests) or any(is_gtest(a) for a in arts)):
            gtests.append((name, arts, mine, others, mine_tests))
    if not any(g[3] for g in gtests):  # each binary is built from the touched files alone: it is them
        return list(selected), None
    for name, arts, mine, others, mine_tests in gtests:
        empty = sorted(f for f, p in mine.items() if not p)
        if empty:
            log("GoogleTest binary %s: %s defines no GoogleTest suite this helper reads: the whole binaries run"
                % (name, " ".join(empty)))
            return list(selected), None
        pats = [p for f in sorted(mine) for p in mine[f]]
        log("GoogleTest binary %s (%d other source(s)): only the suites of %s: %s"
            % (name, others, " ".join(sorted(mine)), ":".join(pats)))
        patterns += [p for p in pats if p not in patterns]
        cases = [(n, case_of(c)) for n, c in mine_tests if case_of(c)]
        hit = set(n for n, k in cases if case_matches(k, pats))
        if cases and hit:
            keep -= set(n for n, _ in cases) - hit
            log("%s: %d of its %d one-case CTest tests are in those suites: ctest -R of them"
                % (name, len(hit), len(cases)))
        elif cases:
            log("%s: none of its %d one-case CTest tests is in those suites: all of them run" % (name, len(cases)))
        whole += [(n, arts) for n, c in mine_tests if not case_of(c)]
    out = [n for n in selected if n in keep]
    if not whole:
        return out, None
    if base and base.partition("-")[0]:
        log("GTEST_FILTER=%s (the caller's) stands for the binaries CTest runs whole" % base)
        return out, None
    flt = narrowed(patterns, base)
    specs = dict((s[0], s) for s in ctest_reruns.ctest_specs(build, set(n for n, _ in whole)))
    for n, arts in whole:
        exe = next((a for a in sorted(arts) if os.path.isfile(a)), None)
        spec = specs.get(n)
        names = listed_tests(exe, spec[2], spec[3]) if exe and spec else None
        if names is None:
            log("%s: its binary cannot list its tests (--gtest_list_tests): the whole binaries run" % n)
            return out, None
        chosen = [t for t in names if selects(flt, t)]
        if not chosen:
            log("%s: GTEST_FILTER=%s selects none of its %d tests: the whole binaries run" % (n, flt, len(names)))
            return out, None
        log("%s: GTEST_FILTER=%s selects %d of its %d tests" % (n, flt, len(chosen), len(names)))
    return out, flt
