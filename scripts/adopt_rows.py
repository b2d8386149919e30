"""Copy finished rows of another work directory into this one, with images that carry the current
grading tools (measurement helper: grade rows minted by an older swemint without touching them).

    python scripts/adopt_rows.py --source /work/bench/core-base/w --workdir WORKDIR --ids a,b

For each id: the source's `instances/<id>/` files (instance.json, result.json, plan.json, DONE)
are copied, its image is copied to `<repository>:<tag>-tools` with the grading tools and a python3
(`pipeline.imagetools.refresh_tools` with a target: the source image is only read) labelled with
this work directory's run, and the copied result points at it. The source is never written.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from envpool.docker_sandbox import DockerSandboxFactory
    from pipeline.pipeline_config import load_config
    from pipeline.imagetools import refresh_tools
    from pipeline.store import ResultStore

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--ids", required=True)
    a = ap.parse_args(argv)
    cfg = load_config(None, [], workdir=a.workdir)
    src, dst = ResultStore(a.source, read_only=True), ResultStore(a.workdir)
    factory = DockerSandboxFactory(run_id=cfg.mint.run_id, build_network=cfg.mint.build_network)
    for iid in [x for x in a.ids.split(",") if x]:
        res = src.read_result(iid)
        if res is None or res.outcome != "verified" or not res.image:
            print(f"{iid}: not a verified row of {a.source}")
            continue
        d = dst.dir(iid)
        d.mkdir(parents=True, exist_ok=True)
        for name in ("instance.json", "plan.json"):
            if (src.dir(iid) / name).is_file():
                shutil.copy2(src.dir(iid) / name, d / name)
        target = f"{res.image}-tools"
        new_id = refresh_tools(factory, res.image, run_id=cfg.mint.run_id, instance_id=iid, target=target)
        env = res.env.model_copy(update={"image_tag": target, "image_id": new_id}) if res.env else None
        dst.write_result(res.model_copy(update={"image": target, "image_id": new_id, "env": env,
                                                "log_path": str(src.dir(iid) / "run.log")}))
        print(f"{iid}: {res.image} -> {target}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
