"""`ray start` for a worker node whose every socket stays on loopback (several nodes on one host).

Ray binds loopback only when `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` (see `pipeline.raysec`), and
with that setting `ray start --address ...` refuses to add a worker node ("Multi-node Ray
clusters are not supported"); with it on, Ray replaces `--node-ip-address 127.0.0.1` by the
host's routable address and every socket listens there. This launcher runs Ray's own CLI with
the variable at 0 for every process it spawns, lets the worker branch through, and answers
127.0.0.1 wherever Ray asks for the node's address, so the raylet, agents and workers of the
node bind loopback like the head. Whoever starts it checks the sockets afterwards
(`pipeline.raysec.assert_loopback_only` on its pid), never trusting the parameter.

    python -m pipeline.raynode start --block --address 127.0.0.1:GCS_PORT --node-ip-address 127.0.0.1 ...

Same arguments as `ray start`; token auth comes from the environment (`RAY_AUTH_MODE=token`,
`RAY_AUTH_TOKEN_PATH`) as for every other Ray process.
"""

from __future__ import annotations

import os
import sys

LOOPBACK = "127.0.0.1"


def main(argv: list[str] | None = None) -> int:
    """Run `ray <argv>` with loopback addresses (see the module docstring); returns its exit code."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # inherited by every process Ray spawns
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray._private import ray_constants, services

    services.get_node_ip_address = lambda address=None: LOOPBACK  # what "localhost" resolves to here
    ray_constants.ENABLE_RAY_CLUSTER = True  # only lets `ray start --address` add this node
    from ray.scripts.scripts import main as ray_main

    sys.argv = ["ray", *(sys.argv[1:] if argv is None else argv)]
    try:
        ray_main()
    except SystemExit as e:
        return int(e.code or 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
