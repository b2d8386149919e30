"""Rust's data file (`rust.yaml` beside this module: apt repairs, crates known to need a
newer compiler, ...), validated and parsed once."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import yaml
from pydantic import BaseModel, ConfigDict


RECIPE_PATH = Path(__file__).with_name("rust.yaml")


class AptRepair(BaseModel):
    """Install Debian `packages` when a failed step's output matches `pattern`."""

    model_config = ConfigDict(extra="forbid")
    pattern: str
    packages: list[str]


class RustRecipe(BaseModel):
    """The data in rust.yaml (see the comments there)."""

    model_config = ConfigDict(extra="forbid")
    edition_floor: dict[str, str]
    lockfile_floor: dict[int, str]
    sparse_index_floor: str
    msrv_fallback_floor: str
    apt_repairs: list[AptRepair]


@lru_cache(maxsize=1)
def load_recipe(path: str = str(RECIPE_PATH)) -> RustRecipe:
    """The Rust recipe (validated; a typo is a pydantic ValidationError)."""
    return RustRecipe.model_validate(yaml.safe_load(Path(path).read_text()))

