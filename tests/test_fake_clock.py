"""The fake clock wakes sleepers in deadline order and never moves backwards."""

from __future__ import annotations

import asyncio

import pytest

from assay.testing import FakeClock


async def test_sleepers_wake_in_deadline_order_when_time_jumps() -> None:
    clock = FakeClock()
    woke: list[tuple[str, int]] = []

    async def sleeper(name: str, deadline: int) -> None:
        await clock.sleep_until(deadline)
        woke.append((name, clock.now_ns()))

    async with asyncio.TaskGroup() as group:
        group.create_task(sleeper("late", 300))
        group.create_task(sleeper("early", 100))
        group.create_task(clock.run_until_idle())
    assert woke == [("early", 100), ("late", 300)]


def test_clock_refuses_to_go_backwards() -> None:
    clock = FakeClock(start_ns=10)
    with pytest.raises(ValueError, match="backwards"):
        clock.set(5)
