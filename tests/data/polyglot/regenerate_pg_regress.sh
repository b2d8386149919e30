#!/usr/bin/env bash
# Regenerate pg_regress_units.log (the `unit_report_log` parser's pg_regress golden): swemint's
# units runner (agents/ecosystems/cfamily/units.py `units_command`) over make targets that run
# PostgreSQL's pg_regress on a tiny suite (add passes, sub differs from its expected output, mul
# passes), serially and with a parallel schedule (`test: add` then `test: sub mul`), with
# pg_regress 15 (Debian bookworm: `test add ... ok  12 ms`) and 17 (trixie: TAP, `ok 1 - add
# 12 ms`). Each in a container of swemint's Debian image of that suite (`--temp-instance`, as the
# postgres user: initdb refuses root), with network for apt. Needs Docker, the base images
# swemint/debian:bookworm-* and swemint/debian:trixie-*, the repository's .venv. Timings, ports
# and pids change on every run; the tests assert ids and statuses only.
set -euo pipefail
OUT="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$OUT/../../.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
PYTHONPATH="$ROOT" W="$W" "$ROOT/.venv/bin/python" - <<'PY'
import os
from agents.ecosystems.cfamily.units import Unit, units_command
for v in ("15", "17"):
    units = [Unit(f"pg{v}-{t}", ["make", t], "") for t in ("serial", "parallel")]
    with open(os.path.join(os.environ["W"], f"units{v}.sh"), "w") as f:
        f.write(units_command(units, 300) + "\n")
PY
cat > "$W/run.sh" <<'SH'
set -e
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends make "postgresql-$V" "postgresql-server-dev-$V" >/dev/null 2>&1
mkdir -p /tmp/s/sql /tmp/s/expected && cd /tmp/s
echo "SELECT 1 + 1 AS two;" > sql/add.sql; printf 'SELECT 1 + 1 AS two;\n two \n-----\n   2\n(1 row)\n\n' > expected/add.out
echo "SELECT 3 - 1 AS two;" > sql/sub.sql; printf 'SELECT 3 - 1 AS two;\n two \n-----\n   3\n(1 row)\n\n' > expected/sub.out
echo "SELECT 2 * 2 AS four;" > sql/mul.sql; printf 'SELECT 2 * 2 AS four;\n four \n------\n    4\n(1 row)\n\n' > expected/mul.out
printf 'test: add\ntest: sub mul\n' > schedule
PGR="/usr/lib/postgresql/$V/lib/pgxs/src/test/regress/pg_regress --bindir=/usr/lib/postgresql/$V/bin --inputdir=."
printf 'serial:\n\t%s --temp-instance=tmp1 add sub mul\nparallel:\n\t%s --temp-instance=tmp2 --schedule=schedule\n' "$PGR" "$PGR" > Makefile
chown -R postgres /tmp/s
runuser -u postgres -- bash "/w/units$V.sh"
SH
: > "$OUT/pg_regress_units.log"
for pair in bookworm:15 trixie:17; do
  suite=${pair%%:*} V=${pair##*:}
  image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep "^swemint/debian:$suite-" | head -1)
  docker run --rm --network swemint-build -e V="$V" -v "$W:/w:ro" "$image" bash /w/run.sh >> "$OUT/pg_regress_units.log"
done
echo "regenerated $OUT/pg_regress_units.log"
