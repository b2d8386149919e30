#!/usr/bin/env bash
# Run swemint's test suite: `bash scripts/test.sh [pytest args...]`.
# On a fresh Debian machine as root it sets everything up first, idempotently: the Python venv
# (.venv), swemint with its test extras, a Docker engine, and the base toolchain images.
# Env: SWEMINT_TEST_TIMEOUT (seconds per test, default 600), SWEMINT_PYTHON (interpreter for
# the venv, default python3), SWEMINT_IMAGES (toolchain images to bootstrap, default "3.11 3.9"),
# SWEMINT_CHECK (scripts/check.sh, ruff and mypy, runs first unless test paths are given -- options
# such as -m or -k alone still run it; 0 skips it, 1 runs it before a run of paths too),
# SWEMINT_TEST_SPLIT (0: the whole suite in one plain pytest; by default a run without
# arguments runs the docker tests SWEMINT_TEST_WORKERS at a time, default 2, with pytest-xdist,
# and the tests without Docker in a second pytest beside them).
# Every run lists its 30 slowest tests (pytest --durations; a later --durations=N on the command
# line wins).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '2,/^set -euo/p' scripts/test.sh | sed -e '$d' -e 's/^# \{0,1\}//'
  echo "(pytest's own options: .venv/bin/python -m pytest --help)"
  exit 0
fi

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
if [ $# -eq 0 ] && [ "${SWEMINT_TEST_SPLIT:-1}" != 0 ]; then
  # the whole suite: the docker tests run two at a time (pytest-xdist; a test file stays on one
  # worker, so its module fixtures are made once; the slowest files start first, tests/conftest.py),
  # and the tests without Docker in a second pytest beside them. Both halves mostly wait (network,
  # subprocesses, Ray, test limits, sleeps of kill tests), so on 2 cores the wall time is about the
  # docker tests' longest worker. The second half's output follows theirs.
  # SWEMINT_TEST_SPLIT=0: one plain pytest for everything.
  workers=()
  if [ "${SWEMINT_TEST_WORKERS:-2}" -gt 1 ] && .venv/bin/python -c 'import xdist' 2>/dev/null; then
    workers=(-n "${SWEMINT_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder)
  fi
  other=$(mktemp -t swemint-tests-XXXXXX.log)
  .venv/bin/python -m pytest "${args[@]}" -p no:cacheprovider -m "not docker" "${paths[@]}" > "$other" 2>&1 &
  other_pid=$!
  trap 'kill "$other_pid" 2>/dev/null || true' EXIT
  .venv/bin/python -m pytest "${args[@]}" ${workers[@]+"${workers[@]}"} -m docker "${paths[@]}"
  rc_docker=$?
  wait "$other_pid"
  rc_other=$?
  trap - EXIT
  echo "swemint: the tests without Docker (a second pytest, run beside the docker tests above):"
  cat "$other"
  rm -f "$other"
  rc=0
  for r in "$rc_docker" "$rc_other"; do
    if [ "$r" != 0 ] && [ "$r" != 5 ]; then rc=$r; break; fi
  done
  if [ "$rc_docker" = 5 ] && [ "$rc_other" = 5 ]; then rc=5; fi
else
  .venv/bin/python -m pytest "${args[@]}" "${paths[@]}" "$@"
  rc=$?
fi
set -e
if [ "$rc" = 5 ]; then
  echo "swemint: pytest collected no tests (exit 5); nothing failed" >&2
  exit 0
fi
exit "$rc"
