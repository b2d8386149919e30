"""The commands a project's own CI runs: GitHub workflow `run:` steps with their environment.

`ci_steps(tree)` reads `.github/workflows/*.yml|yaml` (through `agents.untrusted_yaml`, so a
hostile file is bounded) and returns one `CiStep` per `run:` step, with the workflow's, job's
and step's `env:` merged (step wins) and the job's matrix (first value of each list), in file
order, then one per line of `.travis.yml`'s `install` / `script`. `run` and values holding a
`${{ }}` expression are kept as written (`CiStep.resolved()` fills in the matrix); callers take
only what they can validate (a cargo feature name, a Go build tag, a Maven profile). The one CI
reader of the ecosystems: cargo `--features` / `--all-features` and `RUSTFLAGS=--cfg X`
(`agents.ecosystems.rust`), `go test -tags` (`agents.ecosystems.golang`), `mvn` calls
(`agents.ecosystems.java_maven`), Ant targets (`agents.ecosystems.java_ant`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

import yaml

from agents.untrusted_yaml import load_untrusted_yaml

__all__ = ["CiStep", "ci_steps", "command_lines", "flag_values"]


@dataclass
class CiStep:
    """One `run:` step: `path` (the workflow file), `run` (its script text), `env` (merged),
    `matrix` (the job's matrix: name -> its first scalar value)."""

    path: str
    run: str
    env: dict[str, str] = field(default_factory=dict)
    matrix: dict[str, str] = field(default_factory=dict)

    def resolved(self) -> str:
        """`run` with each ``${{ matrix.X }}`` replaced by X's first value (``$`` when the matrix
        has none: a word no validator accepts)."""
        return re.sub(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}", lambda m: self.matrix.get(m.group(1), "$"), self.run)


def _first_values(matrix) -> dict[str, str]:
    if not isinstance(matrix, dict):
        return {}
    return {str(k): str(v[0]) for k, v in matrix.items()
            if isinstance(v, list) and v and not isinstance(v[0], (dict, list))}


def _env(obj) -> dict[str, str]:
    if not isinstance(obj, dict):
        return {}
    return {str(k): str(v) for k, v in obj.items() if isinstance(v, (str, int, float, bool))}


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
            for step in job.get("steps") or []:
                if isinstance(step, dict) and isinstance(step.get("run"), str):
                    out.append(CiStep(path=path, run=step["run"], env={**job_env, **_env(step.get("env"))},
                                      matrix=matrix))
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
