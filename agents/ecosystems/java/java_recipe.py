"""Java's data file (`java.yaml` beside this module: JDK floors, CI properties to deny, Gradle
and Maven tables), parsed once."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import yaml


@lru_cache(maxsize=1)
def recipe() -> dict:
    """The data of ``java.yaml`` (tables documented there)."""
    return yaml.safe_load(Path(__file__).with_name("java.yaml").read_text())

