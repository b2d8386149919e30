"""SQL regression suites run by PostgreSQL's pg_regress (issue 25, class S12, its second half: a
suite whose own harness starts the server from the PostgreSQL binaries, or needs the extension
installed into them).

PostgreSQL extensions and PostgreSQL-based projects keep a test as ``<suite>/sql/<name>.sql``
with its expected output ``<suite>/expected/<name>.out`` (alternatives ``<name>_1.out``;
templates ``input/<name>.source`` / ``output/<name>.source``), run by ``pg_regress`` under the
test's name ``<name>``. Two harnesses run it:

- **PGXS** (``include $(PGXS)`` in a Makefile with ``REGRESS = a b c``): ``make install`` puts the
  extension into the server's directories, ``make installcheck`` runs pg_regress on
  ``REGRESS`` (one test: ``make installcheck REGRESS=<name>``) from the Makefile's folder,
  reading ``sql/`` and ``expected/`` below ``--inputdir`` (``REGRESS_OPTS``, default ``.``).
  pg_regress starts its own server when given ``--temp-instance`` (``EXTRA_REGRESS_OPTS``, which
  PGXS passes on), so no server has to run beside the tests;
- **CMake** (timescaledb's kind): an ``add_custom_target`` whose commands call pg_regress (or a
  script named after it), typically with ``--temp-instance``; the tests are chosen by a
  ``TESTS`` variable in the environment.

`find_suites(tree, touched)` maps the touched ``sql`` / ``expected`` files to their test names
and to the harness that runs them (the nearest PGXS Makefile at or above the suite's folder whose
input folder is that folder; else the nearest CMake file with a pg_regress target), with the
evidence. `declared_majors(tree)` reads the PostgreSQL majors the repository names (CI matrices
and package names, ``postgres:<major>`` images, the build files) as data; `pick_major` keeps the
toolchain's Debian suite when its major (``cfamily.yaml`` ``postgresql_majors``) is one of them,
else moves to a suite whose major is. `pg_plan` is the plan: Debian's ``postgresql-NN`` and
``postgresql-server-dev-NN``, an unprivileged user (`USER`: initdb and postgres refuse root), the
extension built and installed into that server's directories at setup and again before every
test run (the fix may change its C or SQL), then pg_regress as that user, who owns the suite's
and build folders, through the units runner (`units.units_command`) so `unit_report_log` grades
each SQL test by name. Every repository value entering a command is shell-quoted.

When pg_regress stops before its tests (its temporary server or initdb failed: ``# postmaster
failed, ...`` then ``Bail out!``; up to 15 ``pg_regress: postmaster failed``), the logs that say why stay in the test container; each unit's
`stop_diagnosis` prints the last lines of every ``log/postmaster.log`` / ``log/initdb.log`` under
the harness's folders into the run's log, and their cause to the parser, which grades such a run
as one that ran no test (`envpool.testrun.polyglot.units_log`): the round ends ``tests_not_run``
with the cause in its reason, not ``no_fail_to_pass``. One such cause is ours to fix: Debian
trixie keeps the legacy time zone names (``US/Pacific``, which timescaledb's ``--temp-config``
sets) in ``tzdata-legacy``, so the plan installs it there (`server_packages`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agents.gitrepo import GitTree
from agents.ecosystems.cfamily.cfamily_recipe import recipes
from agents.ecosystems.drivers import MAKEFILES
from envpool.quoting import shell_word

__all__ = ["MAX_LISTED", "USER", "RegressSuite", "declared_majors", "find_suites", "harnesses", "log_folders",
           "pg_config", "pick_major", "pgxs_makefile", "server_packages", "stop_diagnosis", "suite_build",
           "suite_units", "test_names"]

USER = "swemint"
"""The unprivileged user pg_regress runs as (made at setup; initdb refuses root)."""
MAX_LISTED = 40
"""A PGXS suite of at most this many ``REGRESS`` tests runs whole, in its order (a test often
needs the ones before it: the first creates the extension); a longer one runs the touched tests."""
TEMP_INSTANCE = "/tmp/swemint-pg"
"""Where pg_regress's temporary server lives (``--temp-instance``)."""
BUILD_LOG = "/tmp/swemint-build.log"
SERVER_LOGS = ("postmaster.log", "initdb.log")
"""The logs pg_regress (and a ``logging_collector`` of the temporary server) write below a
``log/`` folder: why the temporary server or its initdb failed."""
LOG_LINES = 200
"""At most this many last lines of each server log a stopped run prints."""
MAX_LOGS = 6
"""At most this many server logs a stopped run prints."""

_TEST_FILE = re.compile(r"^(?:(?P<dir>.*)/)?(?P<kind>sql|expected|input|output)/(?P<name>[\w.+-]+?)"
                        r"(?P<ext>\.sql|\.out|\.source)$")
_ALT = re.compile(r"^(.+)_\d+$")
_PGXS_INCLUDE = re.compile(r"^\s*-?include\s+\$[({]PGXS[)}]", re.M)
_ASSIGN = re.compile(r"^\s*(?:override\s+)?([A-Z_]+)\s*[:+?]?=\s*(.*)$")
_CUSTOM_TARGET = re.compile(r"add_custom_target\s*\(\s*([\w.+-]+)", re.I)


@dataclass
class RegressSuite:
    """The pg_regress tests of one harness that the touched files belong to.

    `kind`: ``pgxs`` or ``cmake``; `folder`: the suite's folder (holding ``sql/``, "" = the
    root); `build`: the PGXS Makefile or the CMake file of the target; `target`:
    ``installcheck`` or the CMake target; `names`: the touched tests' names; `run`: the names
    the run gives the harness, in order (PGXS: its ``REGRESS`` list when short, the touched
    ones added; CMake: the touched ones); `files`: the touched files; `evidence`: why."""

    kind: str
    folder: str
    build: str
    target: str
    names: list[str] = field(default_factory=list)
    run: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    evidence: str = ""

    @property
    def make_folder(self) -> str:
        """The folder the harness runs in (a PGXS Makefile's; "" = the root)."""
        d = str(PurePosixPath(self.build).parent)
        return "" if d == "." else d


def _folder(path: str) -> str:
    d = str(PurePosixPath(path).parent)
    return "" if d == "." else d


def _join(*parts: str) -> str:
    out = str(PurePosixPath(*[p for p in parts if p and p != "."])) if any(p and p != "." for p in parts) else ""
    return "" if out == "." else out


def test_names(tree: GitTree, touched: list[str]) -> dict[str, dict[str, list[str]]]:
    """suite folder -> {test name -> the touched files naming it}: ``<suite>/sql/<name>.sql``,
    ``<suite>/expected/<name>.out`` (an alternative output ``<name>_N.out`` names ``<name>``
    when ``sql/<name>_N.sql`` is neither in the tree nor touched), ``input/<name>.source``,
    ``output/<name>.source``."""
    out: dict[str, dict[str, list[str]]] = {}
    known = set(tree.files) | set(touched)
    for path in touched:
        m = _TEST_FILE.match(path)
        if not m or (m["kind"], m["ext"]) not in (("sql", ".sql"), ("expected", ".out"), ("input", ".source"),
                                                  ("output", ".source")):
            continue
        suite, name = m["dir"] or "", m["name"]
        alt = _ALT.match(name)
        if m["kind"] in ("expected", "output") and alt and _join(suite, "sql", name + ".sql") not in known and \
                _join(suite, "input", name + ".source") not in known:
            name = alt.group(1)
        out.setdefault(suite, {}).setdefault(name, []).append(path)
    return out


def _assignments(text: str) -> dict[str, str]:
    """A Makefile's variable assignments (continuation lines joined; ``+=`` appends)."""
    out: dict[str, str] = {}
    for line in text.replace("\\\n", " ").splitlines():
        m = _ASSIGN.match(line)
        if m and not line.startswith("\t"):
            out[m.group(1)] = (out.get(m.group(1), "") + " " + m.group(2)).strip() if "+=" in line else m.group(2)
    return out


def pgxs_makefile(text: str) -> bool:
    """Whether a Makefile `text` builds with PGXS (``include $(PGXS)``)."""
    return bool(_PGXS_INCLUDE.search(text))


def _inputdir(opts: str) -> str:
    m = re.search(r"--inputdir[= ]\s*(\S+)", opts)
    return m.group(1).strip("'\"").removeprefix("./").rstrip("/") if m else ""


def _pgxs_owner(tree: GitTree, suite: str) -> tuple[str, dict[str, str]] | None:
    """(Makefile, its assignments) of the nearest PGXS Makefile at or above `suite` whose
    pg_regress input folder (``--inputdir`` of ``REGRESS_OPTS``, else its own folder) is `suite`."""
    d = suite
    while True:
        for name in MAKEFILES:
            mk = _join(d, name)
            text = tree.read(mk, limit=400_000) if tree.exists(mk) else None
            if text and pgxs_makefile(text):
                var = _assignments(text)
                if _join(d, _inputdir(var.get("REGRESS_OPTS", ""))) == suite:
                    return mk, var
        if not d:
            return None
        d = _folder(d)


def _regress_list(tree: GitTree, suite: str, value: str) -> list[str]:
    """The test names of a ``REGRESS`` value: its plain words; a value computed by make
    (``$(patsubst sql/%.sql,%,$(wildcard sql/*.sql))``) is every ``sql/*.sql`` of the suite."""
    if "$(" in value or "${" in value:
        prefix = _join(suite, "sql") + "/"
        return sorted(PurePosixPath(f).stem for f in tree.files
                      if f.startswith(prefix) and f.endswith(".sql") and "/" not in f[len(prefix):])
    return [w for w in value.split() if re.fullmatch(r"[\w.+-]+", w)]


def _cmake_targets(tree: GitTree, path: str) -> list[tuple[str, bool]]:
    """(target, uses a temporary instance) of the ``add_custom_target`` blocks of the CMake file
    `path` whose commands call pg_regress (its name, a variable or a script named after it)."""
    text = tree.read(path, limit=400_000) or ""
    out: list[tuple[str, bool]] = []
    starts = [m for m in _CUSTOM_TARGET.finditer(text)]
    for i, m in enumerate(starts):
        body = text[m.start(): starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        depth, end = 0, len(body)
        for j, ch in enumerate(body):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and ch == ")":
                end = j
                break
        block = body[:end]
        if re.search(r"pg_regress", block, re.I):
            out.append((m.group(1), bool(re.search(r"temp[-_]instance", block, re.I))))
    return out


def _cmake_owner(tree: GitTree, suite: str) -> tuple[str, str, bool] | None:
    """(CMake file, target, temporary instance) of the nearest CMake file at or above `suite`
    with a pg_regress target: one using a temporary instance first, one not named ``local``
    (a target for a server already running) before one that is."""
    d = suite
    while True:
        mk = _join(d, "CMakeLists.txt")
        if tree.exists(mk):
            targets = _cmake_targets(tree, mk)
            if targets:
                best = sorted(targets, key=lambda t: (not t[1], "local" in t[0].lower()))[0]
                return mk, best[0], best[1]
        if not d:
            return None
        d = _folder(d)


def find_suites(tree: GitTree, touched: list[str]) -> list[RegressSuite]:
    """The pg_regress suites the touched files belong to (module docstring), PGXS before CMake
    for one folder; a folder no harness owns is left out."""
    out: list[RegressSuite] = []
    for suite, names in test_names(tree, touched).items():
        files = [f for fs in names.values() for f in fs]
        touched_names = list(names)
        pgxs = _pgxs_owner(tree, suite)
        if pgxs is not None:
            mk, var = pgxs
            listed = _regress_list(tree, suite, var.get("REGRESS", ""))
            run = listed + [n for n in touched_names if n not in listed] if len(listed) <= MAX_LISTED \
                else touched_names
            said = f"REGRESS = {' '.join(listed)[:200]}" if listed else "no REGRESS list"
            out.append(RegressSuite(kind="pgxs", folder=suite, build=mk, target="installcheck", names=touched_names,
                                    run=run, files=files, evidence=(
                                        f"{', '.join(files[:6])} -> pg_regress tests {', '.join(touched_names)}; "
                                        f"{mk} includes $(PGXS) ({said}): make installcheck")))
            continue
        cm = _cmake_owner(tree, suite)
        if cm is not None:
            path, target, temp = cm
            out.append(RegressSuite(kind="cmake", folder=suite, build=path, target=target, names=touched_names,
                                    run=touched_names, files=files, evidence=(
                                        f"{', '.join(files[:6])} -> pg_regress tests {', '.join(touched_names)}; "
                                        f"{path}: target {target} runs pg_regress"
                                        + (" with a temporary instance" if temp else ""))))
    return out


def harnesses(tree: GitTree) -> bool:
    """Whether the tree has a pg_regress harness near the root: a PGXS Makefile at most two
    folders down."""
    for f in tree.files[:20000]:
        if f.count("/") <= 2 and PurePosixPath(f).name in MAKEFILES:
            if pgxs_makefile(tree.read(f, limit=400_000) or ""):
                return True
    return False


# -- the PostgreSQL major ------------------------------------------------------------------------

_MAJOR_PATTERNS = (
    re.compile(r"postgresql(?:-server-dev|-client|-contrib)?-(\d{2})\b", re.I),
    re.compile(r"\bpostgres(?:ql)?:(\d{2})(?:[.\-\w]*)\b", re.I),
    re.compile(r"\b(?:pg|postgres|postgresql)[_-]?(?:version|major|ver)?s?\b['\"]?\s*[:=]\s*\[([^\]\n]*)\]", re.I),
    re.compile(r"\b(?:pg|postgres|postgresql)[_-]?(?:version|major|ver)s?\b['\"]?\s*[:=]\s*['\"]?(\d{2})\b", re.I),
)


def declared_majors(tree: GitTree) -> tuple[list[int], list[str]]:
    """(the PostgreSQL majors the repository names, the files naming them), read as data from
    its CI files (``.github/workflows``, ``.travis.yml``, ``.gitlab-ci.yml``) and build files
    (the root Makefile, CMakeLists.txt, ``*.cmake``): ``postgresql-server-dev-15`` and kin,
    ``postgres:16`` images, ``pg: [14, 15]`` / ``PG_VERSION: 15`` matrices and variables.
    Majors 10..40 only (9.x are not majors of this form)."""
    files = [f for f in tree.files if f.startswith(".github/workflows/") and f.endswith((".yml", ".yaml"))]
    files += [f for f in (".travis.yml", ".gitlab-ci.yml", "Makefile", "CMakeLists.txt") if tree.exists(f)]
    files += [f for f in tree.files if f.endswith(".cmake") and f.count("/") <= 1][:20]
    majors: set[int] = set()
    named: list[str] = []
    for f in files:
        text = tree.read(f, limit=400_000) or ""
        found = {int(n) for p in _MAJOR_PATTERNS for m in p.findall(text) for n in re.findall(r"\d{2}", m)}
        found = {n for n in found if 10 <= n <= 40}
        if found:
            majors |= found
            named.append(f)
    return sorted(majors), named


def pick_major(declared: list[int], gcc: str, floor: str | None, fixed: bool) -> tuple[str, str, str]:
    """(gcc major, PostgreSQL major, note): the toolchain's Debian suite (`gcc`, see
    `envpool.toolchains.cfamily_image.DEBIAN_GCC`) when its PostgreSQL major is `declared` (or
    nothing is declared, or the toolchain is `fixed` by a request); else the suite nearest to
    it whose major is declared and whose gcc meets the C++ `floor`; none such: the suite's own
    major, noted."""
    from envpool.toolchains.cfamily_image import DEBIAN_GCC

    served = recipes()["postgresql_majors"]
    own = served[DEBIAN_GCC[gcc]]
    if not declared or int(own) in declared or fixed:
        why = f"the repository names PostgreSQL {', '.join(map(str, declared))}" if declared else \
            "the repository names no PostgreSQL major"
        return gcc, own, f"PostgreSQL {own} (Debian {DEBIAN_GCC[gcc]}); {why}"
    fits = [g for g in sorted(DEBIAN_GCC, key=int) if int(served[DEBIAN_GCC[g]]) in declared and
            (not floor or int(g) >= int(floor))]
    if fits:
        g = min(fits, key=lambda x: abs(int(x) - int(gcc)))
        major = served[DEBIAN_GCC[g]]
        return g, major, (f"PostgreSQL {major} (Debian {DEBIAN_GCC[g]}, not {DEBIAN_GCC[gcc]}'s {own}): the "
                          f"repository names PostgreSQL {', '.join(map(str, declared))}")
    return gcc, own, (f"PostgreSQL {own} (Debian {DEBIAN_GCC[gcc]}): the repository names PostgreSQL "
                      f"{', '.join(map(str, declared))}, which no Debian suite here serves")


def server_packages(gcc: str) -> list[str]:
    """The Debian packages installed beside the server on the Debian suite of toolchain `gcc`
    (``cfamily.yaml`` ``postgresql_packages``: trixie's ``tzdata-legacy``, the legacy time zone
    names such as ``US/Pacific`` that regression configs use)."""
    from envpool.toolchains.cfamily_image import DEBIAN_GCC

    return list(recipes().get("postgresql_packages", {}).get(DEBIAN_GCC[gcc], []))


def pg_config(major: str) -> str:
    """The ``pg_config`` of PostgreSQL `major`'s server development files on Debian."""
    return f"/usr/lib/postgresql/{major}/bin/pg_config"


# -- the commands --------------------------------------------------------------------------------

def _make(folder: str) -> list[str]:
    return ["make", *(["-C", folder] if folder else [])]


def suite_build(suite: RegressSuite, major: str, build_dir: str, jobs: int) -> str:
    """The command building the harness of `suite` and installing it into PostgreSQL `major`'s
    directories (run as root): PGXS ``make`` + ``make install`` with ``PG_CONFIG``; CMake: the
    build folder (configured at setup) built and installed."""
    if suite.kind == "pgxs":
        make = " ".join(shell_word(w) for w in [*_make(suite.make_folder), f"PG_CONFIG={pg_config(major)}"])
        return f"{make} -j{jobs} && {make} install"
    return f"cmake --build {shell_word(build_dir)} -j{jobs} && cmake --install {shell_word(build_dir)}"


def owned_folders(suites: list[RegressSuite], build_dir: str) -> list[str]:
    """The folders `USER` must own for pg_regress to write its results (absolute): each PGXS
    Makefile's folder; for a CMake target the build folder and the whole checkout -- its
    commands call wrapper scripts that write beside themselves, outside the suite's folder
    (timescaledb's ``tsl/test`` target runs ``test/pg_regress.sh``, which writes
    ``test/temp_schedule``: ``Permission denied``, then pg_regress stops on the missing schedule),
    and which script a target calls is a CMake variable the tree alone does not resolve."""
    out: list[str] = []
    for s in suites:
        for d in _written(s, build_dir):
            if d not in out:
                out.append(d)
    return out


def _written(suite: RegressSuite, build_dir: str) -> list[str]:
    """The folders `suite`'s pg_regress writes in (`owned_folders`), the build folder first."""
    return [_join("/testbed", suite.make_folder)] if suite.kind == "pgxs" else [build_dir, "/testbed"]


def log_folders(suite: RegressSuite, index: int, build_dir: str) -> list[str]:
    """The folders the server logs of `suite` (the `index`-th of the run) may be under
    (absolute), searched in this order: the folders its pg_regress writes in (a PGXS suite's
    Makefile folder, then its temporary instance ``TEMP_INSTANCE-<index>``; a CMake target's
    build folder, then the checkout) -- its own only, not another suite's."""
    temp = [f"{TEMP_INSTANCE}-{index}"] if suite.kind == "pgxs" else []
    return _written(suite, build_dir) + temp


def stop_diagnosis(folders: list[str]) -> str:
    """The `units.Unit.after` script of a pg_regress unit (run as root when the unit failed):
    when the unit's output says pg_regress stopped before its tests
    (`envpool.testrun.polyglot.units_log.STOP_LINE_ERE`: the temporary server or its initdb
    failed), its first such line behind ``|! swemint-stop: `` (the parser's: the unit ran no
    test; no other unit's output declares a stop), the last `LOG_LINES` lines of each server log in a ``log/`` folder under `folders`
    (the postmaster logs; none: the initdb logs -- `SERVER_LOGS`' first kind found; at most
    `MAX_LOGS`) behind ``| `` (the run's log), and
    each one's cause -- its first ``FATAL:`` / ``PANIC:`` / ``: error:`` line with the line
    before it (``invalid value for parameter "TimeZone"`` precedes the ``FATAL``), not counting
    ``the database system is starting up`` (pg_regress's own connection probes) -- behind
    ``|! swemint-log: <file>: `` (the parser's, into the run's anomaly). Prints nothing for a
    unit whose tests ran. Every folder is quoted; file names and log lines are printed by
    ``printf '%s'`` (no escape in them is interpreted: awk ``-v`` would turn a folder's literal
    ``\\n`` into a line of its own, a forged result line), and a log whose path holds a
    character that is not printable (a newline, a control character; in the C locale any
    non-ASCII byte) is not read: its path could not be printed as one line."""
    from envpool.testrun.polyglot.units_log import STOP_LINE_ERE

    dirs = " ".join(shell_word(d) for d in folders)
    finds = [f"$(find {dirs} -type f -path '*/log/*' ! -path '*[![:print:]]*' -name {shell_word(n)} 2>/dev/null "
             f"| head -n {MAX_LOGS})" for n in SERVER_LOGS]
    return (f"grep -aqE {shell_word(STOP_LINE_ERE)} /tmp/swemint-unit.log || exit 0; "
            f"grep -aE {shell_word(STOP_LINE_ERE)} /tmp/swemint-unit.log | head -n 1 | cut -c1-300 | "
            "while IFS= read -r l; do printf '|! swemint-stop: %s\\n' \"$l\"; done; "
            f"logs={finds[0]}; " + "".join(f'[ -n "$logs" ] || logs={f}; ' for f in finds[1:]) +
            '[ -n "$logs" ] || exit 0; printf \'%s\\n\' "$logs" | while IFS= read -r f; do '
            f"printf '| swemint: the last {LOG_LINES} lines of %s:\\n' \"$f\"; "
            f"tail -n {LOG_LINES} \"$f\" | cut -c1-600 | sed 's/^/| /'; "
            "grep -a -v -E 'the database system is (starting up|shutting down)' \"$f\" | "
            "grep -a -m1 -B1 -E '(FATAL|PANIC): |: error: ' | cut -c1-300 | "
            "while IFS= read -r l; do printf '|! swemint-log: %s: %s\\n' \"$f\" \"$l\"; done; done")


def suite_units(suites: list[RegressSuite], major: str, build_dir: str) -> list:
    """One unit (`units.Unit`) per suite: pg_regress through its harness as `USER`. PGXS:
    ``make installcheck REGRESS=<run>`` with ``EXTRA_REGRESS_OPTS=--temp-instance=...`` (pg_regress
    starts its own server from ``PG_CONFIG``'s binaries); CMake: ``make -C <build> <target>`` with
    ``TESTS=<run>`` in the environment. The unit's id is the harness as Multi-SWE-bench would
    name it (``<folder>/installcheck``, the CMake target); its SQL tests are graded by name.
    A unit that fails prints the server's logs when pg_regress stopped before its tests
    (`stop_diagnosis` over its own `log_folders`)."""
    from agents.ecosystems.cfamily.units import Unit

    units = []
    for i, s in enumerate(suites):
        after = stop_diagnosis(log_folders(s, i, build_dir))
        run = ["runuser", "-u", USER, "--"]
        if s.kind == "pgxs":
            argv = run + [*_make(s.make_folder), f"PG_CONFIG={pg_config(major)}", "installcheck",
                          f"REGRESS={' '.join(s.run)}", f"EXTRA_REGRESS_OPTS=--temp-instance={TEMP_INSTANCE}-{i}"]
            uid = f"{s.make_folder}/installcheck" if s.make_folder else "installcheck"
        else:
            argv = run + ["env", f"TESTS={' '.join(s.run)}", "make", "-C", build_dir, s.target]
            uid = s.target
        units.append(Unit(id=uid, argv=argv, evidence=s.evidence, after=after))
    return units


def user_command() -> str:
    """Setup: the unprivileged user pg_regress runs as."""
    return f"id -u {USER} >/dev/null 2>&1 || useradd --create-home --shell /bin/bash {USER}"


def test_command(suites: list[RegressSuite], major: str, build_dir: str, jobs: int) -> tuple[str, str]:
    """(the test command, the build it starts with): the harnesses built and installed again as
    root (a failed build ends the run with exit 2 and the log's tail), the folders pg_regress
    writes in given to `USER`, then the units (`units.units_command`)."""
    from agents.ecosystems.cfamily.units import units_command

    builds = " && ".join(dict.fromkeys(suite_build(s, major, build_dir, jobs) for s in suites))
    build = f"{{ {builds}; }} > {BUILD_LOG} 2>&1"
    owned = " ".join(shell_word(d) for d in owned_folders(suites, build_dir))
    prefix = (f"{build} || {{ tail -n 80 {BUILD_LOG}; echo 'swemint: the build failed'; exit 2; }}; "
              f"chown -R {USER} {owned}; ")
    return prefix + units_command(suite_units(suites, major, build_dir)), build


# -- the plan ------------------------------------------------------------------------------------

def pg_plan(tree: GitTree, instance, touched: list[str], images, req, suites: list[RegressSuite]):
    """The plan running `suites` (module docstring) on the C/C++ toolchain image of the commit's
    era, moved to a Debian suite serving a PostgreSQL major the repository names (`pick_major`):
    setup installs ``postgresql-NN``, ``postgresql-server-dev-NN``, `server_packages` (and, for CMake, the
    packages of its ``find_package`` names), makes `USER`, configures a CMake project into
    ``/opt/build`` with ``-DPG_CONFIG`` and builds and installs the harnesses; the test command
    builds and installs again, then runs pg_regress as `USER` (`test_command`), parser
    ``unit_report_log``. Raises EnvBuildError when the toolchain constraint has no image."""
    from agents.ecosystems.base import PolyPlan
    from agents.ecosystems.debian import apt_install, era_time
    from agents.ecosystems.toolchain import constrained
    from agents.ecosystems.cfamily.c_builds import CBuild, analyze
    from agents.ecosystems.cfamily.c_compilers import CXX_STD_GCC, SUITE_GCC, _gcc_major, era_gcc
    from agents.ecosystems.cfamily.c_moves import CMAKE_FLAG
    from agents.ecosystems.cfamily.c_setup import BUILD_DIR, JOBS, cmake_configure
    from envpool.errors import EnvBuildError
    from envpool.toolchains.cfamily_image import DEBIAN_GCC, ensure_image

    cmake = any(s.kind == "cmake" for s in suites)
    b = analyze(tree, touched, instance.repo.rsplit("/", 1)[-1], system="cmake") if cmake else CBuild(system="make")
    gcc = era_gcc(era_time(instance, tree))
    floor = CXX_STD_GCC.get(b.cxx_std or "")
    if floor and int(floor) > int(gcc):
        gcc = floor
    fixed = bool(req.toolchain or req.avoid)
    if fixed:
        try:
            gcc = constrained(sorted(DEBIAN_GCC, key=int), gcc, _gcc_major(req.toolchain) if
                              req.toolchain and req.toolchain in SUITE_GCC else req.toolchain, req.avoid)
        except ValueError as e:
            raise EnvBuildError(f"cfamily: {e}", instance_id=instance.instance_id) from e
    declared, named = declared_majors(tree)
    gcc, major, why = pick_major(declared, gcc, floor, fixed)
    choice = ensure_image(gcc, images, cmake=b.cmake_min if cmake else None)
    setup = [apt_install([f"postgresql-{major}", f"postgresql-server-dev-{major}", *server_packages(gcc),
                          *b.packages]), user_command()]
    if cmake:
        flags = [*b.cmake_flags, *[f for f in req.options.get("cmake_flags", []) if CMAKE_FLAG.fullmatch(f)]]
        setup.append(cmake_configure(build_type=b.build_type, flags=[*flags, f"-DPG_CONFIG={pg_config(major)}"]))
    builds = list(dict.fromkeys(suite_build(s, major, BUILD_DIR, JOBS) for s in suites))
    setup += builds
    command, build = test_command(suites, major, BUILD_DIR, JOBS)
    files = [f for s in suites for f in s.files]
    notes = [f"pg_regress: {s.evidence}"[:600] for s in suites]
    notes.append(why + (f" ({', '.join(named[:4])})" if named else ""))
    notes.append(f"pg_regress runs as {USER} (initdb refuses root), "
                 + ("with a temporary instance (--temp-instance)" if any(s.kind == "pgxs" for s in suites)
                    else "through the project's target"))
    return PolyPlan(ecosystem="cfamily", toolchain=choice.version, image=choice.image, route=choice.route,
                    build="pg_regress", substitutions=list(choice.substitutions), setup_commands=setup,
                    env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb"}, test_command=command,
                    parser="unit_report_log", test_files=files, notes=notes + list(b.notes),
                    state={"build_command": f"{build}; true", "pg_major": major,
                           "pg_suites": [{"kind": s.kind, "folder": s.folder, "build": s.build, "target": s.target,
                                          "tests": s.run} for s in suites]})
