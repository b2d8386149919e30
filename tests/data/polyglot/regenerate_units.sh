#!/usr/bin/env bash
# Regenerate unit_report.log (the `unit_report_log` parser's golden; also run by regenerate.sh):
# swemint's units runner (agents/ecosystems/cfamily/units.py `units_command`) on a tiny suite:
#   test    make test -> cram over tests/*.t without -v (the runner's CRAM=-v asks for the
#           per-file report): a passing, a failing (diff printed), a skipped (exit 80) file
#   prove   make prove -> prove t/*.t: passing, failing (Dubious), skipped, no-plan files
#   provev  make provev -> prove -v t/*.t (each file's status after its TAP lines)
#   plain   make plain -> a target that prints no per-file report and fails: graded by exit status
# Needs: cram 0.7 on PATH (PyPI: pip install cram), prove (Perl's TAP::Harness; 3.44 used), make,
# the repository's .venv. Timings change on every run; the tests assert ids and statuses only.
set -euo pipefail
OUT="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$OUT/../../.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/tests" "$W/t" && cd "$W"
printf '  $ echo hi\n  hi\n' > tests/a.t
printf '  $ echo hi\n  ho\n' > tests/b.t
printf '  $ exit 80\n' > tests/s.t
printf 'print "1..2\\nok 1 - one\\nok 2 - two\\n";\n' > t/a.t
printf 'print "1..2\\nok 1 - one\\nnot ok 2 - two\\n"; exit 1;\n' > t/b.t
printf 'print "1..0 # SKIP no db\\n";\n' > t/c.t
printf 'exit 2;\n' > t/d.t
printf 'test:\n\tcram tests/*.t\nprove:\n\tprove t/*.t\nprovev:\n\tprove -v t/*.t\nplain:\n\t@echo building; false\n' > Makefile
PYTHONPATH="$ROOT" "$ROOT/.venv/bin/python" - > "$OUT/unit_report.log" <<'PY'
import subprocess
from agents.ecosystems.cfamily.units import Unit, units_command
units = [Unit(t, ["make", t], "") for t in ("test", "prove", "provev", "plain")]
print(subprocess.run(["bash", "-c", units_command(units, 60)], capture_output=True, text=True).stdout, end="")
PY
echo "regenerated $OUT/unit_report.log"
