"""Executors: where single stage calls run, reported as `Done` (no Ray here; `pipeline.ray_adapter`
has the Ray executor), and the runner that maps one stage over items on any executor.

- An executor runs calls and reports each as a `Done` (with `Measured`: value or error, wall and
  CPU seconds): `submit(stage, item)` runs `stage.process(item)` with the stage's declared
  resources, `start_actor(cls, ...)` / `call(actor, method, ...)` run methods of a stateful
  object serially (a GitHub client holding one token). A call that raises, or whose worker dies,
  is a `Done` with `error`; one past its `timeout` (seconds since submission) is reported
  `timed_out` and its late result dropped. `LocalExecutor`: threads in this process (`--no-ray`,
  tests): a hung call cannot be killed (a Python thread finishes or dies with the process).
  The scheduling policy (queues, bounds, what runs next) is the caller's: `pipeline.streaming`
  streams the chain sources -> filter -> plan -> build over an executor.
- `MapRunner` (`Runner`) maps one stage over work items for `swemint mint`, yielding one row per
  item in completion order with at most `workers` in flight (backpressure: items are submitted
  as others finish); an error is an `infra_error` row, a timeout a `timeout` row, so the job
  never fails because of one item (cf. ray-project/ray #59194, #45661).
"""

from __future__ import annotations

import itertools
import queue
from collections import Counter
import contextvars
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from agents.models import InstanceResult
from pipeline.stages import Measured, Stage, WorkItem, failure_row, now_iso, run_measured

OnSubmit = Callable[[WorkItem], None]


@dataclass
class Done:
    """One finished (or abandoned) call: its `key` (from `submit` / `call`), the caller's `tag`,
    the `result` (`Measured`: value or error, seconds), and `timed_out` (no result in time)."""

    key: int
    tag: Any
    result: Measured
    timed_out: bool = False


class Executor(Protocol):
    """Runs calls and reports them as `Done` (see the module docstring)."""

    def submit(self, stage: Any, item: Any, *, tag: Any = None, timeout: float | None = None,
               prefer: str | None = None) -> int:
        """Run `stage.process(item)` somewhere (on node `prefer` when it has room: a hint);
        returns the call's key."""
        ...

    def start_actor(self, cls: type, *args: Any, **kwargs: Any) -> Any:
        """Build `cls(*args, **kwargs)` where it will live; returns a handle for `call`."""
        ...

    def call(self, actor: Any, method: str, *args: Any, tag: Any = None, timeout: float | None = None) -> int:
        """Run `actor.method(*args)` after the actor's earlier calls; returns the call's key."""
        ...

    def poll(self, timeout: float) -> list[Done]:
        """Calls finished (or timed out) since the last poll, waiting up to `timeout` seconds for one."""
        ...

    def in_flight(self) -> int:
        """Calls submitted and not yet reported."""
        ...

    def each_node(self, fn: Callable[..., Any], *args: Any, nodes: set[str] | None = None) -> list[Any]:
        """`fn(*args)` once per Docker node (of `nodes`, node ids, when given)."""
        ...

    def node_ids(self) -> set[str]:
        """Ids of the Docker nodes alive now."""
        ...

    def close(self) -> None:
        """Release what the executor started."""
        ...


class Locality:
    """Where each repository's images and caches are, as a hint for `Executor.submit(prefer=...)`
    (the executor runs the item elsewhere when that node is busy or gone: never a requirement).
    MEnvAgent-style reuse works best where the repository's environments already are.

    - In this run (`note`): repository -> the Ray node id that last ran a build of one of its
      instances.
    - From earlier runs (`seed`): repository -> the node name (`EnvRecord.node`: the engine's
      `swemint.node` label, else its name) of its newest pooled environment, turned into today's
      Ray node id through `names()` ({node id: node name}, e.g. `RayExecutor.node_names`; a
      node that comes back gets a new id but its engine keeps its name), asked at most every
      `refresh_s` seconds and only when such a hint is wanted. A name no alive node has is no
      hint; a failing `names()` is none either.
    """

    def __init__(self, names: Callable[[], dict[str, str]] | None = None, refresh_s: float = 60.0) -> None:
        self.by_repo: dict[str, str] = {}
        self.by_name: dict[str, str] = {}
        self.names, self.refresh_s = names, refresh_s
        self._ids: dict[str, str] = {}
        self._asked: float | None = None

    def seed(self, records: Iterable[Any]) -> int:
        """Learn each repository's node from pooled environments (records with `repo` and `node`,
        oldest first as `EnvPool.list()` gives them: the newest wins); returns how many
        repositories have a node now."""
        for rec in records:
            if getattr(rec, "node", ""):
                self.by_name[rec.repo] = rec.node
        return len(self.by_name)

    def _id_of(self, name: str) -> str | None:
        now = time.monotonic()
        if self.names is not None and (self._asked is None or now - self._asked >= self.refresh_s):
            self._asked = now
            try:
                self._ids = {n: nid for nid, n in self.names().items() if n}
            except Exception:  # noqa: BLE001 - the cluster did not answer: no hint this time
                self._ids = {}
        return self._ids.get(name)

    def prefer(self, repo: str) -> str | None:
        """The Ray node id to prefer for an instance of `repo` (None: no preference)."""
        if repo in self.by_repo:
            return self.by_repo[repo]
        name = self.by_name.get(repo)
        return self._id_of(name) if name else None

    def note(self, repo: str, node: str) -> None:
        """A build of `repo` ran on `node` (a Ray node id; "" = unknown: ignored)."""
        if node:
            self.by_repo[repo] = node


class CallBook:
    """Calls in flight of an executor: handle -> (key, tag, deadline or None)."""

    def __init__(self) -> None:
        self.keys = itertools.count()
        self.pending: dict[Any, tuple[int, Any, float | None]] = {}

    def add(self, handle: Any, tag: Any, timeout: float | None) -> int:
        """Record a call; returns its key."""
        key = next(self.keys)
        self.pending[handle] = (key, tag, None if timeout is None else time.monotonic() + timeout)
        return key

    def wait_s(self, timeout: float) -> float:
        """Seconds to wait for a result: `timeout`, or less when a deadline comes sooner."""
        deadlines = [d for _, _, d in self.pending.values() if d is not None]
        return max(0.01, min([timeout, *(d - time.monotonic() for d in deadlines)]))

    def expired(self) -> list[tuple[Any, Done]]:
        """Calls past their deadline, removed from the book, each as (handle, timed-out Done)."""
        now, out = time.monotonic(), []
        for handle, (key, tag, deadline) in list(self.pending.items()):
            if deadline is not None and now > deadline:
                del self.pending[handle]
                out.append((handle, Done(key, tag, Measured(error="no result in time"), timed_out=True)))
        return out


def call_method(obj: Any, method: str, args: tuple) -> Measured:
    """Body of an actor call: `getattr(obj, method)(*args)`, measured like a stage call."""

    class _Call:
        name = f"{type(obj).__name__}.{method}"

        @staticmethod
        def process(_: Any) -> Any:
            return getattr(obj, method)(*args)

    return run_measured(_Call(), None)


class LocalExecutor:
    """Threads in this process: one per stage call, one per actor (its calls in order)."""

    def __init__(self) -> None:
        self._book = CallBook()
        self._done: queue.Queue = queue.Queue()

    def submit(self, stage: Any, item: Any, *, tag: Any = None, timeout: float | None = None,
               prefer: str | None = None) -> int:
        """See `Executor.submit` (`prefer` is moot: this process is the only node)."""
        handle = object()
        key = self._book.add(handle, tag, timeout)
        ctx = contextvars.copy_context()  # the driver's context (an active image store) in the worker
        threading.Thread(target=lambda: self._done.put((handle, ctx.run(run_measured, stage, item))), daemon=True,
                         name=f"swemint-{getattr(stage, 'name', 'stage')}-{key}").start()
        return key

    def start_actor(self, cls: type, *args: Any, **kwargs: Any) -> Any:
        """See `Executor.start_actor` (built here, now: its errors raise)."""
        inbox: queue.Queue = queue.Queue()
        obj = cls(*args, **kwargs)

        def serve() -> None:
            while (job := inbox.get()) is not None:
                handle, method, margs = job
                self._done.put((handle, call_method(obj, method, margs)))

        threading.Thread(target=serve, daemon=True, name=f"swemint-actor-{cls.__name__}").start()
        return (obj, inbox)

    def call(self, actor: Any, method: str, *args: Any, tag: Any = None, timeout: float | None = None) -> int:
        """See `Executor.call`."""
        handle = object()
        key = self._book.add(handle, tag, timeout)
        actor[1].put((handle, method, args))
        return key

    def poll(self, timeout: float) -> list[Done]:
        """See `Executor.poll`."""
        out: list[Done] = []
        try:
            first = self._done.get(timeout=self._book.wait_s(timeout)) if self._book.pending else None
        except queue.Empty:
            first = None
        got = [first] if first is not None else []
        while True:
            try:
                got.append(self._done.get_nowait())
            except queue.Empty:
                break
        for handle, measured in got:
            entry = self._book.pending.pop(handle, None)
            if entry is not None:  # else: a late result of an abandoned call
                out.append(Done(entry[0], entry[1], measured))
        out.extend(d for _, d in self._book.expired())
        return out

    def in_flight(self) -> int:
        """See `Executor.in_flight`."""
        return len(self._book.pending)

    def each_node(self, fn: Callable[..., Any], *args: Any, nodes: set[str] | None = None) -> list[Any]:
        """`[fn(*args)]`: this process is the only node ("")."""
        return [fn(*args)] if nodes is None or "" in nodes else []

    def node_ids(self) -> set[str]:
        """`{""}`: this process is the only node."""
        return {""}

    def close(self) -> None:
        """Nothing to release (threads are daemons)."""


class Runner(Protocol):
    """Runs a stage over items; yields exactly one InstanceResult per item, in completion order."""

    def run(self, stage: Stage, items: Iterable[WorkItem],
            on_submit: OnSubmit | None = None) -> Iterator[InstanceResult]:
        """`on_submit(item)` is called in the driver just before an item starts."""
        ...

    def close(self) -> None:
        """Release what the runner started (a local Ray)."""
        ...


ABANDONED = "abandoned by the runner"
"""In the reason of a `timeout` row the runner wrote for an item it gave up on (the driver then
removes that instance's containers)."""


def _timeout_row(item: WorkItem, timeout: float, started: str) -> InstanceResult:
    return failure_row(item.instance, "timeout", f"no result after {timeout:.0f} s; {ABANDONED}",
                       started, timeout)




def row_of(item: WorkItem, done: Done, timeout: float | None, started: str) -> InstanceResult:
    """The row of one build item's `Done` (`tag[0]`: the stage name): its result, or an
    `infra_error` row (an error, a value that is not this item's row) or a `timeout` row."""
    if done.timed_out:
        return _timeout_row(item, timeout or 0.0, started)
    m = done.result
    if m.error is not None:
        return failure_row(item.instance, "infra_error", m.error, started, m.wall_s)
    res = m.value
    if not isinstance(res, InstanceResult) or res.instance_id != item.instance.instance_id:
        return failure_row(item.instance, "infra_error", f"{done.tag[0]} returned {type(res).__name__} "
                           "instead of this instance's InstanceResult", started)
    return res


class MapRunner:
    """`Runner` over an executor: at most `workers` items in flight, `timeout` seconds each."""

    def __init__(self, executor: Executor, workers: int = 1, timeout: float | None = None):
        self.executor = executor
        self.workers = max(1, workers)
        self.timeout = timeout
        self.locality = Locality(names=getattr(executor, "node_names", None))
        self.nodes: Counter[str] = Counter()
        """Items finished per node id ("" in-process)."""

    def run(self, stage: Stage, items: Iterable[WorkItem],
            on_submit: OnSubmit | None = None) -> Iterator[InstanceResult]:
        """See `Runner.run`. KeyboardInterrupt / closing the generator cancels what is in flight
        (on Ray)."""
        todo = iter(items)
        inflight: dict[int, tuple[WorkItem, str]] = {}
        try:
            while True:
                while len(inflight) < self.workers and (item := next(todo, None)) is not None:
                    if on_submit:
                        on_submit(item)
                    started = now_iso()
                    key = self.executor.submit(stage, item, tag=(stage.name,), timeout=self.timeout,
                                               prefer=self.locality.prefer(item.instance.repo))
                    inflight[key] = (item, started)
                if not inflight:
                    return
                for done in self.executor.poll(1.0):
                    item, started = inflight.pop(done.key)
                    self.locality.note(item.instance.repo, done.result.node)
                    self.nodes[done.result.node] += 1
                    yield row_of(item, done, self.timeout, started)
        finally:
            if inflight and (cancel := getattr(self.executor, "cancel_all", None)):
                cancel()

    def each_node(self, fn: Callable[..., Any], *args: Any, nodes: set[str] | None = None) -> list[Any]:
        """See `Executor.each_node`."""
        if nodes is None:
            return self.executor.each_node(fn, *args)
        return self.executor.each_node(fn, *args, nodes=nodes)

    def close(self) -> None:
        """Release what the executor started (a local Ray)."""
        self.executor.close()


class LocalRunner(MapRunner):
    """Threads in this process. `workers`: items at once; `timeout`: seconds per item (None = none).
    A hung item is abandoned as `timeout` (a Python thread cannot be killed)."""

    def __init__(self, workers: int = 1, timeout: float | None = None):
        super().__init__(LocalExecutor(), workers, timeout)
