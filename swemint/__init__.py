"""swemint's public Python API: the task environment and rewards for agents and RL trainers.

    import swemint

    rows = swemint.load_rows("work")                 # a work directory, a dataset folder or a parquet file
    with swemint.TaskEnv(rows["acme__calcy-7"]) as env:
        print(env.problem_statement)
        env.exec("python -m pytest -x -q tests")     # act: commands, read/write files
        env.write("calcy/parser.py", new_text)
        print(env.diff())                            # what the episode changed
        print(env.reward())                          # 1.0 / 0.0, graded as `swemint eval` grades

    with swemint.RewardService(workers=2) as rs:     # many rollouts at once, on Ray
        rewards = rs.rewards([(row, patch) for row, patch in batch])

`swemint.grade(row, patch)` grades one patch without an episode. The command line is `swemint`
(or `python -m swemint`); this package sits on top of the layers (envpool <- agents <- pipeline
<- swemint) and no lower layer imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from swemint.taskenv import TaskEnv

if TYPE_CHECKING:
    from envpool.evaluation import EvalReport
    from swemint.rewards import RewardService

__all__ = ["TaskEnv", "RewardService", "EvalReport", "grade", "load_rows", "__version__"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("swemint")
    except PackageNotFoundError:
        return "unknown"


__version__ = _version()


def load_rows(source: str | Path, split: str = "verified") -> dict[str, dict[str, Any]]:
    """Verified rows by instance id from `source`: a work directory (rows built from its store,
    as `swemint export` builds them), a dataset folder (`split`: `verified` or `all_outcomes`)
    or a parquet file. Raises FileNotFoundError when `source` does not exist, ValueError when it
    is not a dataset."""
    from pipeline.cli_common import is_workdir
    from pipeline.evaluate import dataset_rows

    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"no such work directory, dataset folder or parquet file: {path}")
    if path.is_dir() and (path / "instances").is_dir() and is_workdir(path):
        return dataset_rows(path)
    return dataset_rows(None, path, split=split)


def grade(row: dict[str, Any], patch: str | None, **kwargs: Any) -> EvalReport:
    """Grade `patch` on one verified row as `swemint eval` does (`pipeline.evaluate.grade`):
    an `EvalReport` with `resolved`, `reward` (1.0 / 0.0), `f2p_rate`, `p2p_rate`, `error`."""
    from pipeline.evaluate import grade as _grade

    return _grade(row, patch, **kwargs)


def __getattr__(name: str):
    if name == "RewardService":  # imports Ray: only when asked for
        from swemint.rewards import RewardService

        return RewardService
    if name == "EvalReport":
        from envpool.evaluation import EvalReport

        return EvalReport
    raise AttributeError(f"module 'swemint' has no attribute {name!r}")
