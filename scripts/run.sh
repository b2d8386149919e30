#!/usr/bin/env bash
# Run the swemint demo end to end: `bash scripts/run.sh [swemint demo options...]`.
# On a fresh Debian machine as root it sets everything up first, idempotently: the Python venv
# (.venv), swemint, a Docker engine, and the base toolchain images. The demo mints the small
# repositories of data/demo into verified instances under $SWEMINT_WORKDIR (default work/demo).
# Env: SWEMINT_PYTHON (interpreter for the venv, default python3), SWEMINT_IMAGES (toolchain
# images to bootstrap, default "3.11 3.9").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

source scripts/setup.sh

exec .venv/bin/swemint demo --workdir "${SWEMINT_WORKDIR:-$PWD/work/demo}" "$@"
