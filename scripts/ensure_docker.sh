#!/usr/bin/env bash
# Make sure a Docker engine answers. As root on Debian: install docker.io and start dockerd
# in the background when none runs. Otherwise: say what to install and exit 1.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "swemint: no Docker engine answers. Install Docker (Debian: 'apt-get install -y docker.io') and start dockerd, or run this script as root." >&2
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "swemint: installing Debian's docker.io ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq docker.io >/dev/null
fi
command -v debootstrap >/dev/null 2>&1 || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
if ! docker info >/dev/null 2>&1; then
  log=${SWEMINT_DOCKERD_LOG:-/var/log/swemint-dockerd.log}
  echo "swemint: starting dockerd (log: $log) ..." >&2
  nohup dockerd >"$log" 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
docker info >/dev/null 2>&1 || { echo "swemint: dockerd did not come up; see its log" >&2; exit 1; }
