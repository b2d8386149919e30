"""What the repository analysis recognises in a tree, as data (`recipes/layout.yaml`): manifests
and the build system and language each means, test runners, CI files, toolchain hints. Read by
`agents.analysis` and by the ecosystems that read a project's CI (`agents.ecosystems.drivers`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

LAYOUT_PATH = Path(__file__).resolve().parent / "recipes" / "layout.yaml"


@lru_cache(maxsize=1)
def layout() -> dict:
    """The layout data: `manifests`, `runners`, `ci` (glob patterns), `hints`."""
    return yaml.safe_load(LAYOUT_PATH.read_text(encoding="utf-8"))
