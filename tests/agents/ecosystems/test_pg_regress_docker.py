"""S12's second half end to end in Docker: a PGXS extension the test writes (SQL only:
``calc.control``, ``calc--1.0.sql``, a Makefile with ``REGRESS = basic other`` and
``include $(PGXS)``), whose fix changes the extension's SQL function and whose test_patch changes
``sql/basic.sql`` and ``expected/basic.out``. The rule-first plan installs Debian's
``postgresql-15`` and ``postgresql-server-dev-15`` (bookworm, the commit's era), builds and
installs the extension into that server's folders on each side, and runs ``make installcheck``
as an unprivileged user with pg_regress's own temporary server; the row verifies in round 1 with
the pg_regress test names as ids: ``basic`` FAIL_TO_PASS, ``other`` PASS_TO_PASS."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily
from tests.agents.ecosystems.test_pg_regress import (BASIC_NEW, BASIC_NEW_OUT, CONTROL, MAKEFILE, SQL_FIX, WHEN,
                                                   extension)

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_pgxs_extensions_sql_test_verifies_with_its_pg_regress_name(mint_with):
    res = mint_with(cfamily.ECOSYSTEM, extension(), "pgxs", language="c", created_at=WHEN,
                    tests={"sql/basic.sql": BASIC_NEW, "expected/basic.out": BASIC_NEW_OUT},
                    fix={"calc--1.0.sql": SQL_FIX})
    assert res.outcome == "verified", (res.reason, [r.model_dump() for r in res.rounds])
    assert res.FAIL_TO_PASS == ["basic"]
    assert res.PASS_TO_PASS == ["other"]
    assert res.parser == "unit_report_log" and res.round == 1
    assert "runuser -u swemint -- make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config installcheck" in \
        res.test_command
    assert "postgresql-15 postgresql-server-dev-15" in res.setup_script


C_SOURCE = """#include "postgres.h"
#include "fmgr.h"
PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(calc_add);
Datum calc_add(PG_FUNCTION_ARGS) { PG_RETURN_INT32(PG_GETARG_INT32(0) - PG_GETARG_INT32(1)); }
"""
C_SQL = "CREATE FUNCTION calc_add(integer, integer) RETURNS integer AS 'MODULE_PATHNAME', 'calc_add' LANGUAGE C STRICT;\n"


def test_a_c_function_of_a_pgxs_extension_is_compiled_against_the_servers_headers(mint_with):
    """The same suite over a C function (``MODULES = calc``): the fix in ``calc.c`` is compiled
    and installed on the after side before pg_regress runs."""
    files = extension(**{"Makefile": "MODULES = calc\n" + MAKEFILE, "calc.c": C_SOURCE, "calc--1.0.sql": C_SQL,
                         "calc.control": CONTROL + "module_pathname = '$libdir/calc'\n"})
    res = mint_with(cfamily.ECOSYSTEM, files, "pgxs-c", language="c", created_at=WHEN,
                    tests={"sql/basic.sql": BASIC_NEW, "expected/basic.out": BASIC_NEW_OUT},
                    fix={"calc.c": C_SOURCE.replace("- PG_GETARG", "+ PG_GETARG")})
    assert res.outcome == "verified", (res.reason, [r.model_dump() for r in res.rounds])
    assert res.FAIL_TO_PASS == ["basic"] and res.PASS_TO_PASS == ["other"]


TRIXIE_CI = "steps:\n  - run: sudo apt-get install postgresql-server-dev-17\n"


def test_a_temp_config_naming_a_legacy_time_zone_starts_its_server_on_trixie(mint_with):
    """The suite's own ``--temp-config`` sets ``timezone='US/Pacific'`` (timescaledb's does):
    on Debian trixie (the CI names ``postgresql-server-dev-17``) that name is in
    ``tzdata-legacy``, without which the temporary server refuses to start and no test runs.
    (The session's zone is pg_regress's ``PGTZ``, so no test shows the server's.)"""
    files = extension(**{"Makefile": MAKEFILE.replace("REGRESS = basic other",
                                                      "REGRESS = basic other\nREGRESS_OPTS = --temp-config=regress.conf"),
                         "regress.conf": "timezone='US/Pacific'\n", ".github/workflows/ci.yml": TRIXIE_CI})
    res = mint_with(cfamily.ECOSYSTEM, files, "pgxs-tz", language="c", created_at=WHEN,
                    tests={"sql/basic.sql": BASIC_NEW, "expected/basic.out": BASIC_NEW_OUT},
                    fix={"calc--1.0.sql": SQL_FIX})
    assert res.outcome == "verified", (res.reason, [r.model_dump() for r in res.rounds])
    assert res.FAIL_TO_PASS == ["basic"] and res.PASS_TO_PASS == ["other"] and res.round == 1
    assert "postgresql-17 postgresql-server-dev-17 tzdata-legacy" in res.setup_script


def test_a_suite_whose_server_does_not_start_ran_no_test_and_says_why(mint_with):
    """The suite's ``--temp-config`` preloads a library that does not exist: pg_regress's
    temporary server stops at once on both sides (``Bail out!``). The round is ``tests_not_run``
    (not ``no_fail_to_pass`` from one FAILED unit on both sides), its reason the server log's
    cause, which the run's log shows."""
    conf = "shared_preload_libraries='swemint_no_such_library'\n"
    files = extension(**{"Makefile": MAKEFILE.replace("REGRESS = basic other",
                                                      "REGRESS = basic other\nREGRESS_OPTS = --temp-config=regress.conf"),
                         "regress.conf": conf, ".github/workflows/ci.yml": TRIXIE_CI})
    res = mint_with(cfamily.ECOSYSTEM, files, "pgxs-down", language="c", created_at=WHEN,
                    tests={"sql/basic.sql": BASIC_NEW, "expected/basic.out": BASIC_NEW_OUT},
                    fix={"calc--1.0.sql": SQL_FIX}, mint={"loop": {"max_rounds": 1}})
    first = res.rounds[0]
    assert first.outcome == "tests_not_run", [r.model_dump() for r in res.rounds]
    assert first.reason.startswith("the before runs reported no test: installcheck: the harness stopped before any "
                                   "test ran: "), first.reason
    assert 'FATAL: could not access file "swemint_no_such_library"' in first.reason
    assert res.outcome == "tests_not_run" and not res.FAIL_TO_PASS
    log = Path(res.log_path).read_text(errors="replace")
    assert "| swemint: the last 200 lines of /testbed/log/postmaster.log:" in log
    assert 'FATAL:  could not access file "swemint_no_such_library"' in log
