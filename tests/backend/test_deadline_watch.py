"""The deadline watch arms one timer per request, never later than the earliest deadline."""

from __future__ import annotations

import asyncio

from assay.backend import Timeouts
from assay.backend.deadlines import DeadlineWatch


async def test_first_byte_keeps_the_timer_armed_at_start() -> None:
    loop = asyncio.get_running_loop()
    watch = DeadlineWatch(Timeouts(first_token_s=60.0, idle_s=30.0, total_s=600.0), loop)
    async with asyncio.timeout(None) as scope:
        watch.start(scope)
        armed = watch._handle
        assert armed is not None
        # No idle deadline can come before start + idle: the timer is there already. (uvloop
        # keeps a timer's time in whole milliseconds: a rounding's worth of slack.)
        assert armed.when() <= loop.time() + 30.0 + 1e-3
        watch.saw_bytes(loop.time())
        assert watch._handle is armed
        watch.stop()
        await asyncio.sleep(0)


async def test_timer_that_fires_before_any_deadline_rearms_for_the_next() -> None:
    loop = asyncio.get_running_loop()
    watch = DeadlineWatch(Timeouts(first_token_s=60.0, idle_s=0.05, total_s=600.0), loop)
    async with asyncio.timeout(None) as scope:
        watch.start(scope)
        await asyncio.sleep(0.1)  # the timer fired at start + idle, before any byte came
        assert watch.expired is None
        handle = watch._handle
        assert handle is not None
        assert handle.when() > loop.time() + 50.0  # now the first-token deadline
        watch.stop()


async def test_timer_is_armed_at_the_earliest_of_the_three_deadlines() -> None:
    loop = asyncio.get_running_loop()
    cases = (
        (Timeouts(first_token_s=5.0, idle_s=30.0, total_s=600.0), 5.0),
        (Timeouts(first_token_s=60.0, idle_s=30.0, total_s=20.0), 20.0),
        (Timeouts(first_token_s=60.0, idle_s=30.0, total_s=600.0), 30.0),
    )
    for timeouts, first_s in cases:
        before = loop.time()
        watch = DeadlineWatch(timeouts, loop)
        async with asyncio.timeout(None) as scope:
            watch.start(scope)
            armed = watch._handle
            assert armed is not None
            # uvloop keeps a timer's time in whole milliseconds: a rounding's worth of slack.
            assert before + first_s - 1e-3 <= armed.when() <= loop.time() + first_s + 1e-3
            watch.stop()
            await asyncio.sleep(0)


async def test_a_token_seen_before_the_start_drops_the_first_token_deadline() -> None:
    loop = asyncio.get_running_loop()
    watch = DeadlineWatch(Timeouts(first_token_s=5.0, idle_s=30.0, total_s=600.0), loop)
    watch.token_seen = True
    before = loop.time()
    async with asyncio.timeout(None) as scope:
        watch.start(scope)
        armed = watch._handle
        assert armed is not None
        assert armed.when() >= before + 30.0 - 1e-3  # the idle bound, not the first token's 5 s
        watch.stop()
        await asyncio.sleep(0)
