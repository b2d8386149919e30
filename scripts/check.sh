#!/usr/bin/env bash
# Static checks of swemint (what the developers' guide asks beside the tests): `bash scripts/check.sh`.
#   ruff check   the lint rules of pyproject.toml's [tool.ruff] over the packages, scripts and tests
#   mypy         the typed records and the seams (the files below, in full; what they import is
#                read for its types only), so a record or a seam that drifts from its callers fails
# Exit status: non-zero when either finds anything. scripts/test.sh runs it before the whole
# suite (SWEMINT_CHECK=0 skips it, =1 runs it before a partial run too).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=.venv/bin/python
TYPED=(
  # records
  agents/models.py envpool/records.py envpool/testrun/outcome.py envpool/errors.py agents/llm/types.py
  agents/mint_config.py pipeline/pipeline_config.py pipeline/sources/source_rows.py
  # seams and their test doubles
  agents/seams.py envpool/sandbox.py envpool/fake.py envpool/docker_sandbox.py envpool/images.py
  envpool/pool.py envpool/imagestore.py envpool/fake_images.py agents/ecosystems/base.py agents/ecosystems/move_types.py
  agents/ecosystems/runs.py agents/llm/fake_llm.py
  # helpers every layer calls with repository data
  envpool/patches.py envpool/quoting.py
  # the public package
  swemint
)
echo "swemint: check: ruff ..." >&2
"$PY" -m ruff check --quiet agents envpool pipeline swemint scripts tests
echo "swemint: check: mypy on the records and seams ..." >&2
"$PY" -m mypy --ignore-missing-imports --follow-imports=silent --no-error-summary "${TYPED[@]}"
echo "swemint: check: clean" >&2
