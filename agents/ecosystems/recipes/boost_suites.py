"""The Boost.Test test cases some test files declare, and a run of Boost.Test binaries narrowed to
them (inside the container; class S36, the Boost.Test analogue of S33/S34).

A Boost.Test binary (``BOOST_AUTO_TEST_CASE`` in files that include
``boost/test/unit_test.hpp`` or ``boost/test/included/unit_test.hpp``) is usually one CTest test
built from many test files. Its test units have paths, ``suite/sub/case`` (the master suite,
``BOOST_TEST_MODULE``, is not part of them): Boost.Test's own id form, the one its
``--run_test`` filters use and the one this project grades (`boost_runs`,
``envpool/testrun/polyglot/boost_junit.py``).

- `definitions` reads a file as it is on the side being run (the test_patch applied): the
  suites ``BOOST_AUTO_TEST_SUITE(s)`` / ``BOOST_FIXTURE_TEST_SUITE(s, F)`` open and
  ``BOOST_AUTO_TEST_SUITE_END()`` closes (nested, in order), and the cases inside them:
  ``BOOST_AUTO_TEST_CASE(c)`` / ``BOOST_FIXTURE_TEST_CASE(c, F)`` (a case ``s/c``),
  ``BOOST_DATA_TEST_CASE(c, ...)`` / ``BOOST_DATA_TEST_CASE_F(F, c, ...)`` (a suite ``s/c`` of
  cases ``_0``, ``_1``, ...), ``BOOST_AUTO_TEST_CASE_TEMPLATE(c, T, types)`` /
  ``BOOST_FIXTURE_TEST_CASE_TEMPLATE(c, T, types, F)`` (cases ``s/c<type>``); comments skipped;
- `selection`: the filter paths running exactly those units (a template case: ``s/c*``),
  `declared`: the collectors of the ids they give (S34's analogue: a target that failed to
  build reports them; ``s/c`` of a data case covers ``s/c/_0``; a template case's ids are
  left out: its types are not read);
- `filter_value`: Boost.Test's filter set, the paths grouped by parent (``s/a,b:t/c``), given to
  a binary CTest runs whole as ``BOOST_TEST_RUN_FILTERS`` and to the JUnit rerun as
  ``--run_test`` (`narrow`: only when each such binary lists a unit the filter selects, else
  Boost.Test stops with "no test cases matching filter").
Standard library only (python3 >= 3.5).
"""

import functools
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctest_reruns  # noqa: E402  (installed beside this file)
import gtest_suites  # noqa: E402  (installed beside this file)
from ctest_reruns import log  # noqa: E402

_ID = r"\s*([A-Za-z_]\w*)\s*"
_UNITS = re.compile(r"\b(BOOST_AUTO_TEST_SUITE_END|BOOST_AUTO_TEST_SUITE|BOOST_FIXTURE_TEST_SUITE|"
                    r"BOOST_AUTO_TEST_CASE_TEMPLATE|BOOST_FIXTURE_TEST_CASE_TEMPLATE|BOOST_AUTO_TEST_CASE|"
                    r"BOOST_FIXTURE_TEST_CASE|BOOST_DATA_TEST_CASE_F|BOOST_DATA_TEST_CASE)\b\s*\("
                    r"(?:" + _ID + r"(?:,(?:" + _ID + r"(?=[,)]))?)?)?")
MARKER = b"_ZN5boost9unit_test"
"""In every Boost.Test binary: the mangled names of ``boost::unit_test`` it defines (static,
header-only) or imports (a shared libboost_unit_test_framework)."""
LIST_SECONDS = 120
_OWN_FILTER = re.compile(r"^(?:--run_test(?:=.*)?|-t.*)$")
_LISTED = re.compile(r"^( *)(\S(?:.*\S)?)$")
KINDS = ("case", "data", "template")


@functools.lru_cache(maxsize=64)
def definitions(text):
    """The test units C++ source `text` declares: [(kind, path)] in order, kind one of `KINDS`
    (module docstring); a suite end without an open suite is ignored. Cached per text (the
    S33's selection and S34's declared ids read the same file). Shared: not to be changed."""
    code = gtest_suites.strip_comments(text)
    suites, out = [], []
    for m in _UNITS.finditer(code):
        macro, first, second = m.group(1), m.group(2), m.group(3)
        if macro == "BOOST_AUTO_TEST_SUITE_END":
            if suites:
                suites.pop()
            continue
        name = second if macro == "BOOST_DATA_TEST_CASE_F" else first
        if not name:
            continue
        if macro in ("BOOST_AUTO_TEST_SUITE", "BOOST_FIXTURE_TEST_SUITE"):
            suites.append(name)
            continue
        kind = "template" if macro.endswith("_TEMPLATE") else "data" if "_DATA_" in macro else "case"
        out.append((kind, "/".join(suites + [name])))
    return tuple(out)


def selection(text):
    """The filter paths running the units `text` declares (a template case: its path and
    ``*``), in order, each once; [] when it declares none this reading recognises."""
    return gtest_suites.unique(p + ("*" if k == "template" else "") for k, p in definitions(text))


def declared(text):
    """The collectors (`envpool.grading.in_failed_collector`: the id, or a prefix its ids continue
    with ``/``) of the ids the units of `text` give: a case's path, a data case's (its ``/_N``
    cases); template cases left out. In order, each once."""
    return gtest_suites.unique(p for k, p in definitions(text) if k != "template")


def filter_value(paths):
    """Boost.Test's filter set running `paths` (``a/b/c``; a last component may end in ``*``):
    the leaf names of one parent joined by ``,`` behind it, the groups by ``:``, in first-seen
    order (``s/a``, ``s/b``, ``t`` -> ``s/a,b:t``)."""
    groups = {}
    order = []
    for p in paths:
        parent, _, leaf = p.rpartition("/")
        if parent not in groups:
            groups[parent] = []
            order.append(parent)
        if leaf not in groups[parent]:
            groups[parent].append(leaf)
    return ":".join((parent + "/" if parent else "") + ",".join(groups[parent]) for parent in order)


def selects(flt, path):
    """Whether Boost.Test's filter set `flt` selects the unit `path` (``a/b/c``): one of its
    selectors (a disabler ``!x`` or a label ``@x`` is not one) matches the path's first
    components, each against its ``,``-separated patterns (``*`` at either end)."""
    comps = path.split("/")
    for f in flt.split(":"):
        f = f.lstrip("+")
        if not f or f[0] in "!@":
            continue
        parts = f.split("/")
        if len(parts) <= len(comps) and all(gtest_suites.matches(c, p.split(",")) for c, p in zip(comps, parts)):
            return True
    return False


def parse_listing(text):
    """The test case paths of a ``--list_content`` output (one unit a line, four spaces a level,
    ``*`` after an enabled one); a suite is a line followed by a deeper one."""
    rows = []
    for line in text.splitlines():
        m = _LISTED.match(line.rstrip())
        if m and len(m.group(1)) % 4 == 0:
            rows.append((len(m.group(1)) // 4, m.group(2).rstrip("*").rstrip()))
    out, stack = [], []
    for i, (depth, name) in enumerate(rows):
        if depth > len(stack):  # not a tree this reading knows
            return []
        del stack[depth:]
        stack.append(name)
        if i + 1 == len(rows) or rows[i + 1][0] <= depth:
            out.append("/".join(stack))
    return out


def listed_cases(exe, cwd, env):
    """The test case paths the Boost.Test binary `exe` declares (``--list_content``, which
    Boost.Test prints to stderr; without any ``BOOST_TEST_RUN_FILTERS``); None when it cannot
    list them (`ctest_reruns.answer`)."""
    env = dict((k, v) for k, v in env.items() if k != "BOOST_TEST_RUN_FILTERS")
    out = ctest_reruns.answer(exe, ["--list_content"], cwd if os.path.isdir(cwd) else None, env, LIST_SECONDS)
    return None if out is None else parse_listing(out)


def is_boost(path):
    """Whether the executable at `path` is a Boost.Test binary (`MARKER` in it)."""
    return ctest_reruns.has_marker(path, MARKER)


def own_filter(cmd):
    """Whether a CTest test's command selects its own units (``--run_test``/``-t``)."""
    return any(_OWN_FILTER.match(a) for a in (cmd or [])[1:])


def narrow(build, owners, tests, selected, only):
    """The filter set for the Boost.Test binaries of a run (module docstring), or None (whole).

    `owners`: [(target, artifacts, {touched source: its `selection`}, how many other sources)]
    of the targets owning the touched files; `tests`: [(CTest name, command)]; `selected`: the
    CTest names the run runs (each one's executable, `ctest_reruns.executable`, is probed); `only`: a targeted rerun's ids (None: none) -- those that are
    units the binaries list replace the touched files' units. The touched files' units narrow
    only an owner built from other sources too; a touched file of a Boost.Test owner declaring
    none, a binary that cannot list its units, or one none of whose units the filter selects
    leaves every binary whole (a helper line says why)."""
    keep = set(selected)
    mine = [(n, c) for n, c in tests if n in keep and c and not own_filter(c)]
    specs = dict((s[0], s) for s in ctest_reruns.ctest_specs(build, set(n for n, _ in mine)))
    listed = {}
    for n, _ in mine:
        exe = ctest_reruns.executable(specs[n][1][0]) if n in specs else None
        if exe and os.path.isfile(exe) and is_boost(exe):
            listed[n] = listed_cases(exe, specs[n][2], specs[n][3])
    if not listed:
        return None
    if any(v is None for v in listed.values()):
        log("Boost.Test binary %s cannot list its test units (--list_content): the whole binaries run"
            % next(n for n, v in listed.items() if v is None))
        return None
    known = set(p for v in listed.values() for p in v)
    asked = [i for i in only or [] if any(k == i or k.startswith(i + "/") for k in known)]
    if asked:
        paths = asked
        log("targeted: the Boost.Test units %s" % " ".join(asked))
    else:
        boost = [o for o in owners if any(gtest_suites.runs(c, set(o[1])) for n, c in mine if n in listed)]
        if not any(o[3] for o in boost):  # each binary is built from the touched files alone: it is them
            return None
        paths = []
        for name, _, files, others in boost:
            empty = sorted(f for f, p in files.items() if not p)
            if empty:
                log("Boost.Test binary %s: %s declares no Boost.Test unit this helper reads: the whole binaries run"
                    % (name, " ".join(empty)))
                return None
            units = [p for f in sorted(files) for p in files[f]]
            log("Boost.Test binary %s (%d other source(s)): only the units of %s: %s"
                % (name, others, " ".join(sorted(files)), filter_value(units)))
            paths += [p for p in units if p not in paths]
    flt = filter_value(paths)
    for n, cases in sorted(listed.items()):
        chosen = [p for p in cases if selects(flt, p)]
        if not chosen:
            log("%s: the Boost.Test filter %s selects none of its %d test cases: the whole binaries run"
                % (n, flt, len(cases)))
            return None
        log("%s: the Boost.Test filter %s selects %d of its %d test cases" % (n, flt, len(chosen), len(cases)))
    return flt
