"""Tests that need a server the CI provides (issue 25, class S12), minted end to end in Docker on
small Python repositories the tests write: the tests talk to PostgreSQL through ``psql``, to
MySQL through ``mysql`` and to Redis through ``redis-cli`` on loopback, and the workflow declares the server as a job's
``services:``. Without the servers (``mint.ci_services: false``) nothing listens and the tests
fail on both sides; with them the server is installed at setup, started before every test run
(and by the row's test_command), and the row verifies with the right FAIL_TO_PASS and
PASS_TO_PASS. Test runs keep the network guard: no network, the server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import python
from agents.ecosystems.service_provision import SCRIPT
from agents.models import StepRecord

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SETUP = 'from setuptools import setup\n\nsetup(name="calc", version="1.0", packages=["calc"])\n'

PG_DB = '''import os
import subprocess


def query(sql):
    """One value from the database the CI's environment names (PGHOST, PGUSER, PGDATABASE)."""
    out = subprocess.run(["psql", "-XAt", "-c", sql], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def add(a, b):
    return int(query("SELECT %d - %d" % (a, b)))
'''
PG_WORKFLOW = """name: tests
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
        env:
          POSTGRES_USER: calc
          POSTGRES_PASSWORD: calc-pw
          POSTGRES_DB: calc_test
        ports:
          - 5432:5432
        options: --health-cmd pg_isready --health-interval 10s
    env:
      PGHOST: localhost
      PGPORT: ${{ job.services.postgres.ports[5432] }}
      PGUSER: calc
      PGPASSWORD: calc-pw
      PGDATABASE: calc_test
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e . pytest
      - run: pytest tests
"""

REDIS_KV = '''import os
import subprocess


def cli(*args):
    """redis-cli against the server the CI's environment names (REDIS_HOST, REDIS_PORT)."""
    cmd = ["redis-cli", "-h", os.environ["REDIS_HOST"], "-p", os.environ["REDIS_PORT"], *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def add(a, b):
    cli("SET", "calc:n", str(a))
    return int(cli("DECRBY", "calc:n", str(b)))
'''
REDIS_WORKFLOW = """name: tests
on: pull_request
jobs:
  test:
    runs-on: ubuntu-latest
    container: python:3.11
    services:
      redis:
        image: redis:7-alpine
    env:
      REDIS_HOST: redis
      REDIS_PORT: "6379"
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e . pytest && pytest
"""

MYSQL_DB = '''import os
import subprocess


def add(a, b):
    """The sum, as the database the CI's environment names computes it (DB_HOST, DB_USER...)."""
    cmd = ["mysql", "-h", os.environ["DB_HOST"], "-P", os.environ["DB_PORT"], "-u", os.environ["DB_USER"],
           "-p" + os.environ["DB_PASSWORD"], os.environ["DB_NAME"], "-N", "-B", "-e", "SELECT %d - %d" % (a, b)]
    return int(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip())
'''
MYSQL_WORKFLOW = """name: ci
on: [pull_request]
jobs:
  unit:
    runs-on: ubuntu-22.04
    services:
      mysql:
        image: mysql:8.0
        env:
          MYSQL_ROOT_PASSWORD: root
          MYSQL_DATABASE: shop
          MYSQL_USER: shop
          MYSQL_PASSWORD: shop-pw
        ports: ["3306:3306"]
    steps:
      - uses: actions/checkout@v4
      - run: python -m pytest
        env:
          DB_HOST: 127.0.0.1
          DB_PORT: ${{ job.services.mysql.ports['3306'] }}
          DB_USER: shop
          DB_PASSWORD: shop-pw
          DB_NAME: shop
"""

TEST = "from calc.{mod} import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
ADDED = "\n\ndef test_add():\n    assert add(2, 3) == 5\n"

CASES = {
    "postgres": ({"calc/db.py": PG_DB, ".github/workflows/ci.yml": PG_WORKFLOW}, "db", ("SELECT %d - %d", "SELECT %d + %d")),
    "mysql": ({"calc/sql.py": MYSQL_DB, ".github/workflows/ci.yaml": MYSQL_WORKFLOW}, "sql", ("%d - %d", "%d + %d")),
    "redis": ({"calc/kv.py": REDIS_KV, ".github/workflows/tests.yml": REDIS_WORKFLOW}, "kv", ("DECRBY", "INCRBY")),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_a_service_the_ci_declares_is_provided_in_the_test_container(mint_with, kind):
    extra, mod, (bug, fix) = CASES[kind]
    code = next(p for p in extra if p.startswith("calc/"))
    files = {"setup.py": SETUP, "calc/__init__.py": "", "tests/test_calc.py": TEST.format(mod=mod), **extra}
    tests = {"tests/test_calc.py": files["tests/test_calc.py"] + ADDED}
    fixed = {code: files[code].replace(bug, fix)}
    fields = dict(language="python", created_at="2024-03-01 10:00:00", tests=tests, fix=fixed)

    # before: the same repository with no server provided -- nothing listens, no row
    off = mint_with(python.ECOSYSTEM, files, f"{kind}-off", mint={"ci_services": False}, **fields)
    assert off.outcome != "verified" and off.services == []
    assert off.FAIL_TO_PASS == []

    res = mint_with(python.ECOSYSTEM, files, kind, **fields)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/test_calc.py::test_add"]
    assert res.PASS_TO_PASS == ["tests/test_calc.py::test_zero"]  # it needs the server too
    assert len(res.services) == 1 and res.services[0].startswith(kind)
    # the provision is recorded: the setup script installs and initialises, the row's command starts
    package = {"postgres": "postgresql", "mysql": "mariadb-server", "redis": "redis-server"}[kind]
    assert f"{SCRIPT} init" in res.setup_script and package in res.setup_script
    assert f"{SCRIPT} start" in res.test_command
    steps = [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]
    assert any(s.agent == "setup" and s.rule == "services" for s in steps)
    starts = [s for s in steps if s.agent == "verification" and s.rule.endswith(":services")]
    assert starts and all(s.exit_code == 0 for s in starts)
    assert any(s.rule.startswith("before#") for s in starts) and any(s.rule.startswith("after#") for s in starts)
