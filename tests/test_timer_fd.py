"""The timerfd waiter never wakes before its target, holds one descriptor, falls back cleanly."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Coroutine
from typing import Any

import pytest
import uvloop

from assay.core.clock import ClockWaiter, MonotonicClock, open_pacing_waiter
from assay.core.timer_fd import TimerFd, TimerFdWaiter, open_timer_fd
from assay.testing import FakeClock

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timerfd is Linux's")
US = 1_000


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class CountingFactory:
    """Opens real timerfds (or fails, when told to) and keeps each one it opened."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.opened: list[TimerFd] = []

    def __call__(self) -> TimerFd:
        if self.fails:
            raise OSError("no timerfd here")
        timer = open_timer_fd()
        self.opened.append(timer)
        return timer


async def still_watched(timer: TimerFd) -> bool:
    """Whether a reader left on the loop takes the timer's expiry (uvloop's `remove_reader`
    does not say whether there was one, so ask the descriptor)."""
    timer.arm(time.perf_counter_ns())
    await asyncio.sleep(0.005)
    try:
        os.read(timer.fd, 8)
    except BlockingIOError:
        return True
    return False


def finishes_without_suspending(coroutine: Coroutine[Any, Any, None]) -> bool:
    try:
        coroutine.send(None)
    except StopIteration:
        return True
    coroutine.close()
    return False


@linux_only
async def test_wait_returns_at_or_after_its_target() -> None:
    waiter = TimerFdWaiter()
    try:
        for delay_ns in (1 * US, 300 * US, 1_500 * US, 3_000 * US):
            target_ns = time.perf_counter_ns() + delay_ns
            await waiter.sleep_until(target_ns)
            assert time.perf_counter_ns() >= target_ns
        assert not waiter.falls_back
    finally:
        waiter.close()


@linux_only
def test_one_timerfd_is_rearmed_for_many_sequential_waits_on_uvloop() -> None:
    factory = CountingFactory()

    async def many_waits() -> list[int]:
        waiter = TimerFdWaiter(factory)
        early: list[int] = []
        try:
            for _ in range(200):
                target_ns = time.perf_counter_ns() + 100 * US
                await waiter.sleep_until(target_ns)
                if time.perf_counter_ns() < target_ns:
                    early.append(target_ns)
            assert not await still_watched(factory.opened[0])
        finally:
            waiter.close()
        return early

    assert uvloop.run(many_waits()) == []
    assert len(factory.opened) == 1
    assert not is_open(factory.opened[0].fd)


@linux_only
async def test_a_cancelled_wait_removes_its_reader_and_close_releases_the_fd() -> None:
    before = open_fds()
    factory = CountingFactory()
    waiter = TimerFdWaiter(factory)
    waiting = asyncio.create_task(waiter.sleep_until(time.perf_counter_ns() + 10**10))
    await asyncio.sleep(0)
    fd = factory.opened[0].fd
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not await still_watched(factory.opened[0])
    # The cancelled arming does not leak into the next wait: it waits for its own target.
    target_ns = time.perf_counter_ns() + 200 * US
    await waiter.sleep_until(target_ns)
    assert time.perf_counter_ns() >= target_ns
    waiter.close()
    assert not is_open(fd)
    assert open_fds() == before


@linux_only
def test_a_cancelled_wait_on_uvloop_leaves_no_reader_and_no_open_fd() -> None:
    before = open_fds()
    factory = CountingFactory()

    async def cancel_a_wait() -> bool:
        waiter = TimerFdWaiter(factory)
        try:
            waiting = asyncio.create_task(waiter.sleep_until(time.perf_counter_ns() + 10**10))
            await asyncio.sleep(0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            return await still_watched(factory.opened[0])
        finally:
            waiter.close()

    assert uvloop.run(cancel_a_wait()) is False
    assert not is_open(factory.opened[0].fd)
    assert open_fds() == before


async def test_a_failing_factory_falls_back_to_the_loop_timer_once() -> None:
    calls = 0

    def failing() -> TimerFd:
        nonlocal calls
        calls += 1
        raise OSError("no timerfd here")

    waiter = TimerFdWaiter(failing)
    for _ in range(3):
        target_ns = time.perf_counter_ns() + 500 * US
        await waiter.sleep_until(target_ns)
        # The loop's timer waited (it may wake early by its rounding, which the runner re-sleeps).
        assert time.perf_counter_ns() >= target_ns - 1_000 * US
    waiter.close()
    assert waiter.falls_back
    assert calls == 1


class LoopWithoutReaders(asyncio.SelectorEventLoop):
    """A loop that cannot watch file descriptors (as the Proactor loop on Windows)."""

    # The stub's signature is generic over the callback's arguments; this one takes none.
    def add_reader(self, *args: Any) -> None:  # type: ignore[override]
        raise NotImplementedError


@linux_only
def test_a_loop_that_cannot_watch_fds_falls_back_and_closes_the_timerfd() -> None:
    before = open_fds()
    factory = CountingFactory()
    waiter = TimerFdWaiter(factory)
    with asyncio.Runner(loop_factory=LoopWithoutReaders) as runner:
        runner.run(waiter.sleep_until(time.perf_counter_ns() + 200 * US))
    waiter.close()
    assert waiter.falls_back
    assert not is_open(factory.opened[0].fd)
    assert open_fds() == before


async def test_a_past_target_returns_at_once_without_opening_a_timerfd() -> None:
    factory = CountingFactory()
    waiter = TimerFdWaiter(factory)
    assert finishes_without_suspending(waiter.sleep_until(time.perf_counter_ns() - 1))
    assert factory.opened == []
    assert not waiter.falls_back


async def test_only_the_real_clock_paces_on_a_timerfd() -> None:
    assert isinstance(open_pacing_waiter(MonotonicClock()), TimerFdWaiter)
    clock = FakeClock(start_ns=0)
    waiter = open_pacing_waiter(clock)
    assert isinstance(waiter, ClockWaiter)
    waiting = asyncio.create_task(waiter.sleep_until(100))
    await asyncio.sleep(0)
    assert not waiting.done()
    clock.advance(100)
    await waiting
    waiter.close()
