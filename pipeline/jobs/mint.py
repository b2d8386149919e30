"""`python -m pipeline.jobs.mint --config configs/default.yaml --workdir DIR` for `ray job submit`.

Inside a Ray job `RAY_ADDRESS` is set, so the driver joins the cluster instead of starting Ray.
Example:

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python -m pipeline.jobs.mint -c configs/default.yaml --workdir /shared/work \\
        --instances /shared/tasks.jsonl --mirrors /shared/mirrors --set workers=8

Exit code 0 when the batch ran (whatever the outcomes), 2 on a configuration error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.cli import config_from_options, print_summary


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Options: --config, --workdir, --instances, --mirrors (repeatable), --workers, --limit,
    --set key=value (repeatable)."""
    p = argparse.ArgumentParser(prog="python -m pipeline.jobs.mint", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-c", "--config", type=Path)
    p.add_argument("-w", "--workdir", type=Path)
    p.add_argument("-i", "--instances", type=Path)
    p.add_argument("-m", "--mirrors", type=Path, action="append")
    p.add_argument("--workers", type=int)
    p.add_argument("--limit", type=int)
    p.add_argument("-s", "--set", dest="sets", action="append", default=[])
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the batch; returns the exit code."""
    import typer

    from pipeline.driver import run_mint

    a = parse_args(argv)
    try:
        cfg = config_from_options(a.config, a.sets, workdir=a.workdir, instances=a.instances, mirrors=a.mirrors,
                      workers=a.workers, limit=a.limit)
        report = run_mint(cfg, on_result=lambda r: print(f"{r.instance_id}: {r.outcome} {r.reason[:200]}",
                                                         flush=True))
    except typer.Exit as e:
        return e.exit_code
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print_summary(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
