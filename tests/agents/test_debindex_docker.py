"""A neighbouring suite's Debian file index answering for a trixie image whose own index cannot
be built (agents.debindex, agents.debneighbour), in real Docker on the real mirror: the own
index's build is made to fail with the mirror-sync error (deterministic, whatever the mirror's
state), sid's index made from the same trixie image answers `header unicode/ucol.h`, and trixie's
package lists confirm libicu-dev."""

from __future__ import annotations

import pytest

from agents.context import MintRun, Trajectory
from agents.debindex import Need, index_for
from agents.mint_config import MintConfig
from agents.models import Instance, InstanceResult
from envpool.docker_sandbox import DockerSandboxFactory
from tests.conftest import ensure_test_image
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker]

MIRROR_SYNC = ("echo 'E: Failed to fetch http://deb.debian.org/debian/dists/trixie/main/Contents-amd64.gz  File "
               "has unexpected size (12698511 != 12699567). Mirror sync in progress? [IP: 203.0.113.80 80]' >&2; "
               "exit 100")


def test_a_trixie_header_is_answered_by_sid_s_index_and_confirmed_in_trixie(tmp_path, docker_client):
    from envpool.images import ensure_debian_base

    base = ensure_test_image(docker_client, lambda: ensure_debian_base("trixie", engine=docker_client),
                             "swemint/debian", "trixie-")
    run_id = f"test-debindex-{SESSION}"
    cfg = MintConfig(workdir=tmp_path / "w", run_id=run_id, image_repository=ENV_REPOSITORY,
                     repair={"mirror_attempts": 1})
    inst = Instance(instance_id="o__r-1", repo="o/r", base_commit="0" * 40, patch="p", test_patch="t")
    idir = tmp_path / "w" / "instances" / "o__r-1"
    idir.mkdir(parents=True)
    run = MintRun(instance=inst, tree=None, config=cfg, factory=DockerSandboxFactory(run_id=run_id),
                  res=InstanceResult(instance_id="o__r-1", repo="o/r", outcome="infra_error"), idir=idir,
                  log_path=idir / "run.log", traj=Trajectory(idir / "trajectory.jsonl"), deadline=1e18)
    index = index_for(run, base)
    index.setup = MIRROR_SYNC  # the own suite's index: the mirror mid-sync, every time
    made = [index.ref, index_for(run, base, ("sid", "http://deb.debian.org/debian")).ref]
    try:
        pkgs, [answer] = index.resolve([Need(kind="header", name="unicode/ucol.h")])
        assert pkgs == ["libicu-dev"], [s.note for s in run.traj.steps]
        assert answer.suite == "sid" and answer.unavailable is None
        note = run.traj.steps[-1].note
        assert "libicu-dev from sid's index, confirmed in trixie" in note and "Mirror sync in progress?" in note
        assert "/usr/include/unicode/ucol.h" in run.traj.steps[-1].output_excerpt
    finally:
        for ref in made:
            try:
                docker_client.images.remove(ref, force=True)
            except Exception:  # noqa: BLE001 - never made
                pass


def test_the_suite_probe_reads_the_sources_when_the_image_dropped_its_package_lists(docker_client):
    """swemint's toolchain images end their apt steps with ``rm -rf /var/lib/apt/lists/*``, so
    ``apt-get indextargets`` prints nothing there (timescaledb-10411 on the gcc14 image: 'suite
    ... unknown (no neighbouring index)'); the probe then reads the one-line and deb822 sources."""
    from agents.debneighbour import SUITE_PROBE, own_suite
    from envpool.images import ensure_debian_base

    base = ensure_test_image(docker_client, lambda: ensure_debian_base("trixie", engine=docker_client),
                             "swemint/debian", "trixie-")
    out = docker_client.containers.run(base, ["sh", "-c", "rm -rf /var/lib/apt/lists/*; " + SUITE_PROBE],
                                       remove=True, network_disabled=True).decode()
    assert own_suite(out) == ("trixie", "http://deb.debian.org/debian"), out
    deb822 = ("rm -rf /var/lib/apt/lists/* /etc/apt/sources.list /etc/apt/sources.list.d/*; printf '%s\\n' "
              "'Types: deb' 'URIs: http://mirror.example/debian' 'Suites: sid sid-updates' 'Components: main' "
              "> /etc/apt/sources.list.d/debian.sources; " + SUITE_PROBE)
    out = docker_client.containers.run(base, ["sh", "-c", deb822], remove=True, network_disabled=True).decode()
    assert own_suite(out) == ("sid", "http://mirror.example/debian"), out
