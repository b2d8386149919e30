"""The servers a project's CI provides for its tests, provided inside the test container instead.

Issue 25, class S12 (`agents.ecosystems.ci_services` reads what the CI declares). Tests run with
no network (the network guard stays), so the server runs on loopback in the same container:

1. at setup, the kind's Debian packages are installed (``recipes/services.yaml``: postgresql,
   mariadb-server, redis-server and their clients) with the Debian packages' own start refused
   (a ``policy-rc.d`` that exits 101 while they install: their postinst would otherwise start a
   second server on the same port), and a start script is written to `SCRIPT`;
2. the script's ``init`` runs once at setup: the data directory, the users, passwords and
   databases the CI's service environment (``POSTGRES_USER`` / ``POSTGRES_PASSWORD`` /
   ``POSTGRES_DB``, ``MYSQL_ROOT_PASSWORD`` / ``MYSQL_DATABASE`` / ``MYSQL_USER``,
   ``REDIS_PASSWORD``) and the job's client environment (``PGUSER``, a
   ``postgres://user:pass@host/db`` URL) name; then the servers stop, so the committed image
   holds no running server's state;
3. every test run calls ``SCRIPT start`` first (`start_command`: the verification's runs, and
   the row's `test_command`, so a harness that runs the row starts them too); the service names
   the CI's jobs use as host names (``postgres``, ``redis``) resolve to 127.0.0.1.

PostgreSQL refuses to run as root: its server runs as the ``postgres`` user the package makes
(``runuser``), with ``trust`` authentication on loopback (any password the tests send is
accepted); MariaDB's as ``mysql``; Redis as root (it allows it). Every value from the
repository is quoted (`envpool.quoting`; SQL literals and identifiers doubled inside).
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from agents.ecosystems.ci_services import service_kinds
from agents.ecosystems.service_need import ServiceNeed
from envpool.quoting import heredoc, shell_word

__all__ = ["SCRIPT", "provision_commands", "service_env", "services_script", "start_command", "stored_command",
           "with_services"]

SCRIPT = "/usr/local/bin/swemint-services"
"""Where the start script lives in the environment image."""

_HEAD = r"""#!/bin/bash
# swemint: the servers the project's CI provides for its tests (agents.ecosystems.service_provision)
# usage: swemint-services init|start|stop
export PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LOG=/var/log/swemint-services
STATE=/var/lib/swemint-services
mkdir -p "$LOG" "$STATE"
as_user() { local u=$1; shift; if [ "$(id -u)" = 0 ]; then runuser -u "$u" -- "$@"; else "$@"; fi; }
wait_for() { local n=$1; shift; for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done; "$@"; }
alias_host() {
  for h in "$@"; do
    grep -qE "[[:space:]]$h([[:space:]]|\$)" /etc/hosts 2>/dev/null || echo "127.0.0.1 $h" >> /etc/hosts 2>/dev/null || true
  done
}
"""

_POSTGRES = r"""
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
pg_start() {
  local bin; bin=$(pg_bin)
  [ -n "$bin" ] || { echo "swemint-services: no PostgreSQL server installed" >&2; return 1; }
  mkdir -p /var/run/postgresql "$LOG/postgres" && chown postgres:postgres /var/run/postgresql "$LOG/postgres"
  if [ ! -s "$PG_DATA/PG_VERSION" ]; then
    mkdir -p "$PG_DATA" && chown postgres:postgres "$PG_DATA" && chmod 700 "$PG_DATA"
    as_user postgres "$bin/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 --no-locale >"$LOG/postgres-init.log" 2>&1 \
      || { cat "$LOG/postgres-init.log" >&2; return 1; }
  fi
  as_user postgres "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1 || \
  as_user postgres "$bin/pg_ctl" -D "$PG_DATA" -l "$LOG/postgres/server.log" -w -t 60 \
    -o "-c listen_addresses=localhost -p $PG_PORT -k /var/run/postgresql" start >/dev/null \
    || { tail -20 "$LOG/postgres/server.log" >&2; return 1; }
  if [ ! -e "$STATE/postgres.done" ]; then
    for sql in "${PG_SQL[@]}"; do
      as_user postgres "$bin/psql" -h /var/run/postgresql -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAtc "$sql" \
        || return 1
    done
    touch "$STATE/postgres.done"
  fi
}
pg_stop() { local bin; bin=$(pg_bin); [ -n "$bin" ] && as_user postgres "$bin/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1; true; }
"""

_MYSQL = r"""
my_bin() { command -v mariadbd || command -v mysqld || echo /usr/sbin/mysqld; }
my_start() {
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  if [ ! -d /var/lib/mysql/mysql ]; then
    { command -v mariadb-install-db >/dev/null && mariadb-install-db --user=mysql --datadir=/var/lib/mysql; } \
      >"$LOG/mysql-init.log" 2>&1 || mysql_install_db --user=mysql --datadir=/var/lib/mysql >>"$LOG/mysql-init.log" 2>&1
  fi
  mysqladmin --socket=/run/mysqld/mysqld.sock -uroot ping >/dev/null 2>&1 || (setsid "$(my_bin)" --user=mysql --datadir=/var/lib/mysql --socket=/run/mysqld/mysqld.sock \
     --bind-address=127.0.0.1 --port="$MY_PORT" >"$LOG/mysql.log" 2>&1 </dev/null &)
  wait_for 60 mysqladmin --socket=/run/mysqld/mysqld.sock -uroot ping >/dev/null || { tail -20 "$LOG/mysql.log" >&2; return 1; }
  if [ ! -e "$STATE/mysql.done" ]; then
    for sql in "${MY_SQL[@]}"; do
      mysql --socket=/run/mysqld/mysqld.sock -uroot -e "$sql" || return 1
    done
    touch "$STATE/mysql.done"
  fi
}
my_stop() { mysqladmin --socket=/run/mysqld/mysqld.sock -uroot shutdown >/dev/null 2>&1; true; }
"""

_REDIS = r"""
redis_start() {
  redis-cli -p "$REDIS_PORT" ${REDIS_PASS:+--no-auth-warning -a "$REDIS_PASS"} ping >/dev/null 2>&1 || \
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
    --logfile "$LOG/redis.log" --dir "$STATE" ${REDIS_PASS:+--requirepass "$REDIS_PASS"} </dev/null >/dev/null 2>&1
  wait_for 30 redis-cli -p "$REDIS_PORT" ${REDIS_PASS:+--no-auth-warning -a "$REDIS_PASS"} ping >/dev/null \
    || { tail -20 "$LOG/redis.log" >&2; return 1; }
}
redis_stop() { redis-cli -p "$REDIS_PORT" ${REDIS_PASS:+--no-auth-warning -a "$REDIS_PASS"} shutdown nosave >/dev/null 2>&1; true; }
"""

_DEBIAN_UNITS = {"postgres": "postgresql", "mysql": "mariadb", "redis": "redis-server"}
"""The init scripts of the Debian packages, stopped in case their postinst started them."""


def _lit(value: str) -> str:
    """An SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def _ident(value: str, quote: str = '"') -> str:
    """An SQL identifier (PostgreSQL ``"x"``, MySQL `` `x` ``)."""
    return quote + value.replace(quote, quote * 2) + quote


def _url_parts(need: ServiceNeed) -> list[tuple[str, str, str]]:
    """(user, password, database) of each server URL of `need.client_env` whose scheme is the kind's."""
    schemes = {"postgres": ("postgres", "postgresql"), "mysql": ("mysql", "mariadb"), "redis": ("redis", "rediss")}
    out = []
    for value in need.client_env.values():
        try:
            u = urlsplit(value)
        except ValueError:
            continue
        if u.scheme.split("+")[0].lower() in schemes[need.kind]:
            out.append((unquote(u.username or ""), unquote(u.password or ""), unquote(u.path.lstrip("/"))))
    return out


def _postgres_sql(need: ServiceNeed) -> list[str]:
    env, client = need.env, need.client_env
    user = env.get("POSTGRES_USER") or env.get("POSTGRESQL_USERNAME") or "postgres"
    password = env.get("POSTGRES_PASSWORD") or env.get("POSTGRESQL_PASSWORD") or ""
    dbs = [env.get("POSTGRES_DB") or env.get("POSTGRESQL_DATABASE") or user]
    users = [(user, password), (client.get("PGUSER", ""), client.get("PGPASSWORD", ""))]
    dbs.append(client.get("PGDATABASE", ""))
    for u, p, d in _url_parts(need):
        users.append((u, p))
        dbs.append(d)
    out, seen = [], set()
    for u, p in users:
        if not u or u in seen:
            continue
        seen.add(u)
        pw = f" PASSWORD {_lit(p)}" if p else ""
        if u == "postgres":
            out.append(f"ALTER ROLE postgres{pw}" if pw else "SELECT 1")
        else:
            out.append(f"CREATE ROLE {_ident(u)} SUPERUSER LOGIN{pw}")
    owner = user
    for d in dict.fromkeys(x for x in dbs if x and x != "postgres"):
        out.append(f"CREATE DATABASE {_ident(d)} OWNER {_ident(owner)}")
    return [s for s in out if s != "SELECT 1"]


def _mysql_sql(need: ServiceNeed) -> list[str]:
    env = need.env
    root_pw = env.get("MYSQL_ROOT_PASSWORD") or env.get("MARIADB_ROOT_PASSWORD") or ""
    users = [(env.get("MYSQL_USER") or env.get("MARIADB_USER") or "",
              env.get("MYSQL_PASSWORD") or env.get("MARIADB_PASSWORD") or "")]
    dbs = [env.get("MYSQL_DATABASE") or env.get("MARIADB_DATABASE") or ""]
    for u, p, d in _url_parts(need):
        if u == "root":
            root_pw = root_pw or p
        else:
            users.append((u, p))
        dbs.append(d)
    out = [f"ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD({_lit(root_pw)}) "
           "OR unix_socket",
           f"CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY {_lit(root_pw)}",
           "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION"]
    for d in dict.fromkeys(x for x in dbs if x):
        out.append(f"CREATE DATABASE IF NOT EXISTS {_ident(d, '`')}")
    for u, p in dict.fromkeys(x for x in users if x[0]):
        for host in ("localhost", "%"):
            out.append(f"CREATE USER IF NOT EXISTS {_lit(u)}@{_lit(host)} IDENTIFIED BY {_lit(p)}")
            out.append(f"GRANT ALL ON *.* TO {_lit(u)}@{_lit(host)}")
    out.append("FLUSH PRIVILEGES")
    return out


def _redis_password(need: ServiceNeed) -> str:
    pw = need.env.get("REDIS_PASSWORD", "")
    for _, p, _ in _url_parts(need):
        pw = pw or p
    return pw


def services_script(needs: list[ServiceNeed]) -> str:
    """The start script for `needs` (bash; module docstring): ``init`` (the servers' data,
    users and databases, then stopped), ``start`` (each server, waiting until it answers; exit
    1 naming the one that did not start), ``stop``. One server per kind."""
    lines = [_HEAD]
    for n in needs:
        lines.append(f"# {n.label()}".replace("\n", " "))
    starts, stops, debian = [], [], []
    aliases = sorted({n.name for n in needs if n.name and n.name != "localhost"})
    for n in needs:
        debian.append(_DEBIAN_UNITS[n.kind])
        if n.kind == "postgres":
            sql = " ".join(shell_word(s) for s in _postgres_sql(n))
            lines += [f"PG_PORT={n.port}", "PG_DATA=/var/lib/swemint-services/postgres", f"PG_SQL=({sql})", _POSTGRES]
            starts.append("pg_start || { echo 'swemint-services: postgres did not start' >&2; exit 1; }")
            stops.append("pg_stop")
        elif n.kind == "mysql":
            sql = " ".join(shell_word(s) for s in _mysql_sql(n))
            lines += [f"MY_PORT={n.port}", f"MY_SQL=({sql})", _MYSQL]
            starts.append("my_start || { echo 'swemint-services: mysql did not start' >&2; exit 1; }")
            stops.append("my_stop")
        else:
            lines += [f"REDIS_PORT={n.port}", f"REDIS_PASS={shell_word(_redis_password(n))}", _REDIS]
            starts.append("redis_start || { echo 'swemint-services: redis did not start' >&2; exit 1; }")
            stops.append("redis_stop")
    lines.append("do_start() {\n  alias_host " + " ".join(shell_word(a) for a in aliases) + "\n  "
                 + "\n  ".join(starts) + "\n}")
    lines.append("do_stop() {\n  " + "\n  ".join(stops) + "\n}")
    lines.append('case "${1:-start}" in\n'
                 "  init) for s in " + " ".join(debian) + "; do service \"$s\" stop >/dev/null 2>&1; done\n"
                 "        do_start && do_stop ;;\n"
                 "  start) do_start ;;\n"
                 "  stop) do_stop ;;\n"
                 '  *) echo "usage: $0 init|start|stop" >&2; exit 2 ;;\n'
                 "esac\n")
    return "\n".join(lines)


def provision_commands(needs: list[ServiceNeed]) -> list[str]:
    """The setup commands providing `needs` (module docstring): install the kinds' Debian
    packages with their own start refused, write `SCRIPT`, run its ``init``. [] for no need."""
    if not needs:
        return []
    packages: list[str] = []
    for n in needs:
        packages += [p for p in service_kinds()[n.kind]["packages"] if p not in packages]
    from agents.ecosystems.debian import apt_install

    refuse = ("made=; if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d "
              "&& chmod +x /usr/sbin/policy-rc.d && made=1; fi; ")
    install = f"{refuse}{apt_install(packages)}; rc=$?; [ -z \"$made\" ] || rm -f /usr/sbin/policy-rc.d; exit $rc"
    return [f"bash -c {shell_word(install)}",
            f"{heredoc(SCRIPT, services_script(needs), 'services')}\nchmod +x {SCRIPT}",
            f"{SCRIPT} init"]


def start_command() -> str:
    """The command a test run starts the servers with."""
    return f"{SCRIPT} start"


def stored_command(body: str) -> str:
    """A row's test command `body` with the servers started first; a start that fails says so
    and the tests run anyway (their failures are then the report)."""
    return f"{{ {start_command()} || echo 'swemint: the services did not start' >&2; }} && {body}"


def service_env(needs: list[ServiceNeed]) -> dict[str, str]:
    """The client environment of `needs` (each need's `client_env`, the first value wins):
    what the CI tells its tests about where the servers are."""
    out: dict[str, str] = {}
    for n in needs:
        out = {**n.client_env, **out}
    return out


def with_services(plan, needs: list[ServiceNeed]):
    """`plan` (an `agents.ecosystems.plans.Plan`) providing `needs`: `Plan.services` set, the
    provision commands before its setup commands, the client environment under its own (a
    variable the plan sets keeps the plan's value). `plan` itself when `needs` is empty or the
    plan provides them already."""
    if not needs or plan.services:
        return plan
    head = provision_commands(needs)
    return plan.model_copy(update={
        "services": list(needs),
        "setup_commands": head + [c for c in plan.setup_commands if c not in head],
        "env": {**service_env(needs), **plan.env},
        "notes": list(plan.notes) + [f"services: {n.label()}" for n in needs]}, deep=True)
