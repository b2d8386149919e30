"""Go's data file (`go.yaml` beside this module: the GOPATH floor, repairs), validated and
parsed once."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import yaml
from pydantic import BaseModel, ConfigDict


RECIPE_PATH = Path(__file__).with_name("go.yaml")


class Repair(BaseModel):
    """Run `commands` when a failed setup step's output matches `pattern`."""

    model_config = ConfigDict(extra="forbid")
    pattern: str
    commands: list[str]
    why: str = ""


class GoRecipe(BaseModel):
    """The data in go.yaml (see the comments there)."""

    model_config = ConfigDict(extra="forbid")
    test_flags: list[str]
    gopath_floor: str
    run_touched_tests: bool = True
    repairs: list[Repair]


@lru_cache(maxsize=1)
def load_recipe(path: str = str(RECIPE_PATH)) -> GoRecipe:
    """The Go recipe (validated; a typo is a pydantic ValidationError)."""
    return GoRecipe.model_validate(yaml.safe_load(Path(path).read_text()))

