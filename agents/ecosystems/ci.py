"""The commands a project's own CI runs: GitHub workflow `run:` steps with their environment.

`ci_steps(tree)` reads `.github/workflows/*.yml|yaml` (through `agents.untrusted_yaml`, so a
hostile file is bounded) and returns one `CiStep` per `run:` step, with the workflow's, job's
and step's `env:` merged (step wins) and the job's matrix (first value of each list), in file
order, then one per line of `.travis.yml`'s `install` / `script`. `run` and values holding a
`${{ }}` expression are kept as written (`CiStep.resolved()` fills in the matrix); callers take
only what they can validate (a cargo feature name, a Go build tag, a Maven profile). The one CI
reader of the ecosystems: cargo `--features` / `--all-features` and `RUSTFLAGS=--cfg X`
(`agents.ecosystems.rust`), `go test -tags` (`agents.ecosystems.golang`), `mvn` calls
(`agents.ecosystems.java.maven_ci`), Ant targets (`agents.ecosystems.java.ant_build`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

import yaml

from agents.untrusted_yaml import load_untrusted_yaml

__all__ = ["CiStep", "action_steps", "ci_apt_packages", "ci_pip_tools", "ci_steps", "command_lines", "flag_values",
           "pip_tool_commands"]


@dataclass
class CiStep:
    """One `run:` step: `path` (the workflow file), `run` (its script text), `env` (merged),
    `matrix` (the job's matrix: name -> its first scalar value), `runs_on` (the job's
    ``runs-on``, matrix filled in; "" when not said) and `shell` (the step's ``shell:``)."""

    path: str
    run: str
    env: dict[str, str] = field(default_factory=dict)
    matrix: dict[str, str] = field(default_factory=dict)
    runs_on: str = ""
    shell: str = ""

    def foreign(self) -> bool:
        """Whether the step runs on another operating system than a Linux build container (a
        macOS or Windows runner, a PowerShell or cmd shell): its configure options and commands
        are that platform's (Metal, MSVC generators), not this one's."""
        return bool(_FOREIGN_RUNNER.search(self.runs_on) or _FOREIGN_SHELL.fullmatch(self.shell.strip()))

    def resolved(self) -> str:
        """`run` with each ``${{ matrix.X }}`` replaced by X's first value (``$`` when the matrix
        has none: a word no validator accepts)."""
        return re.sub(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}", lambda m: self.matrix.get(m.group(1), "$"), self.run)


_FOREIGN_RUNNER = re.compile(r"windows|macos|mac-|osx|darwin", re.I)
_FOREIGN_SHELL = re.compile(r"pwsh|powershell|cmd", re.I)


def _first_values(matrix) -> dict[str, str]:
    if not isinstance(matrix, dict):
        return {}
    return {str(k): str(v[0]) for k, v in matrix.items()
            if isinstance(v, list) and v and not isinstance(v[0], (dict, list))}


def _env(obj) -> dict[str, str]:
    if not isinstance(obj, dict):
        return {}
    return {str(k): str(v) for k, v in obj.items() if isinstance(v, (str, int, float, bool))}


def action_steps(tree) -> list[CiStep]:
    """The `run:` steps of the repository's own composite actions (``.github/actions/**/action.yml``,
    ``runs.steps``), which workflows call with ``uses: ./.github/actions/<name>``: a project's
    configure and install steps often live there. Unreadable files are skipped; never raises."""
    out: list[CiStep] = []
    paths = sorted(p for p in tree.files if p.startswith(".github/actions/")
                   and p.rsplit("/", 1)[-1] in ("action.yml", "action.yaml"))
    for path in paths[:40]:
        try:
            data = load_untrusted_yaml(tree.read(path) or "")
        except yaml.YAMLError:
            continue
        runs = data.get("runs") if isinstance(data, dict) else None
        for step in (runs.get("steps") or []) if isinstance(runs, dict) else []:
            if isinstance(step, dict) and isinstance(step.get("run"), str):
                out.append(CiStep(path=path, run=step["run"], env=_env(step.get("env")),
                                  shell=str(step.get("shell") or "")))
    return out


def ci_apt_packages(tree) -> list[str]:
    """Debian package names the CI installs: ``apt-get install`` / ``apt install`` lines of the
    workflows' and composite actions' run steps and of ``.travis.yml``, and ``.travis.yml``'s
    ``addons.apt.packages``; each once, in order (names only: `agents.ecosystems.drivers.apt_packages`)."""
    from agents.ecosystems.drivers import apt_packages
    from agents.debindex import DEBIAN_NAME

    out: list[str] = []
    texts = [st.resolved() for st in ci_steps(tree) + action_steps(tree)]
    if ".travis.yml" in tree.files:
        try:
            travis = load_untrusted_yaml(tree.read(".travis.yml") or "")
        except yaml.YAMLError:
            travis = None
        if isinstance(travis, dict):
            for key in ("before_install", "install", "before_script"):
                val = travis.get(key)
                texts += [str(x) for x in (val if isinstance(val, list) else [val] if isinstance(val, str) else [])]
            addons = travis.get("addons") if isinstance(travis.get("addons"), dict) else {}
            apt = addons.get("apt") if isinstance(addons.get("apt"), dict) else {}
            pkgs = apt.get("packages") if isinstance(apt.get("packages"), list) else []
            out += [str(p) for p in pkgs if isinstance(p, str) and DEBIAN_NAME.fullmatch(p)]
    for text in texts:
        out += apt_packages(text)
    return list(dict.fromkeys(out))


_PIP = re.compile(r"(?:^|[\s;&|(])(?:python3?(?:\.\d+)?\s+-m\s+pip|pip3?|pipx)\s+install\s+([^;&|\n]*)")
PYPI_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")


def ci_pip_tools(tree) -> list[str]:
    """PyPI names the CI installs with ``pip install`` / ``pip3 install`` / ``python -m pip
    install`` / ``pipx install`` (workflows, composite actions, ``.travis.yml``'s install
    lines): options, requirement files and version pins dropped, each once, in order. The
    class: test tools a C or other non-Python project's CI takes from PyPI (cram, lit, meson)."""
    texts = [st.resolved() for st in ci_steps(tree) + action_steps(tree)]
    if ".travis.yml" in tree.files:
        try:
            travis = load_untrusted_yaml(tree.read(".travis.yml") or "")
        except yaml.YAMLError:
            travis = None
        if isinstance(travis, dict):
            for key in ("before_install", "install", "before_script"):
                val = travis.get(key)
                texts += [str(x) for x in (val if isinstance(val, list) else [val] if isinstance(val, str) else [])]
    out: list[str] = []
    for text in texts:
        for m in _PIP.finditer(text.replace("\\\n", " ")):
            words = m.group(1).split()
            skip = False
            for w in words:
                if skip:
                    skip = False
                    continue
                if w in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
                         "--extra-index-url", "--target", "-t", "--prefix", "--root"):
                    skip = True
                    continue
                name = re.split(r"[<>=!~\[;]", w.strip("'\""), maxsplit=1)[0]
                if w.startswith("-") or "/" in w or "$" in w or not PYPI_NAME.fullmatch(name) or name in out:
                    continue
                out.append(name)
    return out


def pip_tool_commands(tree, commands: list[str]) -> tuple[list[str], list[str]]:
    """(commands of `commands` the CI installs from PyPI under the same name, the shell
    commands installing them into the image: Debian's pip, then ``pip install`` with the
    system's interpreter, PIP_BREAK_SYSTEM_PACKAGES set for the pips that guard it). For a command Debian's index has no package for. ([], []) when the
    CI installs none of them."""
    import shlex

    pip = {n.lower(): n for n in ci_pip_tools(tree)}
    names = [pip[c.lower()] for c in commands if c.lower() in pip]
    if not names:
        return [], []
    from agents.ecosystems.debian import apt_install

    return names, [apt_install(["python3-pip"]),
                   # the variable, not the flag: pip before 23 (bullseye's) has no --break-system-packages
                   # and ignores an environment variable it does not know
                   "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir "
                   + " ".join(shlex.quote(n) for n in names)]


def ci_steps(tree) -> list[CiStep]:
    """The `run:` steps of `tree`'s GitHub workflows (module doc). Unreadable files are skipped;
    never raises."""
    out: list[CiStep] = []
    paths = sorted(p for p in tree.files if p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml")))
    if ".travis.yml" in tree.files:
        paths.append(".travis.yml")
    for path in paths:
        try:
            data = load_untrusted_yaml(tree.read(path) or "")
        except yaml.YAMLError:
            continue
        if not isinstance(data, dict):
            continue
        top = _env(data.get("env"))
        if path == ".travis.yml":
            for key in ("install", "script"):
                val = data.get(key)
                for line in val if isinstance(val, list) else [val] if isinstance(val, str) else []:
                    out.append(CiStep(path=path, run=str(line), env=top))
            continue
        jobs = data.get("jobs") if isinstance(data.get("jobs"), dict) else {}
        for job in jobs.values():
            if not isinstance(job, dict):
                continue
            job_env = {**top, **_env(job.get("env"))}
            matrix = _first_values((job.get("strategy") or {}).get("matrix") if isinstance(job.get("strategy"), dict) else {})
            runs_on = job.get("runs-on")
            runs_on = " ".join(map(str, runs_on)) if isinstance(runs_on, list) else str(runs_on or "")
            runs_on = CiStep(path=path, run=runs_on, matrix=matrix).resolved().replace("$", "")
            for step in job.get("steps") or []:
                if isinstance(step, dict) and isinstance(step.get("run"), str):
                    out.append(CiStep(path=path, run=step["run"], env={**job_env, **_env(step.get("env"))},
                                      matrix=matrix, runs_on=runs_on, shell=str(step.get("shell") or "")))
    return out


def command_lines(run: str) -> list[str]:
    """The shell commands of a `run:` script: lines joined at trailing backslashes, split at
    `&&`, `||` and `;` (a rough split: enough to find one tool's flags)."""
    text = re.sub(r"\\\n", " ", run)
    out = []
    for line in text.splitlines():
        for part in re.split(r"&&|\|\||;", line):
            if part.strip() and not part.strip().startswith("#"):
                out.append(part.strip())
    return out


def flag_values(words: list[str], *names: str) -> list[str]:
    """Values of the flags `names` in `words` (``--features a,b``, ``--features=a``, ``-F a``),
    as written (a quoted list stays one value)."""
    out = []
    for i, w in enumerate(words):
        for n in names:
            if w == n and i + 1 < len(words):
                out.append(words[i + 1])
            elif w.startswith(n + "="):
                out.append(w[len(n) + 1:])
    return out


def split_words(command: str) -> list[str]:
    """`command` split like a shell would (shlex); on unbalanced quotes, at whitespace."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()
