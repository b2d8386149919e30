#!/usr/bin/env bash
# Make sure a Docker engine answers. As root on Debian: install docker.io and start dockerd
# in the background when none runs. Otherwise: say what to install and exit 1.
# Env SWEMINT_USERNS=1: the dockerd this script starts remaps user namespaces
# (--userns-remap=default: root in a container is a subordinate uid of user `dockremap` on the
# host, created by scripts/dockremap_ids.sh with 65536 ids when missing). It is a daemon-wide setting with its own image
# store (<data-root>/<uid>.<gid>): base images are bootstrapped again. An engine already running
# is left as it is (a note says how to switch it on).
set -euo pipefail
userns_on() { docker info --format '{{json .SecurityOptions}}' 2>/dev/null | grep -q 'name=userns'; }
if docker info >/dev/null 2>&1; then
  if [ "${SWEMINT_USERNS:-0}" = "1" ] && ! userns_on; then
    echo "swemint: SWEMINT_USERNS=1 but the running engine does not remap user namespaces; it is left as it is." \
      "Set \"userns-remap\": \"default\" in /etc/docker/daemon.json and restart dockerd to switch it on." >&2
  fi
  exit 0
fi
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
  args=()
  if [ "${SWEMINT_USERNS:-0}" = "1" ]; then
    bash "$(dirname "$0")/dockremap_ids.sh" >/dev/null
    # a daemon.json that sets it already must not get the flag too (dockerd refuses both)
    grep -qs '"userns-remap"' /etc/docker/daemon.json || args+=(--userns-remap=default)
  fi
  echo "swemint: starting dockerd${args[*]:+ ${args[*]}} (log: $log) ..." >&2
  nohup dockerd "${args[@]}" >"$log" 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
docker info >/dev/null 2>&1 || { echo "swemint: dockerd did not come up; see its log" >&2; exit 1; }
if [ "${SWEMINT_USERNS:-0}" = "1" ] && ! userns_on; then
  echo "swemint: dockerd is up but does not remap user namespaces (SWEMINT_USERNS=1); see $log" >&2; exit 1
fi
