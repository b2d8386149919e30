"""`python -m pipeline.jobs.mint --config configs/cluster.yaml --workdir DIR` for `ray job submit`.

Inside a Ray job `RAY_ADDRESS` is set, so the driver joins the cluster instead of starting Ray.
When the config leaves `instances` unset or sets it to `demo`, the job first writes the demo
input (`pipeline.demo.make_demo`) under `WORKDIR/demo` and mints that. Example:

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python -m pipeline.jobs.mint -c configs/cluster.yaml --workdir /shared/work \\
        --instances /shared/tasks.jsonl --mirrors /shared/mirrors --set workers=8

`--workdir` should be absolute: a job runs in a copy of the working directory, so a relative
path lands inside Ray's session folder. Progress goes to stdout (`ray job logs`): one line per
finished instance with its phase timings, then the summary table.

Exit code 0 when the batch ran (whatever the outcomes), 2 on a configuration error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from envpool.quoting import LogFormatter
from pipeline.cli import config_from_options, print_summary
from pipeline.pipeline_config import PipelineConfig

DEMO = Path("demo")
"""`instances: demo` (or no `instances`) asks for the embedded demo input."""


def parse_args(argv: list[str] | None = None, prog: str = "python -m pipeline.jobs.mint",
               doc: str | None = None) -> argparse.Namespace:
    """Options: --config, --workdir, --instances (a file, or `demo`), --mirrors (repeatable),
    --workers, --limit, --set key=value (repeatable)."""
    p = argparse.ArgumentParser(prog=prog, description=doc or __doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-c", "--config", type=Path)
    p.add_argument("-w", "--workdir", type=Path)
    p.add_argument("-i", "--instances", type=Path)
    p.add_argument("-m", "--mirrors", type=Path, action="append")
    p.add_argument("--workers", type=int)
    p.add_argument("--limit", type=int)
    p.add_argument("-s", "--set", dest="sets", action="append", default=[])
    return p.parse_args(argv)


def with_demo_input(cfg: PipelineConfig) -> PipelineConfig:
    """`cfg` unchanged when it names an instance file; else the demo input is written under
    `cfg.workdir/demo` (mirrors and instances.jsonl, rebuilt identically on every call) and
    `instances` / `mirrors` point at it. Raises RuntimeError when git fails."""
    if cfg.instances is not None and cfg.instances != DEMO:
        return cfg
    from pipeline.demo import make_demo

    mirrors, instances = make_demo(cfg.workdir / "demo")
    cfg.instances = instances
    cfg.mirrors = [mirrors, *(m for m in cfg.mirrors if m != mirrors)]
    return cfg


def job_main(argv: list[str] | None, body: Callable[[PipelineConfig], int], *, demo_when_unset: bool,
             prog: str, doc: str) -> int:
    """What both job entries do: log to stdout (INFO for `pipeline`), parse the options, build
    the config (the demo input for `instances: demo`, and when `demo_when_unset` for no
    instances), then `body(cfg)`; returns its exit code, or 2 on a configuration error."""
    import typer

    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(LogFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("pipeline").setLevel(logging.INFO)
    a = parse_args(argv, prog, doc)
    try:
        cfg = config_from_options(a.config, a.sets, workdir=a.workdir, instances=a.instances, mirrors=a.mirrors,
                                  workers=a.workers, limit=a.limit)
        if cfg.instances == DEMO or (demo_when_unset and cfg.instances is None):
            cfg = with_demo_input(cfg)
        return body(cfg)
    except typer.Exit as e:
        return e.exit_code
    except (ValueError, OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _mint(cfg: PipelineConfig) -> int:
    from pipeline.driver import run_mint

    print_summary(run_mint(cfg))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the batch; returns the exit code."""
    return job_main(argv, _mint, demo_when_unset=True, prog="python -m pipeline.jobs.mint", doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
