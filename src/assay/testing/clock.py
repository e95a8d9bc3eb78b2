"""A deterministic clock for tests: time moves only when a test or a sleeper moves it."""

from __future__ import annotations

import asyncio
import heapq
import itertools


class FakeClock:
    """A `Clock` whose time advances only through `advance` or pending sleeps.

    `sleep_until` parks the caller until the fake time reaches its deadline; `advance` moves
    time forward and wakes every sleeper that is due, in deadline order. `run_until_idle`
    lets the event loop settle and jumps to the next deadline, so paced code runs instantly.

    >>> clock = FakeClock(start_ns=100)
    >>> clock.advance(50)
    >>> clock.now_ns()
    150
    """

    def __init__(self, start_ns: int = 0) -> None:
        self._now_ns = start_ns
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now_ns(self) -> int:
        return self._now_ns

    async def sleep_until(self, deadline_ns: int) -> None:
        if deadline_ns <= self._now_ns:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (deadline_ns, next(self._order), future))
        await future

    def advance(self, delta_ns: int) -> None:
        """Move time forward by `delta_ns` and wake the sleepers that are due."""
        self.set(self._now_ns + delta_ns)

    def set(self, now_ns: int) -> None:
        """Move time to `now_ns` (never backwards) and wake the sleepers that are due."""
        if now_ns < self._now_ns:
            raise ValueError("a monotonic clock does not go backwards")
        self._now_ns = now_ns
        while self._sleepers and self._sleepers[0][0] <= now_ns:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def next_deadline_ns(self) -> int | None:
        """The earliest pending sleeper's deadline, if any."""
        return self._sleepers[0][0] if self._sleepers else None

    async def run_until_idle(self, max_steps: int = 100_000) -> None:
        """Let tasks run, jumping time to each next deadline, until nobody sleeps on this clock.

        Bounded by `max_steps` jumps so a test can never spin forever.
        """
        for _ in range(max_steps):
            for _ in range(20):
                await asyncio.sleep(0)
            deadline = self.next_deadline_ns
            if deadline is None:
                return
            self.set(max(deadline, self._now_ns))
        raise RuntimeError(f"clock still busy after {max_steps} steps")
