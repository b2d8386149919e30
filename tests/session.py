"""One tag per test session, so suites run at the same time on one Docker engine (two worktrees,
a helper and CI) never share a run id or an image tag.

Docker-backed tests put `SESSION` into their run ids (`swemint.run` labels: a minter's resume sweep
removes its own run id's containers) and use `ENV_REPOSITORY` for the images they commit;
`tests/conftest.py` removes that repository's images when the session ends.
"""

from __future__ import annotations

import os
import uuid

SESSION = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
ENV_REPOSITORY = f"swemint-test/env-{SESSION}"
