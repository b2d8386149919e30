"""The servers a project's CI provides for its tests (a database, a cache): read as data.

Issue 25, class S12: a suite whose tests talk to a PostgreSQL, MySQL/MariaDB or Redis server
that the CI starts beside them; in a test container nothing listens, so every such test fails on
both sides (or the suite reports no test) and the row is lost. `service_needs(tree)` reads what
the CI declares, one `ServiceNeed` per kind of server, first met first:

- GitHub Actions: a job's ``services:`` (image, ``env:``, ``ports:``), a ``uses:`` action that
  installs and starts one (``ankane/setup-postgres``), a ``run:`` step that starts one on the
  runner (``pg_ctl start``, ``service postgresql start``, ``redis-server --daemonize yes``),
  and ``docker compose up`` of a compose file whose services are such images;
- Travis CI: ``services:`` (``postgresql``, ``mysql``, ``redis-server``) and
  ``addons.postgresql`` / ``addons.mariadb`` (a version);
- GitLab CI: ``services:`` at the top or in a job (``postgres:15``, ``{name:, alias:}``).

What is a server of which kind (image names, environment prefixes, start steps, actions, Debian
packages, default port) is data: ``recipes/services.yaml``. `ServiceNeed.client_env` is what the
job tells its tests about the server (``PGHOST``, ``DATABASE_URL``, ``REDIS_URL``...), with
``${{ job.services.<name>.ports[N] }}`` and ``${{ matrix.X }}`` filled in and any other
expression (a secret) left out. Provisioning those servers inside the test container is
`agents.ecosystems.service_provision`. Jobs of macOS or Windows runners are left out (GitHub
runs service containers only on Linux). Unreadable files are skipped; nothing here raises.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from agents.ecosystems.service_need import ServiceKind, ServiceNeed
from agents.untrusted_yaml import load_untrusted_yaml

__all__ = ["ServiceKind", "ServiceNeed", "client_env_of", "kind_of_image", "service_kinds", "service_needs"]

RECIPE = Path(__file__).parent / "recipes" / "services.yaml"
COMPOSE_FILES = ("compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml")


@lru_cache(maxsize=1)
def service_kinds() -> dict[str, dict[str, Any]]:
    """``recipes/services.yaml``, parsed once: kind -> its entry (see the file's head)."""
    return yaml.safe_load(RECIPE.read_text())


def kind_of_image(image: str, env: dict[str, str] | None = None) -> str | None:
    """The kind of server a container `image` is (its last path component, tag and digest
    dropped, among a kind's ``images``), else the kind whose ``env`` prefixes the container's
    `env` uses; None when neither says."""
    base = PurePosixPath(re.split(r"[:@]", image.strip().lower(), maxsplit=1)[0]).name if image else ""
    for kind, entry in service_kinds().items():
        if base in entry.get("images", []):
            return kind
    for kind, entry in service_kinds().items():
        if any(k.startswith(p) for k in (env or {}) for p in entry.get("env", [])):
            return kind
    return None


_CLIENT_NAME = re.compile(r"^PG(?:HOST|HOSTADDR|PORT|USER|PASSWORD|DATABASE|SSLMODE|OPTIONS|APPNAME|SERVICE|"
                          r"PASSFILE|CONNECT_TIMEOUT)$|(?:^|_)(?:POSTGRES|POSTGRESQL|MYSQL|MARIADB|REDIS|VALKEY|"
                          r"DATABASE|DB|DSN)(?:_|$)", re.I)
"""libpq's connection variables, and names holding a server's or a database's word."""
_NOT_CLIENT = re.compile(r"_(?:DIR|PATH|SRC|VERSION|IMAGE|TAG)$", re.I)
"""Build settings that share those words (``PG_SRC_DIR``, ``POSTGRES_VERSION``)."""
_CLIENT_URL = re.compile(r"^(?:postgres(?:ql)?|mysql|mariadb|rediss?)(?:\+\w+)?://", re.I)
_PORT_EXPR = re.compile(r"\$\{\{\s*job\.services\.([\w-]+)\.ports\[\s*['\"]?(\d+)['\"]?\s*\]\s*\}\}")
_MATRIX_EXPR = re.compile(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}")


def _fill(value: str, matrix: dict[str, str], ports: dict[str, int] | None = None) -> str | None:
    """`value` with matrix and service-port expressions filled in; None when another ``${{ }}``
    (a secret, a context this reader does not have) is left."""
    value = _MATRIX_EXPR.sub(lambda m: matrix.get(m.group(1), m.group(0)), value)
    if ports is not None:
        value = _PORT_EXPR.sub(lambda m: str(ports.get(m.group(1), m.group(2))), value)
    return None if "${{" in value else value


def client_env_of(env: dict[str, str], matrix: dict[str, str] | None = None,
                  ports: dict[str, int] | None = None) -> dict[str, str]:
    """The variables of a job's `env` that tell its tests where a server is: a name of the
    client's (libpq's ``PGHOST``, ``PGPASSWORD``; ``DATABASE_URL``, ``REDIS_URL``, ``DB_HOST``;
    not a build setting such as ``PG_SRC_DIR`` or ``MYSQL_VERSION``) or a value that is a server URL (``postgres://...``), expressions filled in (`_fill`; values with
    another expression left out). `ports`: service name -> the port it listens on."""
    out: dict[str, str] = {}
    for k, v in env.items():
        filled = _fill(str(v), matrix or {}, ports or {})
        if filled is not None and not _NOT_CLIENT.search(k) and (_CLIENT_NAME.search(k) or _CLIENT_URL.match(filled)):
            out[k] = filled
    return out


def _str_env(obj: Any) -> dict[str, str]:
    if isinstance(obj, list):  # compose / Travis: ["K=V", ...]
        pairs = [str(x).split("=", 1) for x in obj if isinstance(x, (str, int)) and "=" in str(x)]
        return {k.strip(): v.strip().strip("'\"") for k, v in pairs if re.fullmatch(r"[A-Za-z_]\w*", k.strip())}
    if isinstance(obj, dict):
        return {str(k): str(v) for k, v in obj.items() if isinstance(v, (str, int, float, bool))}
    return {}


def _port(ports: Any, default: int) -> int:
    """The host port of a ``ports:`` list (``"5432:5432"``, ``"127.0.0.1:6380:6379"``,
    ``5432``, ``"5432/tcp"``): the entry mapping the kind's `default` container port, else the
    first entry; its host side, else its container side; `default` when none is a port."""
    entries = []
    for p in ports if isinstance(ports, list) else []:
        parts = [x.split("/")[0] for x in str(p).split(":")]
        if parts and all(x.isdigit() for x in parts[-2:]) and parts[-1].isdigit():
            host = int(parts[-2]) if len(parts) >= 2 else int(parts[-1])
            entries.append((int(parts[-1]), host))
    for container, host in entries:
        if container == default and 0 < host < 65536:
            return host
    return entries[0][1] if entries and 0 < entries[0][1] < 65536 else default


def _version(image: str) -> str:
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    m = re.match(r"v?(\d+(?:\.\d+)*)", tag)
    return m.group(1) if m else ""


def _need(kind: str, *, name: str = "", image: str = "", env: dict[str, str] | None = None, ports: Any = None,
          client_env: dict[str, str] | None = None, source: str = "", version: str = "") -> ServiceNeed:
    default = int(service_kinds()[kind]["port"])
    return ServiceNeed(kind=kind, name=name if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]{0,62}", name) else "",
                       image=image, version=version or _version(image), env=env or {}, port=_port(ports, default),
                       client_env=client_env or {}, source=source)


_FOREIGN = re.compile(r"windows|macos|mac-|osx|darwin", re.I)


def _workflow_needs(tree, path: str, data: dict) -> list[ServiceNeed]:
    from agents.ecosystems.ci import _first_values

    out: list[ServiceNeed] = []
    top = _str_env(data.get("env"))
    jobs = data.get("jobs") if isinstance(data.get("jobs"), dict) else {}
    for job_name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        strategy = job.get("strategy") if isinstance(job.get("strategy"), dict) else {}
        matrix = _first_values(strategy.get("matrix"))
        runs_on = job.get("runs-on")
        if _FOREIGN.search(_fill(" ".join(map(str, runs_on)) if isinstance(runs_on, list) else str(runs_on or ""),
                                 matrix) or ""):
            continue
        steps = [s for s in job.get("steps") or [] if isinstance(s, dict)]
        env = {**top, **_str_env(job.get("env"))}
        for s in steps:  # a step's env applies to that step; the test step's tells where the server is
            env = {**_str_env(s.get("env")), **env}
        services = job.get("services") if isinstance(job.get("services"), dict) else {}
        ports: dict[str, int] = {}
        found: list[tuple[str, str, str, dict[str, str], Any]] = []
        for sname, svc in services.items():
            svc = {"image": svc} if isinstance(svc, str) else svc
            if not isinstance(svc, dict):
                continue
            image = _fill(str(svc.get("image") or ""), matrix) or ""
            senv = {k: v for k, v in ((k, _fill(v, matrix)) for k, v in _str_env(svc.get("env")).items())
                    if v is not None}
            kind = kind_of_image(image, senv)
            if kind:
                found.append((kind, str(sname), image, senv, svc.get("ports")))
                ports[str(sname)] = _port(svc.get("ports"), int(service_kinds()[kind]["port"]))
        client = client_env_of(env, matrix, ports)
        for kind, sname, image, senv, sports in found:
            out.append(_need(kind, name=sname, image=image, env=senv, ports=sports, client_env=client,
                             source=f"{path}: jobs.{job_name}.services.{sname} ({image or 'no image'})"))
        for s in steps:
            uses = re.split(r"@", str(s.get("uses") or ""), maxsplit=1)[0].lower()
            for kind, entry in service_kinds().items():
                if uses and uses in entry.get("actions", []):
                    with_ = _str_env(s.get("with"))
                    ver = _fill(with_.get(f"{kind}-version", with_.get("version", "")), matrix) or ""
                    out.append(_need(kind, client_env=client, version=_version(f"x:{ver}"),
                                     source=f"{path}: jobs.{job_name} uses {uses}"))
    return out


def _step_needs(tree) -> list[ServiceNeed]:
    """Servers a CI run step (workflows, composite actions, Travis) starts on the runner, and
    those of a compose file it brings up."""
    from agents.ecosystems.ci import action_steps, ci_steps

    out: list[ServiceNeed] = []
    for step in ci_steps(tree) + action_steps(tree):
        if step.foreign():
            continue
        text = step.resolved()
        for kind, entry in service_kinds().items():
            m = next((m for m in (re.search(rx, text) for rx in entry.get("steps", [])) if m), None)
            if m:
                out.append(_need(kind, client_env=client_env_of(step.env, step.matrix),
                                 source=f"{step.path}: runs {m.group(0).strip()[:80]!r}"))
        for m in re.finditer(r"docker[- ]compose\b([^\n;&|]*)\bup\b", text):
            files = re.findall(r"(?:-f|--file)[\s=]+(\S+)", m.group(1)) or \
                [f for f in COMPOSE_FILES if tree.exists(f)][:1]
            for f in files:
                out += _compose_needs(tree, f.strip("'\""), client_env_of(step.env, step.matrix))
    return out


def _compose_needs(tree, path: str, client: dict[str, str]) -> list[ServiceNeed]:
    try:
        data = load_untrusted_yaml(tree.read(path) or "") if tree.exists(path) else None
    except yaml.YAMLError:
        return []
    services = data.get("services") if isinstance(data, dict) and isinstance(data.get("services"), dict) else {}
    out = []
    for sname, svc in services.items():
        if not isinstance(svc, dict) or not isinstance(svc.get("image"), str):
            continue
        env = _str_env(svc.get("environment"))
        kind = kind_of_image(svc["image"], env)
        if kind:
            out.append(_need(kind, name=str(sname), image=svc["image"], env=env, ports=svc.get("ports"),
                             client_env=client, source=f"{path}: services.{sname} ({svc['image']})"))
    return out


_TRAVIS = {"postgresql": "postgres", "postgres": "postgres", "mysql": "mysql", "mariadb": "mysql",
           "redis": "redis", "redis-server": "redis"}


def _travis_needs(data: dict) -> list[ServiceNeed]:
    env = data.get("env")
    client = client_env_of(_str_env(env.get("global") if isinstance(env, dict) else env))
    addons = data.get("addons") if isinstance(data.get("addons"), dict) else {}
    names = [str(s) for s in data.get("services") or [] if isinstance(s, str)] if isinstance(
        data.get("services"), list) else []
    names += [a for a in ("postgresql", "mariadb") if a in addons]
    out = []
    for n in dict.fromkeys(names):
        if n in _TRAVIS:
            out.append(_need(_TRAVIS[n], client_env=client, version=_version(f"x:{addons.get(n, '')}"),
                             source=f".travis.yml: services {n}"))
    return out


def _gitlab_needs(data: dict) -> list[ServiceNeed]:
    out = []
    top = _str_env(data.get("variables"))
    jobs = [("", data)] + [(str(k), v) for k, v in data.items() if isinstance(v, dict) and not str(k).startswith(".")]
    for job_name, job in jobs:
        env = {**top, **_str_env(job.get("variables"))}
        for svc in job.get("services") or [] if isinstance(job.get("services"), list) else []:
            image = str(svc.get("name") or "") if isinstance(svc, dict) else str(svc)
            alias = str(svc.get("alias") or "") if isinstance(svc, dict) else ""
            kind = kind_of_image(image, env)
            if kind:
                name = alias or PurePosixPath(re.split(r"[:@]", image, maxsplit=1)[0]).name
                out.append(_need(kind, name=name, image=image, env=env, client_env=client_env_of(env),
                                 source=f".gitlab-ci.yml: {job_name + '.' if job_name else ''}services {image}"))
    return out


def service_needs(tree) -> list[ServiceNeed]:
    """The servers `tree`'s CI provides for its tests (module docstring): one `ServiceNeed` per
    kind, the first met (workflows in file order, then run steps and compose files, Travis,
    GitLab), with the `client_env` of every declaration of that kind merged in (first value
    wins). [] when the CI declares none."""
    found: list[ServiceNeed] = []
    paths = sorted(p for p in tree.files if p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml")))
    readers = [(p, _workflow_needs) for p in paths] + [(".travis.yml", _travis_needs),
                                                       (".gitlab-ci.yml", _gitlab_needs)]
    docs = []
    for path, reader in readers:
        if path not in tree.files:
            continue
        try:
            data = load_untrusted_yaml(tree.read(path) or "")
        except yaml.YAMLError:
            continue
        if isinstance(data, dict):
            docs.append((path, reader, data))
    for path, reader, data in docs:
        if reader is _workflow_needs:
            found += _workflow_needs(tree, path, data)
    found += _step_needs(tree)
    for _path, reader, data in docs:
        if reader is not _workflow_needs:
            found += reader(data)
    out: dict[str, ServiceNeed] = {}
    for need in found:
        if need.kind not in out:
            out[need.kind] = need
        else:
            first = out[need.kind]
            first.client_env = {**need.client_env, **first.client_env}
    return list(out.values())
