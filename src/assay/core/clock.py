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
    """The real clock: `time.perf_counter_ns`."""

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    async def sleep_until(self, deadline_ns: int) -> None:
        delay = deadline_ns - time.perf_counter_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
