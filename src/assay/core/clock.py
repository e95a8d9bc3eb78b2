"""One monotonic clock for the whole run, injectable so timing logic is tested without sleeping."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """A monotonic nanosecond clock that can also wait until a point in its own time."""

    def now_ns(self) -> int:
        """The current monotonic time in nanoseconds."""
        ...

    async def sleep_until(self, deadline_ns: int) -> None:
        """Return at (or as soon as possible after) `deadline_ns`."""
        ...


class MonotonicClock:
    """The real clock: `time.perf_counter_ns`.

    `now_ns` is that function itself, not a method calling it: it is read several times a
    request, and a Python frame around it cost more than the reading.

    >>> MonotonicClock().now_ns is time.perf_counter_ns
    True
    """

    now_ns = staticmethod(time.perf_counter_ns)

    async def sleep_until(self, deadline_ns: int) -> None:
        delay = deadline_ns - self.now_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)


class Waiter(Protocol):
    """Waits until points in one clock's time; `close` releases what the waits held."""

    async def sleep_until(self, deadline_ns: int) -> None:
        """Return at (or as soon as possible after) `deadline_ns`."""
        ...

    def close(self) -> None:
        """Release what the waits held; no wait may follow."""
        ...


class ClockWaiter:
    """Waits with the clock's own `sleep_until` (holding nothing)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def sleep_until(self, deadline_ns: int) -> None:
        await self._clock.sleep_until(deadline_ns)

    def close(self) -> None:
        pass


def open_pacing_waiter(clock: Clock) -> Waiter:
    """The most precise way to wait on `clock`, for pacing: close it when the waits are over.

    For the real clock on Linux that is a timerfd, which wakes within the kernel's timer
    resolution where the loop's timer (uvloop's) rounds to the millisecond. Any other clock
    (a test's fake one, a clock offset to another machine's) waits as it always does.
    """
    if type(clock) is MonotonicClock:
        from assay.core.timer_fd import TimerFdWaiter  # ctypes only where it serves

        return TimerFdWaiter()
    return ClockWaiter(clock)
