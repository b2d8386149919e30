"""`python -m pipeline.jobs.run --config configs/nightly.yaml --workdir DIR` for `ray job submit`:
the whole chain (sources -> filter -> plan -> build -> export) in one Ray job.

Inside a Ray job `RAY_ADDRESS` is set, so the driver joins the cluster: GitHub crawler actors
(one per token), mining tasks, filter and plan tasks on any node, builds on nodes that declare
the `docker` resource. The nightly job:

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python -m pipeline.jobs.run --config configs/nightly.yaml --workdir /data/swemint

`--workdir` should be absolute (a job runs in a copy of the working directory) and, with more
than one node, on a file system every node mounts at the same path. Progress goes to stdout
(`ray job logs`): one line per mint row, then the summary and the funnel (also in
WORKDIR/report.json). Exit code 0 when the chain ran, 1 when the crawl stopped early (a rate
limit too long to wait), 2 on a configuration error. `instances: demo` (configs/cluster.yaml)
writes the embedded demo input under WORKDIR/demo and uses it as the instance file.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

DEMO = Path("demo")
"""`instances: demo` (configs/cluster.yaml) asks for the embedded demo input (`pipeline.jobs.mint`)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Options: --config, --workdir, --instances, --mirrors (repeatable), --workers,
    --set key=value (repeatable)."""
    p = argparse.ArgumentParser(prog="python -m pipeline.jobs.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-c", "--config", type=Path)
    p.add_argument("-w", "--workdir", type=Path)
    p.add_argument("-i", "--instances", type=Path)
    p.add_argument("-m", "--mirrors", type=Path, action="append")
    p.add_argument("--workers", type=int)
    p.add_argument("-s", "--set", dest="sets", action="append", default=[])
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the chain; returns the exit code."""
    import typer

    from pipeline.cli import config_from_options, run_chain
    from pipeline.jobs.mint import with_demo_input

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stdout)
    logging.getLogger("pipeline").setLevel(logging.INFO)
    a = parse_args(argv)
    try:
        cfg = config_from_options(a.config, a.sets, workdir=a.workdir, instances=a.instances, mirrors=a.mirrors,
                                  workers=a.workers)
        if cfg.instances == DEMO:
            cfg = with_demo_input(cfg)
        run_chain(cfg)
    except typer.Exit as e:
        return e.exit_code
    except (ValueError, OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
