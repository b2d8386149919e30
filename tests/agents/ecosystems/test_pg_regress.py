"""S12, its second half: SQL regression suites run by PostgreSQL's pg_regress, whose harness
starts its own server (or needs the extension installed into it).

The repositories are ones the tests write: a PGXS extension (``calc.control``,
``calc--1.0.sql``, a Makefile with ``REGRESS`` and ``include $(PGXS)``, ``sql/basic.sql`` and
``expected/basic.out``), one keeping its suite under ``test/`` (``--inputdir=test``, ``REGRESS``
computed by make), one in a folder whose name needs quoting, and a CMake project whose target
calls pg_regress with a temporary instance. The selection maps the touched ``sql/<name>.sql`` /
``expected/<name>.out`` to the pg_regress test ``<name>`` and its harness; the plan installs
Debian's ``postgresql-NN`` and ``postgresql-server-dev-NN`` of the major the repository names
(else the suite's own), builds and installs the extension, and runs pg_regress as an
unprivileged user through the units runner (graded by ``unit_report_log``); a round that ran
another plan gets the ``owner_build`` move with that evidence. The Docker twin is
test_pg_regress_docker.py.
"""

from __future__ import annotations

import shlex
import shutil

import pytest

from agents.ecosystems import cfamily
from agents.ecosystems.base import PlanRequest
from agents.ecosystems.cfamily import pg_regress
from agents.ecosystems.move_types import MoveContext
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.testrun.polyglot.units_log import parse_unit_report_log
from tests.agents.ecosystems.conftest import make_instance, make_tree

WHEN = "2024-03-01 10:00:00"  # bookworm: gcc 12, PostgreSQL 15
MAKEFILE = """EXTENSION = calc
DATA = calc--1.0.sql
REGRESS = basic other
PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
"""
CONTROL = "comment = 'calc'\ndefault_version = '1.0'\nrelocatable = true\n"
SQL_BUG = ("CREATE FUNCTION calc_add(a integer, b integer) RETURNS integer\n"
           "LANGUAGE sql IMMUTABLE AS 'SELECT a - b';\n")
SQL_FIX = SQL_BUG.replace("a - b", "a + b")
BASIC = "CREATE EXTENSION calc;\nSELECT calc_add(1, 0) AS r;\n"
BASIC_OUT = "CREATE EXTENSION calc;\nSELECT calc_add(1, 0) AS r;\n r \n---\n 1\n(1 row)\n\n"
BASIC_NEW = "CREATE EXTENSION calc;\nSELECT calc_add(2, 3) AS r;\n"
BASIC_NEW_OUT = "CREATE EXTENSION calc;\nSELECT calc_add(2, 3) AS r;\n r \n---\n 5\n(1 row)\n\n"
OTHER = "SELECT calc_add(0, 0) AS r;\n"
OTHER_OUT = "SELECT calc_add(0, 0) AS r;\n r \n---\n 0\n(1 row)\n\n"
TOUCHED = ["expected/basic.out", "sql/basic.sql"]


def extension(prefix: str = "", **over: str) -> dict[str, str]:
    """A PGXS extension `calc` (with its suite basic + other) under `prefix`."""
    files = {"Makefile": MAKEFILE, "calc.control": CONTROL, "calc--1.0.sql": SQL_BUG, "sql/basic.sql": BASIC,
             "expected/basic.out": BASIC_OUT, "sql/other.sql": OTHER, "expected/other.out": OTHER_OUT}
    files.update(over)
    return {prefix + k: v for k, v in files.items() if v}


def planned(tmp_path, files, touched=TOUCHED, route="make", language="c", when=WHEN):
    tree = make_tree(tmp_path, files)
    inst = make_instance(tree, language, created_at=when)
    return tree, inst, cfamily.ECOSYSTEM.plan(tree, inst, touched, ImageConfig(), PlanRequest(route=route))


def test_touched_sql_and_expected_files_select_their_pg_regress_test_and_the_pgxs_harness(tmp_path):
    tree = make_tree(tmp_path, extension())
    [suite] = pg_regress.find_suites(tree, TOUCHED)
    assert (suite.kind, suite.folder, suite.build, suite.target) == ("pgxs", "", "Makefile", "installcheck")
    assert suite.names == ["basic"]
    assert suite.run == ["basic", "other"]  # REGRESS in its order: other needs basic's CREATE EXTENSION
    assert suite.files == TOUCHED
    assert "expected/basic.out, sql/basic.sql -> pg_regress tests basic" in suite.evidence
    assert "Makefile includes $(PGXS) (REGRESS = basic other): make installcheck" in suite.evidence
    # an alternative expected output names its test; other files name none
    assert pg_regress.test_names(tree, ["expected/basic_1.out", "calc--1.0.sql", "README.md"]) == \
        {"": {"basic": ["expected/basic_1.out"]}}
    assert pg_regress.find_suites(tree, ["calc--1.0.sql"]) == []


def test_the_plan_installs_the_extension_into_debians_postgresql_and_runs_pg_regress_as_a_user(tmp_path, image_store):
    tree, inst, plan = planned(tmp_path, extension())
    assert plan.build == "pg_regress" and plan.parser == "unit_report_log"
    assert plan.test_files == TOUCHED
    setup = "\n".join(plan.setup_commands)
    assert "--no-install-recommends postgresql-15 postgresql-server-dev-15 " in setup
    assert "useradd --create-home --shell /bin/bash swemint" in setup
    build = "make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config -j2 && make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config install"
    assert build in plan.setup_commands
    cmd = plan.test_command
    # built and installed again (the fix may change the extension), as root, before the tests
    assert cmd.startswith(f"{{ {build}; }} > /tmp/swemint-build.log 2>&1 || ")
    assert "chown -R swemint /testbed; " in cmd
    assert ("swemint_unit installcheck runuser -u swemint -- make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config "
            "installcheck 'REGRESS=basic other' EXTRA_REGRESS_OPTS=--temp-instance=/tmp/swemint-pg-0") in cmd
    assert cmd.index("chown -R swemint") < cmd.index("swemint_unit installcheck")
    # compile once: the build and install, no test
    assert cfamily.ECOSYSTEM.build_command(plan) == f"{{ {build}; }} > /tmp/swemint-build.log 2>&1; true"
    assert any("PostgreSQL 15 (Debian bookworm)" in n for n in plan.notes)
    assert any("runs as swemint" in n and "--temp-instance" in n for n in plan.notes)


def test_a_suite_under_test_with_a_computed_regress_list(tmp_path, image_store):
    mk = MAKEFILE.replace("REGRESS = basic other", "TESTS = $(wildcard test/sql/*.sql)\n"
                          "REGRESS = $(patsubst test/sql/%.sql,%,$(TESTS))\nREGRESS_OPTS = --inputdir=test")
    files = {("test/" + k if k.startswith(("sql/", "expected/")) else k): v for k, v in extension(Makefile=mk).items()}
    touched = ["test/sql/basic.sql", "test/expected/basic.out"]
    tree, _, plan = planned(tmp_path, files, touched)
    [suite] = pg_regress.find_suites(tree, touched)
    assert (suite.folder, suite.build, suite.run) == ("test", "Makefile", ["basic", "other"])
    assert "'REGRESS=basic other'" in plan.test_command


def test_every_repository_value_in_the_commands_is_quoted(tmp_path, image_store):
    folder = "ext's dir"
    touched = [f"{folder}/sql/basic.sql", f"{folder}/expected/basic.out"]
    tree, _, plan = planned(tmp_path, extension(f"{folder}/"), touched)
    q = shlex.quote(folder)
    assert f"make -C {q} PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config -j2" in plan.setup_commands[-1]
    assert f"chown -R swemint {shlex.quote('/testbed/' + folder)}; " in plan.test_command
    unit = plan.test_command.split("swemint_unit ", 2)[-1]
    words = shlex.split(unit)
    assert words[:8] == [f"{folder}/installcheck", "runuser", "-u", "swemint", "--", "make", "-C", folder]


def test_the_major_the_repository_names_picks_the_debian_suite_serving_it(tmp_path, image_store):
    ci = "jobs:\n  test:\n    strategy:\n      matrix:\n        pg: [12, 13]\n"
    _, _, plan = planned(tmp_path / "a", extension(**{".github/workflows/ci.yml": ci}))
    assert "postgresql-13 postgresql-server-dev-13" in plan.setup_commands[0]
    assert "/usr/lib/postgresql/13/bin/pg_config" in plan.test_command
    assert any("PostgreSQL 13 (Debian bullseye, not bookworm's 15): the repository names PostgreSQL 12, 13" in n
               for n in plan.notes)
    ci = "steps:\n  - run: sudo apt-get install postgresql-server-dev-17\n"
    _, _, plan = planned(tmp_path / "b", extension(**{".github/workflows/ci.yml": ci}))
    assert "postgresql-17 postgresql-server-dev-17" in plan.setup_commands[0]
    assert pg_regress.pick_major([15, 16], "12", None, False)[:2] == ("12", "15")
    assert pg_regress.pick_major([11], "12", None, False)[:2] == ("12", "15")  # no suite serves 11: noted


CMAKE_TOP = "cmake_minimum_required(VERSION 3.16)\nproject(ts C)\nadd_subdirectory(test)\n"
CMAKE_TEST = """find_program(PG_REGRESS pg_regress)
add_custom_target(
  regresschecklocal
  COMMAND ${CMAKE_COMMAND} -E env TEST_PGPORT=5432 ${CMAKE_CURRENT_SOURCE_DIR}/pg_regress.sh --port=5432
  USES_TERMINAL)
add_custom_target(
  regresscheck
  COMMAND ${CMAKE_COMMAND} -E env EXE_DIR=${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/pg_regress.sh
    --temp-instance=${CMAKE_BINARY_DIR}/tmp
  USES_TERMINAL)
add_custom_target(lint COMMAND clang-format --dry-run)
"""


def test_a_cmake_target_calling_pg_regress_with_a_temporary_instance_runs_the_touched_tests(tmp_path, image_store):
    files = {"CMakeLists.txt": CMAKE_TOP, "test/CMakeLists.txt": CMAKE_TEST, "src/ts.c": "int ts;\n",
             "test/pg_regress.sh": "#!/bin/bash\n", "test/sql/agg.sql": "SELECT 1;\n",
             "test/expected/agg.out": "SELECT 1;\n"}
    touched = ["test/sql/agg.sql", "test/expected/agg.out"]
    tree, _, plan = planned(tmp_path, files, touched, route="cmake")
    [suite] = pg_regress.find_suites(tree, touched)
    assert (suite.kind, suite.build, suite.target, suite.run) == ("cmake", "test/CMakeLists.txt", "regresscheck",
                                                                  ["agg"])
    assert "target regresscheck runs pg_regress with a temporary instance" in suite.evidence
    assert plan.build == "pg_regress"
    configure = next(c for c in plan.setup_commands if c.startswith("cmake -S "))
    assert "-DPG_CONFIG=/usr/lib/postgresql/15/bin/pg_config" in configure
    assert "cmake --build /opt/build -j2 && cmake --install /opt/build" in plan.setup_commands
    # the whole checkout: the target's wrapper script writes beside itself (timescaledb's test/temp_schedule)
    assert "chown -R swemint /opt/build /testbed; " in plan.test_command
    assert "swemint_unit regresscheck runuser -u swemint -- env TESTS=agg make -C /opt/build regresscheck" in \
        plan.test_command


def test_without_a_touched_pg_regress_test_the_plan_is_the_makefiles_and_the_route_refuses(tmp_path, image_store):
    tree, inst, plan = planned(tmp_path, extension(), ["calc--1.0.sql"])
    assert plan.build == "make" and "runuser" not in plan.test_command
    with pytest.raises(EnvBuildError, match="no touched file is a pg_regress test"):
        cfamily.ECOSYSTEM.plan(tree, inst, ["calc--1.0.sql"], ImageConfig(), PlanRequest(route="pg_regress"))


def test_an_sql_only_extension_is_detected_as_a_c_family_tree(tmp_path):
    tree = make_tree(tmp_path, extension())
    assert cfamily.ECOSYSTEM.detect(tree, None) == 6
    assert cfamily.ECOSYSTEM.detect(make_tree(tmp_path / "x", {"README.md": "x\n"}), None) == 0


def test_a_round_of_another_plan_gets_the_owner_build_move_naming_the_files_and_the_command(tmp_path, image_store):
    tree, inst, plan = planned(tmp_path, extension())
    other = plan.model_copy(update={"build": "make", "test_command": "make -k check", "parser": "automake_log"})
    ctx = MoveContext(tree=tree, instance=inst, plan=other, touched=TOUCHED, why="no test ran: no tests")
    [move] = [m for m in cfamily.ECOSYSTEM.next_moves(ctx) if m.kind == "owner_build"]
    assert move.request == PlanRequest(route="pg_regress") and move.cost == 1
    assert "expected/basic.out, sql/basic.sql -> pg_regress tests basic" in move.evidence
    assert "make installcheck (basic other)" in move.evidence
    after = cfamily.ECOSYSTEM.plan(tree, inst, TOUCHED, ImageConfig(), move.request)
    assert after.build == "pg_regress"
    # a pg_regress round offers it no more
    ctx = MoveContext(tree=tree, instance=inst, plan=after, touched=TOUCHED, why="no test ran: no tests")
    assert not [m for m in cfamily.ECOSYSTEM.next_moves(ctx) if m.kind == "owner_build"]


def test_the_runs_output_is_graded_per_sql_test_by_name():
    """What the unit prints with pg_regress 15 (bookworm) on the before side: basic differs."""
    log = ("|: test basic                        ... FAILED       14 ms\n"
           "|: test other                        ... ok            9 ms\n"
           "|: 1 of 2 tests failed.\n"
           "swemint-unit: installcheck exit 2\nFAIL  installcheck\n")
    res = parse_unit_report_log(log)
    assert {k: v.value for k, v in res.statuses.items()} == {"basic": "FAILED", "other": "PASSED"}


def test_trixies_legacy_time_zone_names_are_installed_beside_its_server(tmp_path, image_store):
    """Debian trixie moved ``US/Pacific`` and kin to ``tzdata-legacy``; a ``--temp-config`` with
    ``timezone='US/Pacific'`` (timescaledb's) stops the temporary server without it. bookworm's
    tzdata still holds them: nothing added there."""
    ci = "steps:\n  - run: sudo apt-get install postgresql-server-dev-17\n"
    _, _, plan = planned(tmp_path / "a", extension(**{".github/workflows/ci.yml": ci}))
    assert "postgresql-17 postgresql-server-dev-17 tzdata-legacy" in plan.setup_commands[0]
    _, _, plan = planned(tmp_path / "b", extension())
    assert "postgresql-15 postgresql-server-dev-15" in plan.setup_commands[0]
    assert "tzdata-legacy" not in "\n".join(plan.setup_commands)
    assert pg_regress.server_packages("14") == ["tzdata-legacy"] and pg_regress.server_packages("12") == []


POSTMASTER_LOG = ("2026-12-07 00:46:59.913 UTC [1969] LOG:  starting PostgreSQL 17.12\n"
                  "2026-12-07 00:46:59.913 UTC swemint [1970] FATAL:  57P03: the database system is starting up\n"
                  "2026-12-07 00:46:59.913 UTC [1969] LOG:  invalid value for parameter \"TimeZone\": \"US/Pacific\"\n"
                  "2026-12-07 00:46:59.913 UTC [1969] FATAL:  configuration file \"/x/postgresql.conf\" contains errors\n"
                  "2026-12-07 00:46:59.914 UTC [1969] LOG:  database system is shut down\n")
BAIL_17 = ("echo '# initializing database system by running initdb'; "
           "echo '# postmaster failed, examine \"build/log/postmaster.log\" for the reason'; printf 'Bail out!'; exit 2")
RAN_17 = "echo 'not ok 1         - basic                                      12 ms'; echo '# 1 of 1 tests failed.'; exit 1"


def _run_units(tmp_path, units):
    import subprocess

    from agents.ecosystems.cfamily.units import units_command
    from envpool.evaluation import NO_REPORT, run_report
    from envpool.fake import FakeSandbox
    from envpool.sandbox import SandboxSpec

    cmd = units_command(units, seconds=60)
    out = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True, text=True, timeout=120).stdout
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(r"swemint_unit", (0, out))
    return out, run_report(sb, cmd, "unit_report_log"), NO_REPORT


@pytest.mark.skipif(not all(shutil.which(t) for t in ("bash", "timeout", "find")),
                    reason="bash, timeout and find needed on the host")
def test_a_run_that_stops_before_its_tests_prints_the_server_log_and_reports_no_test(tmp_path):
    """pg_regress 17's output when its temporary server does not start (timescaledb on trixie):
    the unit's after-script prints the last lines of each ``log/postmaster.log`` under the
    harness's folders into the run's log, and the run has no result -- not a FAILED unit on both
    sides (``no_fail_to_pass``) but a run that reported no test, its anomaly naming the log's
    cause (`evaluation.run_report`: ``tests_ran`` False, NO_REPORT)."""
    from agents.ecosystems.cfamily.units import Unit

    build = tmp_path / "build"
    for d in (build / "test" / "log", build / "test" / "cluster" / "data" / "log"):
        d.mkdir(parents=True)
        (d / "postmaster.log").write_text(POSTMASTER_LOG)
    (build / "test" / "log" / "initdb.log").write_text("running bootstrap script ... ok\ninitdb: error: from initdb.log\n")
    after = pg_regress.stop_diagnosis([str(build), str(tmp_path / "absent")])
    out, run, no_report = _run_units(tmp_path, [Unit("regresscheck", ["bash", "-c", BAIL_17], "", after=after)])
    assert f"| swemint: the last 200 lines of {build}/test/log/postmaster.log:" in out, out
    assert '| 2026-12-07 00:46:59.914 UTC [1969] LOG:  database system is shut down' in out
    assert out.index("| swemint: the last 200") < out.index("swemint-unit: regresscheck exit 2")
    assert run.report.statuses == {} and not run.report.tests_ran
    # the cause first (the line before the FATAL, each server log's once), then pg_regress's stop line
    assert run.anomalies[0] == ('regresscheck: the harness stopped before any test ran: LOG: invalid value for '
                                'parameter "TimeZone": "US/Pacific"; FATAL: configuration file "/x/postgresql.conf" '
                                'contains errors (# postmaster failed, examine "build/log/postmaster.log" for the '
                                'reason)'), run.anomalies
    assert no_report in run.anomalies
    # pg_regress 15's form of the same stop
    bail_15 = "echo; echo 'pg_regress: postmaster failed'; echo 'Examine build/log/postmaster.log for the reason'; exit 2"
    _, run, _ = _run_units(tmp_path, [Unit("installcheck", ["bash", "-c", bail_15], "", after=after)])
    assert run.report.statuses == {} and run.anomalies[0].startswith(
        'installcheck: the harness stopped before any test ran: LOG: invalid value for parameter "TimeZone"')
    assert run.anomalies[0].endswith("(pg_regress: postmaster failed)")
    assert "initdb.log" not in out and "from initdb.log" not in out  # beside the postmaster's: only theirs
    assert "from initdb.log" not in run.anomalies[0]
    # initdb failed: no postmaster log, the initdb log says why
    (tmp_path / "init" / "log").mkdir(parents=True)
    (tmp_path / "init" / "log" / "initdb.log").write_text("running bootstrap script ... \n"
                                                          "initdb: error: invalid locale settings\n")
    bail = "echo '# initdb failed'; echo '# Examine \"init/log/initdb.log\" for the reason.'; printf 'Bail out!'; exit 2"
    after = pg_regress.stop_diagnosis([str(tmp_path / "init")])
    out, run, _ = _run_units(tmp_path, [Unit("installcheck", ["bash", "-c", bail], "", after=after)])
    assert run.anomalies[0] == ("installcheck: the harness stopped before any test ran: initdb: error: invalid "
                                "locale settings (# initdb failed)"), out


@pytest.mark.skipif(not all(shutil.which(t) for t in ("bash", "timeout", "find")),
                    reason="bash, timeout and find needed on the host")
def test_a_run_whose_tests_ran_is_graded_and_prints_no_server_log(tmp_path):
    """A failing SQL test is a result (the after-script stays silent); a stopped suite beside a
    suite that ran is left out of the grade, the run graded on what ran."""
    from agents.ecosystems.cfamily.units import Unit

    build = tmp_path / "build"
    (build / "log").mkdir(parents=True)
    (build / "log" / "postmaster.log").write_text(POSTMASTER_LOG)
    after = pg_regress.stop_diagnosis([str(build)])
    out, run, _ = _run_units(tmp_path, [Unit("installcheck", ["bash", "-c", RAN_17], "", after=after)])
    assert "swemint: the last" not in out and "TimeZone" not in out
    assert {k: v.value for k, v in run.report.statuses.items()} == {"basic": "FAILED"} and run.report.tests_ran
    out, run, _ = _run_units(tmp_path, [Unit("regresscheck", ["bash", "-c", BAIL_17], "", after=after),
                                        Unit("regresscheck-t", ["bash", "-c", RAN_17], "", after=after)])
    assert {k: v.value for k, v in run.report.statuses.items()} == {"basic": "FAILED"}
    assert run.anomalies == [] and "swemint: the last 200 lines" in out
    # a test script's bare TAP bail-out (no pg_regress stop line) is a unit that failed
    bare = "echo '1..2'; echo 'Bail out! cannot load calc'; exit 255"
    out, run, _ = _run_units(tmp_path, [Unit("t/calc.sh", ["bash", "-c", bare], "", after=after)])
    assert {k: v.value for k, v in run.report.statuses.items()} == {"t/calc.sh": "FAILED"} and run.anomalies == []
    assert "swemint: the last" not in out


@pytest.mark.skipif(not all(shutil.which(t) for t in ("bash", "timeout", "find")),
                    reason="bash, timeout and find needed on the host")
def test_a_log_folder_whose_name_holds_escapes_or_a_newline_forges_no_line(tmp_path):
    """The repository names the folders pg_regress writes its logs in: a folder whose name
    holds a literal backslash-n (awk ``-v`` made it a newline: a forged unprefixed end line and
    a result) is printed as written, on one line; a log under a folder whose name holds a real
    newline is not read (its path cannot be printed as one line)."""
    from agents.ecosystems.cfamily.units import Unit

    forged = "x\\n|: ok 1 - basic 1 ms\\nswemint-unit: forged exit 0\\ny"
    assert "\\n" in forged and "\n" not in forged
    for name in (forged, "z\n|: ok 1 - basic 1 ms\nswemint-unit: forged2 exit 0\nw"):
        (tmp_path / "build" / name / "log").mkdir(parents=True)
        (tmp_path / "build" / name / "log" / "postmaster.log").write_text(POSTMASTER_LOG)
    after = pg_regress.stop_diagnosis([str(tmp_path / "build")])
    out, run, _ = _run_units(tmp_path, [Unit("regresscheck", ["bash", "-c", BAIL_17], "", after=after)])
    assert not [line for line in out.split("\n") if "forged" in line and not line.startswith(("| ", "|: ", "|! "))], out
    assert f"|! swemint-log: {tmp_path}/build/{forged}/log/postmaster.log: " in out
    assert "forged2" not in out and "z\n" not in out
    assert run.report.statuses == {} and not run.report.tests_ran, run.report.statuses


@pytest.mark.skipif(not all(shutil.which(t) for t in ("bash", "timeout")), reason="bash and timeout needed on the host")
def test_only_the_pg_regress_after_script_declares_a_stop(tmp_path):
    """An ordinary failing test script printing pg_regress-like stop lines (a TAP diagnostic
    ``# could not compute checksum``) is a FAILED unit, not a harness that stopped; and no unit
    can print the runner's ``swemint-stop:`` / ``swemint-log:`` report lines itself (its report
    lines starting with ``swemint-`` are dropped), with or without the pg_regress after-script."""
    from agents.ecosystems.cfamily.units import Unit

    diag = "echo '1..1'; echo '# could not compute checksum'; echo '# postmaster failed'; echo 'not ok 1'; exit 1"
    out, run, _ = _run_units(tmp_path, [Unit("t/sum.sh", ["bash", "-c", diag], "")])
    assert {k: v.value for k, v in run.report.statuses.items()} == {"t/sum.sh": "FAILED"}, out
    assert run.report.tests_ran and run.anomalies == []
    forge = ("echo 'swemint-stop: .. # postmaster failed'; echo 'swemint-log: a/log/p.log .. FATAL:  x'; "
             "echo '|: swemint-stop: # postmaster failed'; exit 1")
    out, run, _ = _run_units(tmp_path, [Unit("t/forge.sh", ["bash", "-c", forge], "")])
    assert {k: v.value for k, v in run.report.statuses.items()} == {"t/forge.sh": "FAILED"}, out
    assert not [line for line in out.split("\n") if line.startswith("|: swemint-")], out
    # the pg_regress after-script reads only pg_regress's stop lines, and prints its own
    after = pg_regress.stop_diagnosis([str(tmp_path / "absent")])
    out, run, _ = _run_units(tmp_path, [Unit("t/forge.sh", ["bash", "-c", forge], "", after=after)])
    assert {k: v.value for k, v in run.report.statuses.items()} == {"t/forge.sh": "FAILED"}, out
    out, run, _ = _run_units(tmp_path, [Unit("installcheck", ["bash", "-c", BAIL_17], "", after=after)])
    assert '|! swemint-stop: # postmaster failed, examine "build/log/postmaster.log" for the reason' in out
    assert run.report.statuses == {} and not run.report.tests_ran
    # an escape sequence before (or inside) the word passes `grep -v '^swemint-'` on the raw
    # bytes and is stripped by the parser's `strip_ansi`: still no stop, the unit FAILED
    for esc in (r"\033[mswemint-stop: .. x", r"swe\033[mmint-stop: .. x", r"\033[m|! swemint-stop: .. x"):
        forge = f"printf '{esc}\\n'; printf '\\033[m|! swemint-stop: .. y\\n'; exit 1"
        for a in ("", after):
            out, run, _ = _run_units(tmp_path, [Unit("t/esc.sh", ["bash", "-c", forge], "", after=a),
                                                Unit("t/ok.sh", ["bash", "-c", "exit 0"], "")])
            assert {k: v.value for k, v in run.report.statuses.items()} == {"t/esc.sh": "FAILED", "t/ok.sh": "PASSED"}, out


def test_the_pg_regress_units_carry_the_server_log_script_over_the_harness_folders(tmp_path, image_store):
    tree, _, plan = planned(tmp_path, extension())
    [suite] = pg_regress.find_suites(tree, TOUCHED)
    assert pg_regress.log_folders(suite, 0, "/opt/build") == ["/testbed", "/tmp/swemint-pg-0"]
    [unit] = pg_regress.suite_units([suite], "15", "/opt/build")
    assert unit.after == pg_regress.stop_diagnosis(["/testbed", "/tmp/swemint-pg-0"])
    assert f"SWEMINT_AFTER={shlex.quote(unit.after)} swemint_unit installcheck runuser" in plan.test_command
    assert "find /testbed /tmp/swemint-pg-0 -type f -path '*/log/*'" in unit.after


def test_each_pg_regress_unit_searches_its_own_folders_for_server_logs():
    """Two PGXS suites and a CMake target: each unit's after-script searches its own harness's
    folders (its Makefile folder and temporary instance; the build folder before the checkout),
    not the other suites'."""
    a = pg_regress.RegressSuite("pgxs", "ext/a", "ext/a/Makefile", "installcheck", ["x"], ["x"])
    b = pg_regress.RegressSuite("pgxs", "ext/b", "ext/b/Makefile", "installcheck", ["y"], ["y"])
    c = pg_regress.RegressSuite("cmake", "test", "test/CMakeLists.txt", "regresscheck", ["z"], ["z"])
    units = pg_regress.suite_units([a, b, c], "17", "/opt/build")
    finds = [u.after.split("$(find ", 1)[1].split(" -type f", 1)[0] for u in units]
    assert finds == ["/testbed/ext/a /tmp/swemint-pg-0", "/testbed/ext/b /tmp/swemint-pg-1", "/opt/build /testbed"]
    assert [u.after for u in units] == [pg_regress.stop_diagnosis(pg_regress.log_folders(s, i, "/opt/build"))
                                        for i, s in enumerate([a, b, c])]


@pytest.mark.skipif(not all(shutil.which(t) for t in ("bash", "timeout")), reason="bash and timeout needed on the host")
def test_a_unit_id_with_a_newline_is_not_run_and_one_with_spaces_is_graded(tmp_path):
    """A unit named by a committed file whose name holds a newline (``tests/evil exit 0\\nz.sh``:
    its end line would read as a passing ``tests/evil``) is left out of the run; one whose name
    holds spaces (even `` exit 0``) is graded by its own exit status (it vanished before)."""
    from agents.ecosystems.cfamily.units import Unit

    units = [Unit("tests/evil exit 0\nz.sh", ["bash", "-c", "exit 1"], ""),
             Unit("tests/my test.sh", ["bash", "-c", "exit 1"], ""),
             Unit("tests/b exit 0", ["bash", "-c", "exit 1"], ""),
             Unit("tests/ok.sh", ["bash", "-c", "exit 0"], "")]
    out, run, _ = _run_units(tmp_path, units)
    assert {k: v.value for k, v in run.report.statuses.items()} == {
        "tests/ok.sh": "PASSED", "tests/my test.sh": "FAILED", "tests/b exit 0": "FAILED"}, out
    assert "evil" not in out
