"""The servers a CI provides for its tests, read as data (`agents.ecosystems.ci_services`), and
how a plan provides them (`agents.ecosystems.service_provision`), on trees the tests write.
Issue 25, class S12."""

from __future__ import annotations

import subprocess

from agents.ecosystems.ci_services import client_env_of, kind_of_image, service_needs
from agents.ecosystems.plans import Plan
from agents.ecosystems.service_provision import (SCRIPT, provision_commands, service_env, services_script,
                                                 stored_command, with_services)
from tests.agents.ecosystems.conftest import make_tree

WORKFLOW = """
name: tests
on: [push, pull_request]
env:
  CI: "true"
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        pg: [16, 15]
    services:
      db:
        image: postgres:${{ matrix.pg }}-alpine
        env:
          POSTGRES_USER: app
          POSTGRES_PASSWORD: s3cret
          POSTGRES_DB: app_test
        ports:
          - 5433:5432
        options: --health-cmd pg_isready
      cache:
        image: redis:7
        ports: ["6379:6379"]
    env:
      DATABASE_URL: postgres://app:s3cret@localhost:${{ job.services.db.ports[5432] }}/app_test
      PGHOST: localhost
      API_TOKEN: ${{ secrets.TOKEN }}
      RUSTFLAGS: -Dwarnings
    steps:
      - uses: actions/checkout@v4
      - run: pytest
        env:
          REDIS_URL: redis://localhost:6379/0
  mac:
    runs-on: macos-latest
    services:
      other:
        image: mysql:8
"""


def test_workflow_services_become_typed_needs(tmp_path):
    tree = make_tree(tmp_path, {".github/workflows/ci.yml": WORKFLOW, "README": "x"})
    needs = service_needs(tree)
    assert [n.kind for n in needs] == ["postgres", "redis"]  # the macOS job's mysql is left out
    pg, redis = needs
    assert (pg.name, pg.image, pg.version, pg.port) == ("db", "postgres:16-alpine", "16", 5433)
    assert pg.env == {"POSTGRES_USER": "app", "POSTGRES_PASSWORD": "s3cret", "POSTGRES_DB": "app_test"}
    # the job's env that says where the server is, the service port filled in, secrets and others left out
    assert pg.client_env == {"DATABASE_URL": "postgres://app:s3cret@localhost:5433/app_test", "PGHOST": "localhost",
                             "REDIS_URL": "redis://localhost:6379/0"}
    assert pg.source == ".github/workflows/ci.yml: jobs.test.services.db (postgres:16-alpine)"
    assert (redis.name, redis.version, redis.port) == ("cache", "7", 6379)


def test_steps_actions_compose_travis_gitlab(tmp_path):
    files = {
        ".github/workflows/a.yml": "jobs:\n  t:\n    runs-on: ubuntu-22.04\n    steps:\n"
                                   "      - run: sudo service postgresql start\n        env: {PGUSER: runner}\n"
                                   "      - uses: shogo82148/actions-setup-mysql@v1\n        with: {mysql-version: '8.0'}\n",
        ".github/workflows/b.yml": "jobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
                                   "      - run: docker compose -f ci/compose.yml up -d\n",
        "ci/compose.yml": "services:\n  kv:\n    image: bitnami/redis:7.2\n    environment:\n"
                          "      - REDIS_PASSWORD=pw\n    ports: ['16379:6379']\n  app:\n    build: .\n",
    }
    needs = {n.kind: n for n in service_needs(make_tree(tmp_path / "a", files))}
    assert needs["postgres"].name == "" and needs["postgres"].port == 5432
    assert needs["postgres"].client_env == {"PGUSER": "runner"}
    assert "service postgresql start" in needs["postgres"].source
    assert needs["mysql"].version == "8.0" and "shogo82148/actions-setup-mysql" in needs["mysql"].source
    assert (needs["redis"].name, needs["redis"].port, needs["redis"].env) == ("kv", 16379, {"REDIS_PASSWORD": "pw"})

    travis = {".travis.yml": "language: python\nservices:\n  - postgresql\n  - redis-server\n"
                             "addons:\n  postgresql: '12'\nenv:\n  global:\n    - PGUSER=postgres\n    - FOO=1\n"
                             "script: pytest\n"}
    t = {n.kind: n for n in service_needs(make_tree(tmp_path / "t", travis))}
    assert set(t) == {"postgres", "redis"} and t["postgres"].version == "12"
    assert t["postgres"].client_env == {"PGUSER": "postgres"}

    gitlab = {".gitlab-ci.yml": "variables:\n  MYSQL_ROOT_PASSWORD: root\n  MYSQL_DATABASE: shop\n"
                                "test:\n  services:\n    - name: mariadb:10.11\n      alias: db\n  script: [make test]\n"}
    (g,) = service_needs(make_tree(tmp_path / "g", gitlab))
    assert (g.kind, g.name, g.version, g.env["MYSQL_DATABASE"]) == ("mysql", "db", "10.11", "shop")


def test_no_services_and_unknown_images(tmp_path):
    files = {".github/workflows/ci.yml": "jobs:\n  t:\n    runs-on: ubuntu-latest\n    services:\n"
                                         "      ts:\n        image: acme/product:latest\n        ports: [8080]\n"
                                         "    steps:\n      - run: make test\n"}
    assert service_needs(make_tree(tmp_path, files)) == []
    assert kind_of_image("acme/db:1", {"POSTGRES_PASSWORD": "x"}) == "postgres"  # said by its environment
    assert kind_of_image("ghcr.io/x/valkey:8") == "redis" and kind_of_image("alpine:3") is None
    assert client_env_of({"HOME": "/root", "MY_DSN": "x", "URL": "mysql://u@h/d", "T": "${{ secrets.T }}",
                          "PG_SRC_DIR": "pgbuild", "PGPORT": "5433", "POSTGRES_VERSION": "16", "PGX": "1"}) == \
        {"MY_DSN": "x", "URL": "mysql://u@h/d", "PGPORT": "5433"}


def test_provision_script_quotes_and_runs_as_bash(tmp_path):
    files = {".github/workflows/ci.yml": WORKFLOW.replace("POSTGRES_PASSWORD: s3cret",
                                                                   "POSTGRES_PASSWORD: it's $HOME; rm -rf /")}
    needs = service_needs(make_tree(tmp_path, files))
    script = services_script(needs)
    assert "PG_PORT=5433" in script and "REDIS_PORT=6379" in script and "alias_host cache db" in script
    path = tmp_path / "s.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    # the repository's password reaches SQL as a doubled literal inside one shell word
    arrays = subprocess.run(["bash", "-c", f"source <(sed -n '/^PG_SQL=/p' {path}); printf '%s\\n' \"${{PG_SQL[@]}}\""],
                            capture_output=True, text=True).stdout.splitlines()
    assert arrays == ['CREATE ROLE "app" SUPERUSER LOGIN PASSWORD \'it\'\'s $HOME; rm -rf /\'',
                      'CREATE DATABASE "app_test" OWNER "app"']
    cmds = provision_commands(needs)
    assert "postgresql" in cmds[0] and "redis-server" in cmds[0] and "policy-rc.d" in cmds[0]
    assert cmds[1].startswith(f"cat > {SCRIPT} <<'") and cmds[2] == f"{SCRIPT} init"
    assert stored_command("pytest x").endswith("&& pytest x") and stored_command("t").startswith(f"{{ {SCRIPT} start")


def test_with_services_adds_setup_and_env_once():
    from agents.ecosystems.service_need import ServiceNeed

    need = ServiceNeed(kind="redis", port=6380, client_env={"REDIS_URL": "redis://localhost:6380", "PGHOST": "db"})
    plan = Plan(ecosystem="cfamily", toolchain="gcc", image="x", parser="automake_log", setup_commands=["make"],
                env={"PGHOST": "localhost"})
    out = with_services(plan, [need])
    assert out.services == [need] and out.setup_commands[-1] == "make" and len(out.setup_commands) == 4
    assert out.env == {"REDIS_URL": "redis://localhost:6380", "PGHOST": "localhost"}  # the plan's value kept
    assert with_services(out, [need]) is out and with_services(plan, []) is plan
    assert service_env([need]) == need.client_env
