"""The per-test time limit of ``cargo test`` (`envpool.testrun.limits`): a watchdog as cargo's
runner for test binaries.

libtest has no stable per-test limit (``--ensure-time`` and ``RUST_TEST_TIME_*`` are unstable,
and report rather than stop), and cargo-nextest -- whose ``slow-timeout`` ends a test -- cannot
be built by every Debian Rust toolchain here (its minimum Rust is far above 1.48/1.63), runs no
doc tests and prints another format. So each test binary runs under `WATCHDOG`
(``recipes/cargo_watchdog.py``, python3 being in every environment image) through cargo's own
``CARGO_TARGET_<TRIPLE>_RUNNER``: when no test of the binary starts or finishes for the per-test
limit, the binary is ended, the tests known to be running get ``FAILED``, the others run again
alone, and a ``test result:`` line closes the binary -- the ``cargo_test`` parser grades the
binary in libtest's own ids, and cargo (``--no-fail-fast``) goes on with the next one. Doc tests
do not go through cargo's runner and keep no limit but the run's.

A project whose cargo configuration sets a runner of its own (``[target.*] runner`` in
``.cargo/config(.toml)``: an emulator, a wrapper) keeps it, without the limit.
"""

from __future__ import annotations

import base64
import posixpath
import re
from pathlib import Path

from envpool.testrun.limits import per_test

WATCHDOG = "/usr/local/libexec/swemint/cargo_watchdog.py"
"""Where the setup writes the watchdog in the container (cfamily's helpers' folder)."""
SOURCE = Path(__file__).parents[1] / "recipes" / "cargo_watchdog.py"
_RUNNER = re.compile(r"(?m)^\s*runner\s*=")


def install_command() -> str:
    """The setup command writing the watchdog verbatim (base64) to `WATCHDOG`."""
    data = base64.b64encode(SOURCE.read_bytes()).decode()
    return f"mkdir -p {posixpath.dirname(WATCHDOG)} && echo {data} | base64 -d > {WATCHDOG}"


def own_runner(tree, root: str) -> str | None:
    """The cargo configuration file (repository path) that sets a runner, looked for in the
    cargo root's and the repository's ``.cargo/config`` / ``config.toml``, or None."""
    for d in dict.fromkeys([root, ""]):
        for name in ("config.toml", "config"):
            path = posixpath.join(d, ".cargo", name)
            if _RUNNER.search(tree.read(path) or ""):
                return path
    return None


def runner_prefix() -> str:
    """Shell text before the ``cargo test`` runs: exports cargo's runner variable for the host
    triple (``rustc -vV``) as the watchdog with the per-test limit, when python3 and the
    watchdog are there (an image made before it keeps running its tests without it)."""
    triple = "$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z.-' 'A-Z__')"
    return (f"if [ -f {WATCHDOG} ] && command -v python3 >/dev/null; then "
            f'export "CARGO_TARGET_{triple}_RUNNER=python3 {WATCHDOG} {per_test()}"; fi; ')
