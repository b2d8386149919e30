"""Actions as data: binding `${name}` placeholders, and reading a repair note back into actions.

A repair note is what a backend writes on a trajectory step (`StepRecord.note`) when it changes
something to make a failed step pass: `repair: lift numpy`, `repair: isolation`,
`repair: install pyyaml` (the rule backend's keys, `agents.ecosystems.python.builder`), the forms below, or a
JSON action / list of actions (the LLM backend). Anything else is kept as a shell command.

`own_refusals` leaves out the actions that would install, pin or lift the project's own package
(`RepoContext.own`); every path that applies memory actions calls it (after a failure:
`agents.repair.RepairHelper.memory_plans`; before planning: `agents.memory.before.memory_before_plan`;
replayed moves: `agents.memory.replay`).
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
import json
import re
import shlex
from collections.abc import Mapping, Sequence

from pydantic import TypeAdapter, ValidationError

from agents.memory.experience import (
    Action,
    AptAction,
    EnvAction,
    Experience,
    InstallAction,
    MoveAction,
    PinAction,
    ShellAction,
    TestArgAction,
    ToolchainAction,
    UvLiftAction,
    UvOptionAction,
)
from agents.memory.text import ARG_RE, clean

_ACTION = TypeAdapter(Action)
_ACTIONS = TypeAdapter(list[Action])
_PH = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SITE = re.compile(r"site-packages/([A-Za-z0-9_]+)")
_NOMOD = re.compile(r"No module named '([A-Za-z0-9_.]+)'")
REPAIR_PREFIX = "repair:"
_REQ_NAME = re.compile(r"^\s*(@[A-Za-z0-9._-]+/[A-Za-z0-9._-]+|[A-Za-z0-9][A-Za-z0-9._-]*)(?=$|[\s<>=!~@\[;(^*,])")
_SHELL_INSTALL = re.compile(r"(?:\bpip3?|\buv\s+pip|-m\s+pip)\s+install\s+([^;&|\n]*)"
                            r"|\bnpm\s+(?:install|i|add)\s+([^;&|\n]*)|\b(?:yarn|pnpm)\s+add\s+([^;&|\n]*)")
_VALUE_OPTIONS = {"-r", "-c", "-e", "-i", "--requirement", "--constraint", "--editable", "--index-url",
                  "--extra-index-url", "-f", "--find-links", "--python", "-p"}


def _subst(value: object, variables: Mapping[str, str], missing: set[str], shell: bool = False) -> object:
    if isinstance(value, str):
        def one(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if variables.get(name):
                got = str(variables[name])
                if shell and not ARG_RE.fullmatch(got):
                    missing.add(name)  # never text with spaces, quotes or shell syntax into a command
                    return m.group(0)
                return got
            if default is not None:
                return default
            missing.add(name)
            return m.group(0)
        return _PH.sub(one, value)
    if isinstance(value, list):
        return [_subst(v, variables, missing, shell) for v in value]
    return value


def bind_actions(actions: Sequence[Action], variables: Mapping[str, str]) -> tuple[list[Action], list[str]]:
    """Fill `${name}` / `${name:-default}` in every string field of `actions` from `variables`.

    Returns (bound actions, names left unbound); an action with an unbound placeholder is
    dropped rather than run half-filled. A value bound into a `shell` action's command must be a
    plain token (`text.ARG_CHARS`: no space, quote or shell syntax; it may come from a build's
    output through the signature's groups): any other value leaves the placeholder unbound.
    """
    out: list[Action] = []
    unbound: set[str] = set()
    for action in actions:
        missing: set[str] = set()
        shell = action.kind == "shell"
        data = {k: _subst(v, variables, missing, shell) for k, v in action.model_dump().items()}
        if missing:
            unbound |= missing
            continue
        out.append(_ACTION.validate_python(data))
    return out, sorted(unbound)


def error_variables(exp: Experience, error_text: str) -> dict[str, str]:
    """Variables an error offers to `exp`'s actions: the signature's named groups, plus
    `site_package` (the last package under site-packages in a traceback, as a distribution name)
    and `missing_module` (the top-level name of `No module named 'x.y'`)."""
    text = clean(error_text)
    found: dict[str, str] = {}
    sites = _SITE.findall(text)
    if sites:
        found["site_package"] = sites[-1].replace("_", "-").lower()
    nomod = _NOMOD.search(text)
    if nomod:
        found["missing_module"] = nomod.group(1).split(".")[0]
    m = exp.signature_re.search(text)
    if m:
        found.update({k: v for k, v in m.groupdict().items() if v})
    return found


def parse_repair(note: str) -> list[Action]:
    """Actions described by a repair note (`repair: ...` prefix optional; empty note -> []).

    Forms: `lift|exempt|upgrade PKG` -> uv_lift; `isolation` -> uv_option no_build_isolation;
    `install PKG...`; `pin REQ`; `env NAME=VALUE`; `apt PKG...`; `toolchain TOOL VERSION`;
    `test-arg ARG`; a JSON action or list of actions; anything else -> shell command.
    """
    text = note.strip()
    if text.lower().startswith(REPAIR_PREFIX):
        text = text[len(REPAIR_PREFIX):].strip()
    if not text:
        return []
    if text[0] in "[{":
        try:
            data = json.loads(text)
            return _ACTIONS.validate_python(data if isinstance(data, list) else [data])
        except (json.JSONDecodeError, ValidationError):
            pass
    head, _, rest = text.partition(" ")
    head, rest = head.lower(), rest.strip()
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    if head in ("lift", "exempt", "upgrade") and len(words) == 1:
        return [UvLiftAction(package=words[0].lower())]
    if head in ("isolation", "no-build-isolation") and not rest:
        return [UvOptionAction(option="no_build_isolation")]
    if head == "install" and words:
        return [InstallAction(packages=words)]
    if head == "pin" and rest:
        return [PinAction(requirement=rest)]
    if head == "env" and "=" in rest:
        name, _, value = rest.partition("=")
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            return [EnvAction(name=name, value=value)]
    if head == "apt" and words:
        return [AptAction(packages=words)]
    if head == "toolchain" and len(words) == 2:
        return [ToolchainAction(tool=words[0], version=words[1])]
    if head == "test-arg" and rest:
        return [TestArgAction(arg=rest)]
    return [ShellAction(command=text)]


_norm = canonicalize_name  # PEP 503: `Foo_Bar` -> `foo-bar`


def requirement_name(text: str) -> str | None:
    """The package a requirement or an installer's argument names, normalised (PEP 503, lower
    case): `pytest>=6.2.5` -> `pytest`, `Foo_Bar[x]==1` -> `foo-bar`, `node-sass@4` -> `node-sass`,
    `@scope/pkg@^1` -> `@scope/pkg`, `rake -v '<11'` -> `rake`; None for a path, URL or option."""
    m = _REQ_NAME.match(text)
    return _norm(m.group(1)) if m else None


def _shell_packages(command: str) -> list[str]:
    """The packages a shell command installs with pip / uv pip / npm / yarn / pnpm (options and
    their values, paths and URLs left out)."""
    names: list[str] = []
    for m in _SHELL_INSTALL.finditer(command):
        try:
            words = shlex.split(next(g for g in m.groups() if g is not None))
        except ValueError:
            words = next(g for g in m.groups() if g is not None).split()
        skip = False
        for w in words:
            if skip:
                skip = False
                continue
            if w.startswith("-"):
                skip = w in _VALUE_OPTIONS
                continue
            if (name := requirement_name(w)) is not None:
                names.append(name)
    return names


def installed_packages(action: Action) -> list[str]:
    """The packages `action` installs, pins or lifts, normalised (`requirement_name`): `pin`'s
    requirement, `install`'s packages, `uv_lift`'s package, a `move`'s packages installed with
    the ecosystem's installer or from the CI's pip (`module`, `ci_pip`), and what a `shell`
    command installs with pip / uv pip / npm / yarn / pnpm; [] for every other kind."""
    if isinstance(action, PinAction):
        words = [action.requirement]
    elif isinstance(action, InstallAction):
        words = list(action.packages)
    elif isinstance(action, UvLiftAction):
        words = [action.package]
    elif isinstance(action, MoveAction) and action.install in ("module", "ci_pip"):
        words = list(action.packages)
    elif isinstance(action, ShellAction):
        return _shell_packages(action.command)
    else:
        return []
    return [n for w in words if (n := requirement_name(w)) is not None]


def own_refusals(actions: Sequence[Action], own: Sequence[str]) -> tuple[list[Action], list[str]]:
    """`actions` without those that would install, pin or lift one of the project's own packages
    (`own`: `RepoContext.own`, the distributions the repository itself builds), and why each
    left out was (`pin pytest>=6.2.5: pytest is the project's own package`). The checkout is
    that package: installing it from a registry would replace the code under test. With `own`
    empty, the actions are returned as they are."""
    mine = {_norm(n) for n in own if n}
    if not mine:
        return list(actions), []
    kept: list[Action] = []
    why: list[str] = []
    for a in actions:
        hit = sorted(set(installed_packages(a)) & mine)
        if hit:
            what = json.dumps({"kind": a.kind} | a.model_dump(exclude_defaults=True))[:200]
            why.append(f"{what}: {', '.join(hit)} is the project's own package (the checkout under test), "
                       "never installed from a registry")
        else:
            kept.append(a)
    return kept, why
