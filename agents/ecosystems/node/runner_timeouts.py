"""The per-test time limit of the JavaScript runners (`envpool.testrun.limits`): Jest's and
Vitest's ``--testTimeout``, mocha's ``--timeout`` and AVA's ``--timeout``, read from the run's
per-test limit, unless the project sets its own.

Each runner already stops an asynchronous test at a default of its own (Jest and Vitest 5 s,
mocha 2 s, AVA 10 s without any test finishing); defaults written for a developer's machine,
which fail timing-heavy tests on a loaded build host for no reason of theirs. A JS runner runs
the tests of one file one after another, so every test that hangs before the fix (a promise
the missing code never settles) costs its limit once per run: the JS limit is a quarter of the
per-test limit (`JS_MS_PER_SECOND`: 30 s at the default 120 s -- the mocha default swemint
used before), in milliseconds, so a file with a few such tests stays far below the run limit.
A project that sets a timeout (its test script's option, its runner configuration) keeps it:
it knows its tests. A synchronous endless loop blocks the runner's own timer and is still
stopped by the run limit only.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from envpool.testrun.limits import per_test

JS_MS_PER_SECOND = 250
"""Milliseconds of a JS test's limit per second of the per-test limit (a quarter)."""
FLAGS = {"jest": "--testTimeout={ms}", "vitest": "--testTimeout={ms}", "mocha": "--timeout {ms}",
         "ava": "--timeout={ms}"}
"""Each runner's option for its default per-test timeout (milliseconds)."""
_OPTIONS = {"jest": ("--testTimeout",), "vitest": ("--testTimeout",), "mocha": ("--timeout", "-t", "--no-timeouts"),
            "ava": ("--timeout", "-T")}
_CONFIGS = {"jest": ("jest.config.",), "vitest": ("vitest.config.", "vite.config.", "vitest.workspace.",
                                                  "vitest.projects."),
            "mocha": (".mocharc",), "ava": ("ava.config.",)}
_KEYS = {"jest": "testTimeout", "vitest": "testTimeout", "mocha": "timeout", "ava": "timeout"}
JEST_FLAG_SINCE = (24, 9)
"""Jest's first release with ``--testTimeout`` (older ones stop at an unknown option)."""
CRA_JEST = (3, 3)
"""The first react-scripts whose Jest (24.9) has ``--testTimeout``."""


def limit_option(runner: str) -> str:
    """Shell text of `runner`'s timeout option at the JS limit, in milliseconds:
    ``--testTimeout=$((${SWEMINT_TEST_TIMEOUT:-120}*250))``. KeyError for another runner."""
    return FLAGS[runner].format(ms=per_test(JS_MS_PER_SECOND))


def _option_set(runner: str, opts: list[str]) -> str | None:
    for o in opts:
        if o.split("=", 1)[0] in _OPTIONS[runner]:
            return o
    return None


def _config_paths(tree, runner: str, dirs: list[str], opts: list[str]) -> list[str]:
    out = []
    for d in dict.fromkeys(dirs):
        prefix = f"{d}/" if d else ""
        out += [p for p in sorted(tree.files) if p.startswith(prefix) and "/" not in p[len(prefix):]
                and p[len(prefix):].startswith(_CONFIGS[runner])]
    for i, o in enumerate(opts):  # --config FILE / -c FILE / --config=FILE
        name, eq, value = o.partition("=")
        if name in ("--config", "-c"):
            value = value if eq else (opts[i + 1] if i + 1 < len(opts) else "")
            if value and not value.lstrip().startswith("{"):
                base = dirs[0] if dirs else ""
                out.append(str(PurePosixPath(base, value)) if base else value)
    return out


def own_timeout(tree, pkgs: list[dict], runner: str, runner_dir: str, opts: list[str]) -> str | None:
    """Where the project sets `runner`'s per-test timeout -- an option of its test script
    (``--timeout 5000``), its runner configuration (``.mocharc.yml``, ``jest.config.js``, the
    ``jest``/``mocha``/``ava`` key of `pkgs`' package.json files, a ``--config`` file) naming
    the runner's key (``testTimeout``, ``timeout``) -- or None."""
    opt = _option_set(runner, opts)
    if opt:
        return f"its script's {opt}"
    key = _KEYS[runner]
    for pkg in pkgs:
        section = pkg.get(runner)
        if isinstance(section, dict) and key in json.dumps(section):
            return f"package.json {runner}.{key}"
    for path in _config_paths(tree, runner, [runner_dir, ""] if runner == "vitest" else [runner_dir], opts):
        if key in (tree.read(path) or ""):
            return f"{path} sets {key}"
    return None


def _version(spec: str | None) -> tuple[int, ...]:
    m = re.search(r"(\d+)(?:\.(\d+))?", re.sub(r"^(?:npm:[^@]+@)?[\^~>=<v\s]*", "", spec or ""))
    return (int(m.group(1)), int(m.group(2) or 0)) if m else ()


def takes_option(runner: str, deps: dict[str, str], cra: str | None) -> bool:
    """Whether the runner the project declares accepts its timeout option: Jest from 24.9 (its
    declared range's lowest version; through react-scripts from 3.3), every version of the others.
    Unknown versions (no declared range) are not given the option."""
    if runner != "jest":
        return True
    if cra:  # react-scripts' Jest, also under craco and react-app-rewired
        v = _version(deps.get("react-scripts"))
        return bool(v) and v >= CRA_JEST
    v = _version(deps.get("jest"))
    return bool(v) and v >= JEST_FLAG_SINCE
