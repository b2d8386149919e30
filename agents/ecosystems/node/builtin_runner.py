"""Node's built-in test runner (``node --test``, the ``node:test`` module, Node >= 18) as a runner
of the node ecosystem (rule S15, issue 25: a JavaScript project whose ``test`` script is
``node --test tests/*.test.js`` has no vitest/jest/mocha/ava to call; the row ended `env_failed`
"no supported JS test runner").

- `node_test_invocation(script)`: whether a script runs ``node [flags] --test ...`` and, if so,
  the Node flags to keep (loaders, ``--experimental-*``, ``--import x``, a concurrency or time
  limit) and the ``VAR=value`` assignments before it. Dropped: the file/glob arguments (the
  touched files are named instead), reporters and their destinations (the command picks TAP),
  name/skip patterns, ``--test-only``, watch mode and coverage.
- `node_test_command(files, groups, env)`: one ``node --test`` per touched file, run from the
  directory of the file's nearest package.json (as ``npm test --prefix <pkg>`` does), each
  preceded by the line ``swemint: node --test <file>`` (`MARKER`) so the parser
  (`envpool.testrun.polyglot.node_tap`) names each file's tests ``<file> > <suite> > <test>``:
  the runner's TAP itself names no file, and two files may hold tests of the same name. TAP is
  asked for with ``--test-reporter=tap`` when this Node has the option (18.15+/19.6+; older
  ones print TAP anyway; Node 23+ would otherwise print its ``spec`` reporter). The command
  exits non-zero when any file's run did.

Source: the Node.js documentation of the test runner (``node --test``, ``--test-reporter``) and
its TAP reporter's output, recorded from Node 18.20 and 20.20 (tests/data/polyglot/node_tap_*.log).
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

from envpool.testrun.polyglot.node_tap import MARKER

_NODE_TEST = re.compile(r"(?<![\w@:./-])node((?:\s+-[^\s&|;]*(?:\s+[^\s&|;-][^\s&|;]*)?)*?)\s+--test(?![\w-])")
"""``node [flags] --test`` in a script's text (the flags group may hold a flag's value)."""

_VALUED = {"--import", "--require", "-r", "--loader", "--experimental-loader", "--env-file",
           "--test-name-pattern", "--test-skip-pattern", "--test-reporter", "--test-reporter-destination",
           "--test-concurrency", "--test-timeout", "--conditions", "-C", "--input-type", "--stack-size"}
"""Node options whose value may be the next word."""
_DROP = re.compile(r"^--(?:test|test-reporter|test-reporter-destination|test-name-pattern|test-skip-pattern|"
                   r"test-only|watch|watch-path|experimental-test-coverage|test-coverage-[\w-]+|"
                   r"test-update-snapshots|test-shard)$")
_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*")


def runs_node_test(script: str | None) -> int | None:
    """The position of a ``node [flags] --test`` invocation in `script`, or None."""
    m = _NODE_TEST.search(script or "")
    return m.start() if m else None


def node_test_invocation(script: str | None) -> tuple[list[str], list[str]] | None:
    """(Node flags to keep, ``VAR=value`` assignments before ``node``) of the first
    ``node ... --test`` command of `script` (module docstring), or None when it has none.
    ``NODE_ENV=test node --import tsx --test --test-concurrency=1 test/*.test.ts`` ->
    (["--import", "tsx", "--test-concurrency=1"], ["NODE_ENV=test"])."""
    if runs_node_test(script) is None:
        return None
    for part in _SPLIT.split(script or ""):
        try:
            toks = shlex.split(part)
        except ValueError:
            toks = part.split()
        idx = next((i for i, t in enumerate(toks) if PurePosixPath(t).name == "node"), None)
        if idx is None or "--test" not in toks[idx + 1:]:
            continue
        env = [t for t in toks[:idx] if _ASSIGN.fullmatch(t)]
        flags: list[str] = []
        rest, i = toks[idx + 1:], 0
        while i < len(rest):
            t = rest[i]
            if not t.startswith("-"):
                i += 1  # a file or glob: the touched files are named instead
                continue
            name, eq, _ = t.partition("=")
            takes = name in _VALUED and not eq and i + 1 < len(rest) and not rest[i + 1].startswith("-")
            if not _DROP.match(name):
                flags += [t, rest[i + 1]] if takes else [t]
            i += 2 if takes else 1
        return flags, env
    return None


def node_test_command(files: list[tuple[str, str]], flags: dict[str, list[str]], env: list[str]) -> str:
    """Bash (run in /testbed) running each touched test file with ``node --test`` (module
    docstring). `files`: (repository-relative file, directory of its nearest package.json, ""
    = root); `flags`: the Node flags per such directory (the root's under ""); `env`:
    ``VAR=value`` assignments for every run. Exits 1 when a run failed, else 0."""
    assign = "".join(f"{k}={shlex.quote(v)} " for k, _, v in (e.partition("=") for e in env))
    lines = ["rc=0", "R=", "if node --help 2>/dev/null | grep -q -- --test-reporter; then R=--test-reporter=tap; fi"]
    for path, pkg in files:
        rel = str(PurePosixPath(path).relative_to(pkg)) if pkg else path
        opts = " ".join(shlex.quote(f) for f in flags.get(pkg, flags.get("", [])))
        cd = f"cd {shlex.quote(pkg)} && " if pkg else ""
        lines.append(f"echo {shlex.quote(MARKER + path)}")
        lines.append(f"( {cd}{assign}node {opts + ' ' if opts else ''}--test $R {shlex.quote(rel)} ) || rc=1")
    lines.append("exit $rc")
    return "; ".join(lines)
