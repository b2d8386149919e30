#!/usr/bin/env bash
# The subordinate ids that `dockerd --userns-remap=default` maps container root to: user and
# group `dockremap` with 65536 ids each in /etc/subuid and /etc/subgid, after the highest range
# already given (from 100000). Idempotent; run as root. Used by scripts/ensure_docker.sh
# (SWEMINT_USERNS=1) and the user-namespace test. Prints "UID GID" (the first ids).
set -euo pipefail
getent passwd dockremap >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin dockremap
getent group dockremap >/dev/null || groupadd --system dockremap
for f in /etc/subuid /etc/subgid; do
  touch "$f"
  if ! grep -q '^dockremap:' "$f"; then
    start=$(awk -F: 'BEGIN { m = 100000 } NF == 3 && $2 + $3 > m { m = $2 + $3 } END { print m }' "$f")
    echo "dockremap:$start:65536" >> "$f"
  fi
done
echo "$(awk -F: '$1 == "dockremap" { print $2; exit }' /etc/subuid) $(awk -F: '$1 == "dockremap" { print $2; exit }' /etc/subgid)"
