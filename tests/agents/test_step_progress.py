"""Issue 25, S11: a setup step's limit scales with measured progress -- past `timeouts.setup_step`
a step goes on while it prints, up to `setup_step_ceiling`; a step silent for `setup_step_idle`
seconds past the limit (a hung step) is still stopped (`envpool.sandbox.StepProgress`,
`agents.execution.step_progress`). On a small repository the test writes: a slow build (a
Makefile whose objects take a second each, each announced) completes; a hung step does not."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.mint_config import MintConfig
from agents.ecosystems.base import Ecosystem, Plan
from agents.ecosystems.runs import BuildJob
from agents.execution import run_setup, step_progress
from envpool.fake import FakeSandbox
from envpool.sandbox import ExecResult, SandboxSpec


class _Make(Ecosystem):
    name = "make"


def _job(sb, tmp_path: Path, commands: list[str], timeouts: dict, left: float = 3600.0) -> tuple[BuildJob, list]:
    steps: list = []
    plan = Plan(ecosystem="make", toolchain="gcc 14", image="i", build="make", parser="automake_log",
                setup_commands=commands)
    cfg = MintConfig(workdir=tmp_path, timeouts=timeouts)
    return BuildJob(sb=sb, eco=_Make(), plan=plan, instance=SimpleNamespace(instance_id="acme__slow-1"), tree=None,
                    config=cfg, helper=None, traj=steps.append, log_path=tmp_path / "run.log",
                    deadline=time.monotonic() + left, language="c"), steps


def test_a_setup_step_gets_the_progress_limit_of_the_config_capped_by_the_instance_deadline(tmp_path):
    sb = FakeSandbox(SandboxSpec(image="i"))
    sb.on(r"^make$", ExecResult(command="make", exit_code=0, output="CC a.o\nCC b.o\n", duration=1500.0))
    sb.on(r"^hang$", ExecResult(command="hang", exit_code=0, output="", duration=1500.0))
    job, _ = _job(sb, tmp_path, ["make"], {"setup_step": 900, "setup_step_idle": 300, "setup_step_ceiling": 2700})
    assert run_setup(job).ok  # 1,500 s past the 900 s limit, printing: it went on
    p = sb.calls[-1].progress
    assert sb.calls[-1].timeout == 900 and p is not None and p.idle == 300 and 2690 < p.ceiling <= 2700
    # the instance's time left bounds the ceiling (never below the step limit itself)
    short, _ = _job(sb, tmp_path, ["make"], {"setup_step": 900}, left=1200.0)
    assert 1190 < step_progress(short).ceiling <= 1200
    assert step_progress(_job(sb, tmp_path, ["make"], {"setup_step": 900}, left=10.0)[0]).ceiling == 900
    # a silent step is stopped at the limit
    hung, _ = _job(sb, tmp_path, ["hang"], {"setup_step": 900})
    out = run_setup(hung)
    assert not out.ok and sb.calls[-1].result.timed_out
    # the fixed limit when the config turns the extension off
    off, _ = _job(sb, tmp_path, ["make"], {"setup_step": 900, "setup_step_idle": None})
    assert step_progress(off) is None and not run_setup(off).ok


SLOW_MAKEFILE = """OBJS = a.o b.o c.o d.o e.o f.o g.o h.o
all: $(OBJS)
\t@echo LINK libslow.a
%.o:
\t@sleep 1; echo "CC $@"
hang:
\t@sleep 120
stall:
\t@echo "CC first.o"; sleep 120
"""


@pytest.mark.docker
def test_a_slow_build_that_prints_completes_and_a_hung_step_is_stopped(tmp_path, docker_client):
    """Limit 4 s, idle window 3 s, ceiling 40 s: `make` takes ~8 s and prints an object a second
    (completes, twice its limit); `make hang` prints nothing and `make stall` prints once then
    nothing: both are stopped at the 4 s limit, not after the 120 s they would sleep. Run with
    ``nice -n 10``."""
    from envpool.docker_sandbox import DockerSandboxFactory
    from tests.conftest import find_image
    from tests.session import SESSION

    image = find_image(docker_client, "swemint/cfamily", "gcc")
    if image is None:
        pytest.skip("no swemint/cfamily image (make) on this host")
    run_id = f"pytest-s11-{SESSION}"
    factory = DockerSandboxFactory(run_id=run_id, client=docker_client, kill_after=1)
    limits = {"setup_step": 4, "setup_step_idle": 3, "setup_step_ceiling": 40}
    try:
        with factory.sandbox(SandboxSpec(image=image, instance_id="acme__slow-1", network="none"),
                             tmp_path / "box.log") as sb:
            sb.put_file("/testbed/Makefile", SLOW_MAKEFILE)
            job, steps = _job(sb, tmp_path, ["make -C /testbed"], limits)
            t0 = time.monotonic()
            assert run_setup(job).ok, steps[-1].output_excerpt
            assert time.monotonic() - t0 > 7 and "LINK libslow.a" in steps[-1].output_excerpt
            for target in ("hang", "stall"):
                job, steps = _job(sb, tmp_path, [f"make -C /testbed {target}"], limits)
                t0 = time.monotonic()
                out = run_setup(job)
                took = time.monotonic() - t0
                assert not out.ok and steps[0].exit_code == 124, (target, steps[0])
                assert 4 <= steps[0].duration <= 10, (target, steps[0].duration)
                assert took < 30, target  # nowhere near the 120 s the step would have slept
            left = "?"
            for _ in range(20):  # the host's kill runs detached: the hung steps' processes go soon after
                left = sb.exec("pgrep -cf 'sleep 12[0]' || true", timeout=10).output.strip()
                if left == "0":
                    break
                time.sleep(0.5)
            assert left == "0"
    finally:
        factory.sweep(run_id)
