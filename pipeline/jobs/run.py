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

import sys

from pipeline.cli import run_chain
from pipeline.pipeline_config import PipelineConfig
from pipeline.jobs.mint import job_main


def _run(cfg: PipelineConfig) -> int:
    run_chain(cfg)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the chain; returns the exit code (options as `pipeline.jobs.mint`: --config, --workdir,
    --instances, --mirrors, --workers, --limit, --set)."""
    return job_main(argv, _run, demo_when_unset=False, prog="python -m pipeline.jobs.run", doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
