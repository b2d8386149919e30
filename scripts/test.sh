#!/usr/bin/env bash
# Run swemint's test suite: `bash scripts/test.sh [pytest args...]`.
# On a fresh Debian machine as root it sets everything up first, idempotently: the Python venv
# (.venv), swemint with its test extras, a Docker engine, and the base toolchain images.
# Env: SWEMINT_TEST_TIMEOUT (seconds per test, default 600), SWEMINT_PYTHON (interpreter for
# the venv, default python3), SWEMINT_IMAGES (toolchain images to bootstrap, default "3.11 3.9"),
# SWEMINT_CHECK (scripts/check.sh, ruff and mypy, runs before the whole suite; 0 skips it, 1 runs
# it before a partial run too). Every run lists its 30 slowest tests (pytest --durations; a later
# --durations=N on the command line wins).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

source scripts/setup.sh

args=(-q --durations=30)
if .venv/bin/python -c 'import pytest_timeout' 2>/dev/null; then
  args+=("--timeout=${SWEMINT_TEST_TIMEOUT:-600}")
fi
paths=(tests)  # default: the whole suite; paths given on the command line replace it
for a in "$@"; do
  case $a in -*) ;; *) if [ -e "${a%%::*}" ]; then paths=(); fi ;; esac
done
if [ "${SWEMINT_CHECK:-}" = 1 ] || { [ "${SWEMINT_CHECK:-}" != 0 ] && [ "${paths[*]}" = tests ]; }; then
  bash scripts/check.sh
fi
set +e
.venv/bin/python -m pytest "${args[@]}" "${paths[@]}" "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "swemint: pytest collected no tests (exit 5); nothing failed" >&2
  exit 0
fi
exit "$rc"
