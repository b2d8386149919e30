"""The AVA test command: ``ava --tap`` on the touched files, and its console rerun when AVA's
TAP reporter dies.

AVA 6's TAP reporter throws in ``writeTimeout`` when a test hangs until AVA's timeout
(sindresorhus/ky-874 before the fix): the stream has no closing plan and the run could not be
graded. The command keeps the TAP output in `TAP_LOG`, prints it, and when it shows that crash
(no ``1..N`` line and a ``reporters/tap.js`` stack frame, `envpool.testrun.polyglot.ava_console.
tap_crashed`) prints `RERUN_MARKER` and runs the same files again with AVA's default reporter
(``--verbose``: the per-test lines; the default from AVA 4 on), whose timeout report lists the
pending tests. Parser ``ava_tap`` reads either form; the exit status is the last run's.
"""

from __future__ import annotations

import shlex

from envpool.testrun.polyglot.ava_console import CRASH_FRAME, RERUN_MARKER

TAP_LOG = "/tmp/swemint-node/ava-tap.log"
"""Where the command keeps the TAP run's output (its folder exists: the node test prefix makes it)."""


def ava_command(ava: str, args: str, tap_log: str = TAP_LOG) -> str:
    """Shell (bash) running `ava` (``ava`` or ``yarn ava``, with its environment assignments)
    with `args` (the options and files, already shell-quoted) under ``--tap``, its output kept in
    `tap_log` (a file in an existing folder) and printed, then with the default reporter when
    the TAP reporter crashed; exit status = the last AVA run's."""
    log = shlex.quote(tap_log)
    frame = shlex.quote(CRASH_FRAME.replace(".", r"\."))
    return (f"{{ {ava} --tap {args}; }} > {log} 2>&1; rc=$?; cat {log}; "
            f"if ! grep -Eq '^1\\.\\.[0-9]+[[:space:]]*$' {log} && grep -q {frame} {log}; then "
            f"echo {shlex.quote(RERUN_MARKER)}; {ava} --verbose {args} 2>&1; else (exit $rc); fi")
