"""C/C++'s data file (`cfamily.yaml` beside this module: find_package / pkg-config names,
FetchContent sources, ...) and the folder of the helper scripts installed into the
containers (`recipes/cmake_tests.py` and its runs modules)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import yaml


RECIPES = Path(__file__).parent.parent / "recipes"


@lru_cache(maxsize=1)
def recipes() -> dict:
    """`cfamily.yaml`, parsed once."""
    return yaml.safe_load(Path(__file__).with_name("cfamily.yaml").read_text())

