"""Check that no commit after `base_commit` is reachable in any pooled image of a work directory.

    python scripts/check_history.py --workdir WORKDIR [--json out.json]

For every verified row: a container from its image (no network) lists the commits reachable in
/testbed (`git log --all`) and looks for the blobs of the files as the gold patch and the
test_patch leave them among the image's objects (`pipeline.rebuild.check_history`). A row passes when /testbed
has only our `base <sha>` commit (and our setup-edits commit) and none of those blobs. Read-only:
nothing is written to the work directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from envpool.docker_sandbox import DockerSandboxFactory
    from pipeline.rebuild import check_history
    from pipeline.store import ResultStore

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    store = ResultStore(a.workdir, read_only=True)
    known = store.instances()
    factory = DockerSandboxFactory(run_id="history-check")
    out = {}
    for res in store.results():
        if res.outcome != "verified" or not res.image or res.instance_id not in known:
            continue
        inst = known[res.instance_id]
        h = check_history(factory, res.image, inst.patch, inst.test_patch, "history-check")
        out[res.instance_id] = h.model_dump()
        print(f"{res.instance_id:45} {'ok' if h.ok else 'NOT OK'}  commits={len(h.commits)} "
              f"fix_blobs={len(h.fix_blobs)} {h.error or ''}", flush=True)
    ok = sum(v["ok"] for v in out.values())
    print(f"{ok}/{len(out)} images: only base_commit's tree, no fix blob")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0 if ok == len(out) else 1


if __name__ == "__main__":
    sys.exit(main())
