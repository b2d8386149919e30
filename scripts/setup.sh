#!/usr/bin/env bash
# Shared set-up of scripts/run.sh and scripts/test.sh (sourced from the repository root): makes
# idempotently the Python venv (.venv) with swemint and its test extras, a running Docker engine
# (scripts/ensure_docker.sh) and the base toolchain images. Fast when everything is there.
# Env: SWEMINT_PYTHON (interpreter for the venv, default python3), SWEMINT_IMAGES (toolchain
# images to bootstrap, default "3.11 3.9").
PY=${SWEMINT_PYTHON:-python3}
if [ -z "${SSL_CERT_FILE:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt   # TLS-intercepting proxies: uv, pip
  export PIP_CERT=${PIP_CERT:-$SSL_CERT_FILE}
fi
py_ok() { command -v "$PY" >/dev/null 2>&1 && "$PY" -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
if [ ! -x .venv/bin/python ]; then
  if ! py_ok && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "swemint: installing python3 and python3-venv ..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  py_ok || { echo "swemint: need Python >= 3.11 with venv (Debian: apt-get install python3 python3-venv)" >&2; exit 1; }
  "$PY" -m venv .venv
fi
stamp=.venv/.swemint-install.stamp
want="$(sha256sum pyproject.toml | cut -d' ' -f1) test"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "swemint: setup: installing swemint and its dependencies into .venv ..." >&2
  [ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q --disable-pip-version-check uv
  .venv/bin/uv pip install -q --python .venv/bin/python -e '.[test]'
  echo "$want" > "$stamp"
fi
echo "swemint: setup: Python venv ready; Docker engine ..." >&2
bash scripts/ensure_docker.sh
# the build network and its host isolation (iptables; envpool/netguard.py); the minter also
# ensures it before the first build container, and refuses to build without it
.venv/bin/python -m envpool.netguard --install >/dev/null
echo "swemint: setup: base toolchain images (${SWEMINT_IMAGES:-3.11 3.9}; the first time debootstrap takes minutes) ..." >&2
# shellcheck disable=SC2086
.venv/bin/python -m envpool.images ${SWEMINT_IMAGES:-3.11 3.9} >/dev/null
