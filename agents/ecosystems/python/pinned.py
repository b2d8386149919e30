"""Pinned requirement files: the part of a Python project's dependency set that its manifests fix
without running any of its code, for Python's dependency tier (`agents.tiers`).

A requirement file qualifies when every line of it, and of every file it includes with ``-r`` /
``-c`` (paths relative to the including file, inside the tree), is a comment, a blank line or a
pinned requirement ``name[extras]==version`` (``===`` too; environment markers and ``--hash``
options allowed; pip-compile's continuation lines joined). Anything else -- an editable or local
path (``-e .``, ``./pkg``), a VCS or URL requirement (``git+https://...``, ``name @ url``), an
unpinned or ranged requirement, an index or other pip option, an environment variable -- leaves
the whole file to the instance tier, as before. From a qualifying file, the lines the instance
tier's builder would not install as written are dropped: dev tools it skips (`SKIP_TEST_DEPS`:
pytest-cov, pytest-xdist, ... change how the tests run), the project's own distribution (its
released sdist would run the project's setup code) and pytest pins it relaxes for the interpreter
(`relax_test_pins`). The rest is written out by the tier's own command (no file of the tree is
read in the container) and installed with ``uv pip install -r``; the instance tier then finds
those packages installed.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from packaging.utils import canonicalize_name as canonical  # PEP 503 names
from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.python.reqfiles import include_of, logical_lines
from agents.gitrepo import GitTree

__all__ = ["PinnedRequirements", "REQUIREMENTS_DIR", "pinned_requirements", "install_command"]

REQUIREMENTS_DIR = "/tmp/swemint-deps"
"""Where the tier's command writes the requirement and constraint lines (removed after)."""
MAX_DEPTH = 4
"""Includes followed (``-r`` inside ``-r``...); a deeper chain leaves the file to the instance tier."""
MAX_BYTES = 64 * 1024
"""Requirement text the command carries at most (it is in the Dockerfile and the image's label)."""
_HASH = re.compile(r"--hash(?:=|\s+)\S+")


class PinnedRequirements(BaseModel):
    """What Python's dependency tier installs from the tree's pinned requirement files.

    `files`: the requirement files taken (as the profile lists them), with `included` the files
    they include; `requirements` / `constraints`: the lines installed (``-r``) and applied
    (``-c``), in file order, once each; `left`: file -> why it stays with the instance tier;
    `dropped`: lines of taken files not installed here, and why."""

    model_config = ConfigDict(extra="forbid")
    files: list[str] = Field(default_factory=list)
    included: list[str] = Field(default_factory=list)
    requirements: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    left: dict[str, str] = Field(default_factory=dict)
    dropped: list[str] = Field(default_factory=list)


def pinned_name(line: str) -> str | None:
    """The canonical name of `line` when it is a pinned requirement (one ``==``/``===`` specifier,
    no wildcard, no URL; markers and ``--hash`` options allowed), else None."""
    from packaging.requirements import InvalidRequirement, Requirement

    if "${" in line or line.startswith("-"):
        return None
    req_text, sep, options = line.partition(" --")
    if sep and _HASH.sub("", "--" + options).strip():
        return None  # an option other than --hash
    try:
        req = Requirement(req_text)
    except InvalidRequirement:
        return None
    specs = list(req.specifier)
    if req.url or len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
        return None
    return canonical(req.name)


def _read(tree: GitTree, path: str, kind: str, depth: int, seen: tuple[str, ...],
          out: dict[str, list[str]], files: list[str]) -> str:
    """Add the lines of `path` (and its includes) to `out["r"]` / `out["c"]`; returns "" when it
    qualifies, else why not."""
    if depth > MAX_DEPTH:
        return f"includes deeper than {MAX_DEPTH}"
    if path in seen:
        return ""
    text = tree.read(path)
    if text is None:
        return f"{path} is not in the tree"
    files.append(path)
    for line in logical_lines(text):
        inc = include_of(line)
        if inc is not None:
            sub_kind, target = inc
            if target is None or "://" in target or target.startswith("/") or "$" in target:
                return f"include {line[:80]!r}"
            sub = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if sub.startswith("../") or sub == "..":
                return f"include {line[:80]!r} leaves the tree"
            why = _read(tree, sub, "c" if kind == "c" else sub_kind, depth + 1, (*seen, path), out, files)
            if why:
                return why
            continue
        if pinned_name(line) is None:
            return f"not a pinned requirement: {line[:80]!r}"
        out[kind].append(line)
    return ""


def pinned_requirements(tree: GitTree, paths: list[str], python: str, own: list[str] | set[str],
                        skip: set[str] | frozenset[str]) -> PinnedRequirements:
    """The pinned part of the requirement files `paths` at the tree's commit (module docstring):
    `python` the interpreter (pytest pins it cannot run are left out), `own` the project's
    distribution names, `skip` the dev tools the builder does not install."""
    from agents.ecosystems.python.python_plan import relax_test_pins

    got = PinnedRequirements()
    reqs: list[str] = []
    cons: list[str] = []
    own_names = {canonical(n) for n in own}
    skip_names = {canonical(n) for n in skip}
    for path in paths:
        lines: dict[str, list[str]] = {"r": [], "c": []}
        files: list[str] = []
        why = _read(tree, path, "r", 0, (), lines, files)
        if why:
            got.left[path] = why
            continue
        got.files.append(path)
        got.included += [f for f in files if f != path and f not in got.included]
        for line in lines["r"]:
            name = pinned_name(line) or ""
            if name in skip_names:
                got.dropped.append(f"{line}: a dev tool the instance tier does not install")
            elif name in own_names:
                got.dropped.append(f"{line}: the project's own distribution")
            elif relax_test_pins([line.partition(" --")[0]], python)[0] != [line.partition(" --")[0]]:
                got.dropped.append(f"{line}: a pytest the instance tier relaxes for Python {python}")
            else:
                reqs.append(line)
        cons += [line for line in lines["c"] if (pinned_name(line) or "") not in own_names]
    got.requirements = list(dict.fromkeys(reqs))
    got.constraints = list(dict.fromkeys(cons)) if got.requirements else []
    if len("\n".join(got.requirements + got.constraints)) > MAX_BYTES:
        got.left.update({f: f"the pinned set is over {MAX_BYTES} bytes" for f in got.files})
        got.files, got.included, got.requirements, got.constraints = [], [], [], []
    return got


def install_command(pins: PinnedRequirements, uv_flags: str) -> str:
    """The tier's command: the pinned lines written to `REQUIREMENTS_DIR` (shell-quoted, one per
    line), ``uv pip install`` of them (``-r``, with ``-c`` for the constraints) under the
    builder's flags, the folder removed."""
    def write(lines: list[str], name: str) -> str:
        return f"printf '%s\\n' {' '.join(shlex.quote(x) for x in lines)} > {REQUIREMENTS_DIR}/{name}"

    parts = [f"mkdir -p {REQUIREMENTS_DIR}", write(pins.requirements, "requirements.txt")]
    cons = ""
    if pins.constraints:
        parts.append(write(pins.constraints, "constraints.txt"))
        cons = f" -c {REQUIREMENTS_DIR}/constraints.txt"
    parts += [f"uv pip install {uv_flags} -r {REQUIREMENTS_DIR}/requirements.txt{cons}", f"rm -rf {REQUIREMENTS_DIR}"]
    return " && ".join(parts)
