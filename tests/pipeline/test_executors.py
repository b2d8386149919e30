"""The in-process executor: stage calls and actor calls reported as `Done`, in order per actor,
errors and timeouts as results (the Ray executor runs the same flow in test_flow.py)."""

from __future__ import annotations

import threading
import time

from pipeline.executors import LocalExecutor


class Counter:
    """A stateful object: its calls must run one after another, in order."""

    def __init__(self, start: int):
        self.value = start
        self.active = 0
        self.overlap = False
        self.lock = threading.Lock()

    def add(self, n: int, pause: float = 0.0) -> int:
        with self.lock:
            self.active += 1
            self.overlap = self.overlap or self.active > 1
        time.sleep(pause)
        self.value += n
        with self.lock:
            self.active -= 1
        return self.value

    def fail(self) -> None:
        raise KeyError("no such repository")


class Sleep:
    name = "sleep"

    def process(self, seconds: float) -> float:
        time.sleep(seconds)
        return seconds


def drain(ex: LocalExecutor, n: int, limit: float = 10.0) -> list:
    got, t0 = [], time.monotonic()
    while len(got) < n and time.monotonic() - t0 < limit:
        got += ex.poll(0.5)
    return got


def test_actor_calls_run_in_order_one_at_a_time():
    ex = LocalExecutor()
    actor = ex.start_actor(Counter, 10)
    keys = [ex.call(actor, "add", i, 0.05, tag=i) for i in range(1, 5)]
    got = drain(ex, 4)
    assert [d.key for d in got] == keys and [d.result.value for d in got] == [11, 13, 16, 20]
    assert not actor[0].overlap and all(d.result.wall_s >= 0.04 for d in got)
    assert ex.in_flight() == 0


def test_errors_and_timeouts_are_results():
    ex = LocalExecutor()
    actor = ex.start_actor(Counter, 0)
    ex.call(actor, "fail", tag="bad")
    ex.submit(Sleep(), 5.0, tag="slow", timeout=0.3)
    ex.submit(Sleep(), 0.01, tag="quick")
    got = {d.tag: d for d in drain(ex, 3, limit=3)}
    assert "Counter.fail raised KeyError" in got["bad"].result.error
    assert got["slow"].timed_out and got["slow"].result.value is None
    assert got["quick"].result.value == 0.01 and not got["quick"].timed_out
    assert ex.in_flight() == 0 and ex.poll(0.01) == []  # the abandoned call's late result is dropped
