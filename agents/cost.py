"""What one instance costs: CPU-seconds by phase, by test run, of the engine, of the host.

A `CostMeter` is attached to the instance's sandbox factory (`cpu_listener`): every container
the factory started reports its cgroup CPU-seconds once removed (`envpool.cgroup`, exact: read
just before removal), and the meter adds them to the phase open at that moment (`phase(name)`,
nested; `other` outside any). Verification records each test run and compile-once build as a
`RunCost` (`run(...)` right after its container closed). `record()` makes the row's
`CostRecord`: phases, runs, the floor (dependency install + one before + one after run), the
minting process's own CPU, the host's busy CPU-seconds over the instance's span, the load
average at start and end and the cores. Never raises: a meter is never a reason to fail.

Images the instance found missing and built (a Debian base by debootstrap, a toolchain layer:
`envpool.imagestore`) report their CPU through `envpool.cgroup.note_image_cpu` while the meter
`watching_images()`: it is the row's `image_cpu_s`, kept out of `process_cpu_s` (debootstrap is a
child of the minting process, ~30 CPU-seconds for sid) and of `cpu_s`, since such an image is
built once per engine and serves every later instance of every run on it -- whichever instance
(or benchmark arm) happens to come first would otherwise carry it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agents.models import CostRecord, RunCost
from envpool.cgroup import (cores, host_cpu_seconds, image_children_cpu, image_cpu_listener, load_average,
                            process_cpu_now)

PHASES = ("analysis", "reuse", "setup", "before", "after", "reruns", "core", "commit", "publish")
"""The phases a row's cost names (`timings` has their wall seconds; `commit`'s containers are
the setup's, and `publish` runs none; `core`: the tooling check's run and build,
`agents.verification`)."""


class CostMeter:
    """Container CPU-seconds of one instance by phase (see the module docstring).

    Attributes: `phase_cpu` (phase -> seconds), `engine_cpu` (the engine's CPU during this
    instance's commits), `runs` (RunCost), `last_cpu` (seconds of the container closed last,
    None when unreadable), `image_cpu` (image builds, `watching_images`)."""

    def __init__(self) -> None:
        self.stack: list[str] = ["other"]
        self.phase_cpu: dict[str, float] = defaultdict(float)
        self.engine_cpu = 0.0
        self.runs: list[RunCost] = []
        self.last_cpu: float | None = None
        self.image_cpu = 0.0
        self._image_thread = 0.0  # the part of `image_cpu` this thread spent (`process_cpu_now` counts it)
        self._image_children0 = image_children_cpu()  # image builds' children: in RUSAGE_CHILDREN, every thread's
        self._factory = None
        self._previous = None
        self._host0 = host_cpu_seconds()
        self._load0 = load_average()
        self._proc0 = process_cpu_now()

    # -- wiring -------------------------------------------------------------------------------
    def attach(self, factory) -> None:
        """Listen to the containers `factory` starts (a factory without `cpu_listener`, e.g. a
        test double of an older shape, is left alone)."""
        if factory is None or not hasattr(factory, "cpu_listener"):
            return
        self._factory, self._previous = factory, factory.cpu_listener
        factory.cpu_listener = self.on_close

    def detach(self) -> None:
        """Give the factory its previous listener back."""
        if self._factory is not None:
            self._factory.cpu_listener = self._previous
            self._factory = None

    def on_close(self, sandbox) -> None:
        """A container closed: its CPU-seconds go to the open phase (and `last_cpu`)."""
        secs = getattr(sandbox, "cpu_seconds", None)
        self.last_cpu = secs
        if secs:
            self.phase_cpu[self.stack[-1]] += float(secs)
        engine = getattr(sandbox, "engine_cpu_seconds", None)
        if engine:
            self.engine_cpu += float(engine)

    def on_image_build(self, seconds: float, thread_s: float = 0.0) -> None:
        """An image build cost `seconds`, `thread_s` of them this thread's own
        (`envpool.cgroup.note_image_cpu`): `image_cpu`, and out of the process CPU (its
        children's CPU is taken out through `image_children_cpu`, whichever thread built)."""
        self.image_cpu += max(0.0, seconds)
        self._image_thread += max(0.0, thread_s)

    @contextmanager
    def watching_images(self) -> Iterator[None]:
        """Image builds reported within the block (this thread) count to `image_cpu`."""
        with image_cpu_listener(self.on_image_build):
            yield

    @property
    def current(self) -> str:
        """The open phase (`other` outside any)."""
        return self.stack[-1]

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Containers closed inside the block count to phase `name` (the innermost wins)."""
        self.stack.append(name)
        try:
            yield
        finally:
            self.stack.pop()

    def run(self, label: str, kind: str, wall_s: float, tests: int = 0) -> RunCost:
        """Record the verification container that closed last as `label` (`kind`: full,
        targeted, build)."""
        rc = RunCost(label=label, kind=kind, wall_s=round(wall_s, 2),
                     cpu_s=round(self.last_cpu, 3) if self.last_cpu is not None else None, tests=tests)
        self.runs.append(rc)
        return rc

    # -- the row --------------------------------------------------------------------------------
    def floor(self) -> float | None:
        """Dependency install (setup + reuse containers) + the first full before and after runs
        with their side's build; None without both runs' CPU."""
        first: dict[str, float] = {}
        builds: dict[str, float] = {}
        for r in self.runs:
            side = r.label.split("#")[0].split(":")[0]
            if r.cpu_s is None:
                continue
            if r.kind == "build":
                builds.setdefault(side, r.cpu_s)
            elif r.kind == "full":
                first.setdefault(side, r.cpu_s)
        if "before" not in first or "after" not in first:
            return None
        install = self.phase_cpu.get("setup", 0.0) + self.phase_cpu.get("reuse", 0.0)
        sides = ("before", "after")  # not the tooling check's `core` run
        return round(install + sum(first[s] for s in sides) + sum(builds.get(s, 0.0) for s in sides), 3)

    def record(self, policy: dict[str, Any] | None = None, slots: int | None = None) -> CostRecord:
        """The row's CostRecord, as of now."""
        host1 = host_cpu_seconds()
        container = round(sum(self.phase_cpu.values()), 3)
        images = image_children_cpu() - self._image_children0 + self._image_thread
        process = round(max(0.0, process_cpu_now() - self._proc0 - images), 3)
        return CostRecord(
            phase_cpu_s={k: round(v, 3) for k, v in self.phase_cpu.items() if v}, container_cpu_s=container,
            engine_cpu_s=round(self.engine_cpu, 3), process_cpu_s=process, image_cpu_s=round(self.image_cpu, 3),
            cpu_s=round(container + self.engine_cpu + process, 3),
            host_cpu_s=round(host1 - self._host0, 2) if host1 is not None and self._host0 is not None else None,
            load_start=self._load0, load_end=load_average(), cores=cores(), slots=slots, runs=list(self.runs),
            floor_cpu_s=self.floor(), policy=dict(policy or {}))


def policy_of(config) -> dict[str, Any]:
    """The settings a cost depends on, from a MintConfig: `verify.policy`, `verify.full_before_rerun`,
    `verify.compile_once`, the runs per side, `cache.scope`, `cache.warm`, `images.warm` (absent
    keys left out)."""
    out: dict[str, Any] = {}
    verify = getattr(config, "verify", None)
    for key in ("policy", "full_before_rerun", "compile_once", "compile_once_min_source_kb", "before_runs",
                "after_runs"):
        if verify is not None and hasattr(verify, key):
            out[f"verify.{key}"] = getattr(verify, key)
    cache = getattr(config, "cache", None)
    for key in ("scope", "warm"):
        if cache is not None and hasattr(cache, key):
            out[f"cache.{key}"] = getattr(cache, key)
    images = getattr(config, "images", None)
    if images is not None and hasattr(images, "warm"):
        out["images.warm"] = images.warm
    return out
