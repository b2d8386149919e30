r"""Where a Debian base's debootstrap lands in a row's cost: `process_cpu_s` or `image_cpu_s`.

    # the real debootstrap of sid (~30 CPU-s, ~1 min; needs debootstrap and the Debian mirror)
    nice -n 10 .venv/bin/python scripts/bench_image_cpu.py --suite sid
    # a stand-in debootstrap burning 5 CPU-seconds (no network)
    .venv/bin/python scripts/bench_image_cpu.py --standin-cpu 5

Runs `envpool.imagestore.DockerImageStore.bootstrap` under an instance's `agents.cost.CostMeter`
(watching image builds where the code has `watching_images`), with a `docker` on PATH that
swallows the import (no image is made, the engine is not touched), and prints the meter's
`process_cpu_s`, `image_cpu_s` (absent before it existed) and `cpu_s` as JSON. Before image builds
were recorded apart, the debootstrap's CPU was the instance's process CPU (google__gson-1014 in
the paired cost benchmark: 31.9 process CPU-s in the arm that built the sid base, 1.1 in the arm
that reused it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.cost import CostMeter  # noqa: E402
from envpool.images import BASE_PACKAGES, DEBIAN_MIRROR  # noqa: E402
from envpool.imagestore import DockerImageStore  # noqa: E402


def _stand_in(bin_dir: Path, name: str, body: str) -> None:
    f = bin_dir / name
    f.write_text(body)
    f.chmod(0o755)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="sid")
    ap.add_argument("--mirror", default=DEBIAN_MIRROR)
    ap.add_argument("--standin-cpu", type=float, default=None,
                    help="a stand-in debootstrap burning this many CPU-seconds instead of the real one")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-image-cpu-") as tmp:
        bin_dir = Path(tmp)
        _stand_in(bin_dir, "docker", "#!/bin/sh\ncat > /dev/null\n")
        if a.standin_cpu is not None:
            _stand_in(bin_dir, "debootstrap",
                      f"#!{sys.executable}\nimport os, sys, time\nt = time.process_time()\n"
                      f"while time.process_time() - t < {a.standin_cpu}:\n    pass\n"
                      "os.makedirs(os.path.join(sys.argv[-2], 'etc/apt/apt.conf.d'), exist_ok=True)\n")
        os.environ["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
        meter = CostMeter()
        watching = getattr(meter, "watching_images", None)
        t0 = time.monotonic()
        with watching() if watching else contextlib.nullcontext():
            DockerImageStore(client=object()).bootstrap(a.suite, f"swemint/debian:{a.suite}-bench", a.mirror,
                                                        BASE_PACKAGES)
        c = meter.record()
    out = {"suite": a.suite, "debootstrap": "stand-in" if a.standin_cpu is not None else "real",
           "wall_s": round(time.monotonic() - t0, 1), "process_cpu_s": c.process_cpu_s,
           "image_cpu_s": getattr(c, "image_cpu_s", None), "cpu_s": c.cpu_s}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
