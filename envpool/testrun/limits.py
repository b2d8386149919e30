"""The per-test time limit of runners other than pytest, as shell text their commands carry.

Every run of a test command gets `PER_TEST_ENV` (whole seconds, `timeouts.per_test`) in its
environment (`agents.verification`, each run of a side; a row's published `test_command` exports it), and
each ecosystem writes its runner's own limit from it, so a hanging test ends as that test's
failure -- a flake candidate -- instead of a run killed at `timeouts.test_run` with nothing
graded: CTest ``--timeout`` (per test), Go ``-timeout`` (per test binary: Go has no per-test
limit; the binary panics naming the running test, which fails), Surefire's fork timeout and
JUnit Jupiter's default per-test timeout, cargo's test binaries under swemint's watchdog
(`agents.ecosystems.cargo_limits`), the JS runners' own timeout options at a quarter of the limit
(`agents.ecosystems.node.runner_timeouts`). Commands read it with a default (`per_test`), so a
command run without it (a setup step) still has a limit. swemint's pytest plugin reads the same
variable (`envpool.testrun.pytest_runner.pytest_env`).
"""

from __future__ import annotations

PER_TEST_ENV = "SWEMINT_TEST_TIMEOUT"
DEFAULT_PER_TEST = 120
"""Seconds, when the variable is unset (`agents.mint_config.TimeoutsConfig.per_test`'s default)."""


def per_test(multiple: int = 1) -> str:
    """Shell text expanding to the per-test limit in whole seconds (times `multiple`):
    ``${SWEMINT_TEST_TIMEOUT:-120}`` or ``$((${SWEMINT_TEST_TIMEOUT:-120}*4))``."""
    var = f"${{{PER_TEST_ENV}:-{DEFAULT_PER_TEST}}}"
    return var if multiple == 1 else f"$(({var}*{int(multiple)}))"


def limit_env(seconds: float | None) -> dict[str, str]:
    """{PER_TEST_ENV: whole seconds} for a run's environment ({} for None)."""
    if seconds is None:
        return {}
    return {PER_TEST_ENV: str(max(1, int(-(-float(seconds) // 1))))}
