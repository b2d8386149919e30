"""`swemint pool refresh-tools`: current grading tools and a python3 in an existing image."""

from __future__ import annotations

import pytest

from envpool.evalscript import TOOL_LABEL, grading_tools, tool_digest
from envpool.testrun.statuslines import TOOL_PATH
from pipeline.imagetools import refresh_tools, tool_states


@pytest.mark.docker
@pytest.mark.slow
def test_refresh_writes_the_tools_and_a_python3_under_the_same_tag(docker_client, debian_image):
    from envpool.docker_sandbox import DockerSandboxFactory

    tag = "swemint/test-refresh:old"
    c = docker_client.containers.run(debian_image, ["bash", "-c", "mkdir -p /testbed/.git && echo s > "
                                                     "/testbed/.git/swemint-image-stamp && touch -d 2020-01-02T03:04:05 "
                                                     "/testbed/.git/swemint-image-stamp"],
                                     detach=True, labels={"swemint.run": "t-refresh"})
    c.wait(timeout=60)
    c.commit("swemint/test-refresh", "old", conf={"Labels": {"swemint.run": "t-refresh", "swemint.instance": "i"}})
    c.remove(force=True)
    try:
        f = DockerSandboxFactory(run_id="t-refresh", client=docker_client)
        row = {"instance_id": "i", "image_local": tag}
        assert tool_states([row], client=docker_client) == {"i": "missing"}  # an old image: probed, no tool
        with pytest.raises(ValueError, match="belongs to run"):
            refresh_tools(f, tag, run_id="someone-else", instance_id="i")
        new_id = refresh_tools(f, tag, run_id="t-refresh", instance_id="i")
        img = docker_client.images.get(tag)
        assert img.id == new_id and img.labels["swemint.instance"] == "i"
        assert img.labels[TOOL_LABEL] == tool_digest()
        assert tool_states([{**row, "image_id": new_id}], client=docker_client) == {"i": "labelled"}
        out = docker_client.containers.run(tag, ["bash", "-c", f"python3 {TOOL_PATH} poly --parser go_test_json "
                                                 "--input /dev/null; python3 -c 'import json; print(1)'"],
                                           network_mode="none", remove=True).decode()
        assert "the report shows no test" in out and out.strip().endswith("1")
        # the stamp beside /testbed, with the time of the one in .git (an image minted before it existed)
        stamps = docker_client.containers.run(tag, ["stat", "-c", "%Y", "/.testbed.swemint-image-stamp",
                                                    "/testbed/.git/swemint-image-stamp"], remove=True).decode().split()
        assert stamps[0] == stamps[1] and int(stamps[0]) < 1600000000
        plugin = next(p for p in grading_tools() if p.endswith(".py"))
        assert docker_client.containers.run(tag, ["cat", plugin], remove=True) == grading_tools()[plugin]
    finally:
        docker_client.images.remove(tag, force=True)


def test_refresh_installs_python3_under_the_configured_mirror_policy():
    """`refresh_tools` tries the python3 install again under the mint's `repair.mirror_*` (the
    one `MirrorRetry` model) and, apt still failing on the mirror, raises AptMirrorError (an
    infrastructure error, not the image's); `pool refresh-tools` passes the configured policy."""
    import re
    from types import SimpleNamespace

    from agents.mint_config import MintConfig, RepairConfig
    from envpool.aptmirror import AptMirrorError, MirrorRetry
    from envpool.evalscript import ENSURE_PYTHON3
    from envpool.fake import FakeSandboxFactory
    from pipeline.cli import _refresh_all
    from tests.envpool.test_mirror_retry import HASH_SUM

    assert isinstance(RepairConfig(), MirrorRetry)
    f = FakeSandboxFactory(run_id="t")
    f.client = SimpleNamespace(images=SimpleNamespace(get=lambda ref: SimpleNamespace(labels={"swemint.run": "t"},
                                                                                       id="sha256:old")))
    tries: list[str] = []
    f.on("^" + re.escape(ENSURE_PYTHON3) + "$", lambda cmd, sb: tries.append(cmd) or (100, HASH_SUM))
    cfg = MintConfig(run_id="t", repair={"mirror_attempts": 2, "mirror_backoff": 0})
    with pytest.raises(AptMirrorError, match="Hash Sum mismatch"):
        refresh_tools(f, "swemint/env:x", run_id="t", instance_id="i", mirror=cfg.repair)
    assert len(tries) == 2
    seen: list[dict] = []
    res = SimpleNamespace(outcome="verified", image="swemint/env:x", instance_id="i")
    store = SimpleNamespace(results=lambda: [res])
    _refresh_all(store, None, f, SimpleNamespace(ids=None, mint=cfg),
                 lambda *a, **kw: seen.append(kw) or (_ for _ in ()).throw(ValueError("stop")))
    assert seen and seen[0]["mirror"] is cfg.repair
