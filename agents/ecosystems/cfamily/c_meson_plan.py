"""The setup and test commands of a Meson plan (class S35; the analysis is `c_meson`): meson
and ninja installed, ``meson setup`` into `c_setup.BUILD_DIR`, the in-container helper
(``recipes/meson_tests.py``) building and running the tests owning the touched files."""

from __future__ import annotations

from agents.ecosystems.cfamily.c_builds import CBuild
from agents.ecosystems.cfamily.c_meson import MESON_FILES, MESON_HELPER, meson_install
from agents.ecosystems.cfamily.c_setup import BUILD_DIR, JOBS, install_helpers
from agents.ecosystems.debian import apt_install
from envpool.quoting import shell_word
from envpool.testrun.limits import per_test


def meson_setup(b: CBuild, suite: str, tests: list[str]) -> tuple[list[str], list[str]]:
    """(setup commands, notes) of a Meson plan (`CBuild` `b` with system meson, on Debian
    `suite`; `tests`: the touched files; the plan installs `b.packages` before): meson and ninja
    installed (`meson_install`), the helper installed, ``meson setup`` of the project folder into
    `c_setup.BUILD_DIR` (emptied first: a configure that failed leaves a folder meson refuses)
    with ``-Dwerror=false`` (a newer compiler's warnings are no test failures) and
    `b.meson_flags`, then the helper's ``--build-only`` of what the test run needs."""
    packages, extra, note = meson_install(b.meson_min, suite)
    source = "/testbed" + (f"/{b.folder}" if b.folder else "")
    flags = " ".join(shell_word(f) for f in dict.fromkeys(["-Dwerror=false", *b.meson_flags]))
    setup = [apt_install(packages), *extra,
             install_helpers(MESON_FILES),
             f"rm -rf {BUILD_DIR} && meson setup {BUILD_DIR} {shell_word(source)} {flags}",
             f"python3 {MESON_HELPER} {BUILD_DIR} --build-only --jobs {JOBS} -- "
             + " ".join(shell_word(t) for t in tests) + " || echo 'swemint: some targets do not build at base_commit'"]
    return setup, [note]


def meson_test_command(tests: list[str]) -> str:
    """The helper's run of the tests owning `tests` (the touched files) with the per-test limit
    (`envpool.testrun.limits`; the helper turns it into ``--timeout-multiplier``)."""
    return (f"python3 {MESON_HELPER} {BUILD_DIR} --jobs {JOBS} --timeout {per_test()} -- "
            + " ".join(shell_word(t) for t in tests))
