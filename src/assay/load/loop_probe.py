"""How busy a load process was while it measured: its event loop's lag and its CPU use.

A process whose event loop is saturated reads each chunk late, so the latencies it measures
include its own delay. The probe is a timer that asks to run every `interval_ns` and notes how
late it ran (the loop's lag: the time a chunk that arrived then waited before the client saw
it), with the process's CPU time over the step. `client_saturated` is the rule that reads
them (docs/report.md, "steps[].client_load"); the CPU says why: the process's own work (near a
full core) or a machine that did not give it the CPU.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final, Self

from pydantic import BaseModel, ConfigDict

PROBE_INTERVAL_NS: Final = 10_000_000  # 100 timer wake-ups a second: negligible work
# The bounds (ms) of the lag histogram: enough to read a p99 to within a bucket.
_LAG_BOUNDS_MS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
# A loop whose timers ran this late on average read what arrived that late: the latencies the
# process measured include that much of its own delay, whatever kept it from running.
LAG_LIMIT_MS: Final = 5.0
# At this share of one core the process itself was the bottleneck; below it, with the lag, the
# machine did not give it the CPU it needed.
CPU_LIMIT: Final = 0.9


class ClientLoad(BaseModel):
    """One load process over one step: CPU used (`cpu_busy` of one core) and its event loop's
    lag (how late a timer that asked to run every `interval_ms` ran), in ms."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    process: int
    wall_s: float
    cpu_s: float
    cpu_busy: float
    interval_ms: float
    ticks: int
    lag_mean_ms: float
    lag_p99_ms: float
    lag_max_ms: float


def client_saturated(load: ClientLoad) -> bool:
    """Whether `load` says the process read what arrived late: its loop's mean lag reached
    `LAG_LIMIT_MS` (a loop that ran its timers that late ran its reads as late).

    >>> busy = ClientLoad(process=0, wall_s=10, cpu_s=9.8, cpu_busy=0.98, interval_ms=10,
    ...     ticks=500, lag_mean_ms=12, lag_p99_ms=50, lag_max_ms=80)
    >>> client_saturated(busy), client_saturated(busy.model_copy(update={"lag_mean_ms": 0.4}))
    (True, False)
    """
    return load.lag_mean_ms >= LAG_LIMIT_MS


class LoopProbe:
    """Measures the running loop's lag with a chain of timers, and the process's CPU time.

    Used as a context manager inside the loop (`with LoopProbe(process): ...`); `tick` is the
    timer's body, which a test drives with fake clocks instead of a loop.
    """

    def __init__(
        self,
        process: int,
        interval_ns: int = PROBE_INTERVAL_NS,
        now_ns: Callable[[], int] = time.perf_counter_ns,
        cpu_ns: Callable[[], int] = time.process_time_ns,
    ) -> None:
        self._process = process
        self._interval_ns = interval_ns
        self._now_ns = now_ns
        self._cpu_ns = cpu_ns
        self._start_ns = now_ns()
        self._start_cpu_ns = cpu_ns()
        self._due_ns = self._start_ns + interval_ns
        self._ticks = 0
        self._lag_sum_ns = 0
        self._lag_max_ns = 0
        self._buckets = [0] * (len(_LAG_BOUNDS_MS) + 1)
        self._handle: asyncio.TimerHandle | None = None

    def __enter__(self) -> Self:
        self._start_ns = self._now_ns()
        self._start_cpu_ns = self._cpu_ns()
        self._due_ns = self._start_ns + self._interval_ns
        self._handle = asyncio.get_running_loop().call_later(self._interval_ns / 1e9, self._fire)
        return self

    def __exit__(self, *_: object) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self.tick()
        delay_ns = max(0, self._due_ns - self._now_ns())
        self._handle = asyncio.get_running_loop().call_later(delay_ns / 1e9, self._fire)

    def tick(self) -> None:
        """Note how late this wake-up is, and when the next is due (never in the past: a loop
        blocked for several intervals counts one late wake-up, not a burst of them)."""
        now = self._now_ns()
        lag = max(0, now - self._due_ns)
        self._ticks += 1
        self._lag_sum_ns += lag
        self._lag_max_ns = max(self._lag_max_ns, lag)
        lag_ms = lag / 1e6
        bucket = next(
            (i for i, bound in enumerate(_LAG_BOUNDS_MS) if lag_ms <= bound), len(_LAG_BOUNDS_MS)
        )
        self._buckets[bucket] += 1
        self._due_ns = now + self._interval_ns

    def snapshot(self) -> ClientLoad:
        """The figures so far.

        >>> now, cpu = [0], [0]
        >>> probe = LoopProbe(3, interval_ns=10, now_ns=lambda: now[0], cpu_ns=lambda: cpu[0])
        >>> now[0], cpu[0] = 14, 7  # the first wake-up ran 4 ns late
        >>> probe.tick()
        >>> probe.snapshot().ticks, probe.snapshot().cpu_busy
        (1, 0.5)
        """
        wall_ns = max(0, self._now_ns() - self._start_ns)
        cpu_ns = max(0, self._cpu_ns() - self._start_cpu_ns)
        ticks = self._ticks
        return ClientLoad(
            process=self._process,
            wall_s=wall_ns / 1e9,
            cpu_s=cpu_ns / 1e9,
            cpu_busy=cpu_ns / wall_ns if wall_ns else 0.0,
            interval_ms=self._interval_ns / 1e6,
            ticks=ticks,
            lag_mean_ms=self._lag_sum_ns / ticks / 1e6 if ticks else 0.0,
            lag_p99_ms=self._p99_ms(),
            lag_max_ms=self._lag_max_ns / 1e6,
        )

    def _p99_ms(self) -> float:
        """The 99th percentile's bucket bound (the largest lag for the last bucket)."""
        if not self._ticks:
            return 0.0
        rank = 0.99 * self._ticks
        seen = 0
        for i, count in enumerate(self._buckets):
            seen += count
            if seen >= rank:
                bound = _LAG_BOUNDS_MS[i] if i < len(_LAG_BOUNDS_MS) else self._lag_max_ns / 1e6
                return min(bound, self._lag_max_ns / 1e6)
        return self._lag_max_ns / 1e6


__all__ = ["CPU_LIMIT", "LAG_LIMIT_MS", "ClientLoad", "LoopProbe", "client_saturated"]
