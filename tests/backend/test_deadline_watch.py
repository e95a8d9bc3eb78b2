"""The deadline watch arms one timer per request, never later than the earliest deadline, and
cancels the request's task when a deadline passes, as an `asyncio.timeout` scope would."""

from __future__ import annotations

import asyncio

import pytest

from assay.backend import Timeouts
from assay.backend.deadlines import DeadlineWatch
from assay.core.diagnostics import DiagnosticCode


def _task() -> asyncio.Task[object]:
    task = asyncio.current_task()
    assert task is not None
    return task


def _fire(watch: DeadlineWatch) -> None:
    """What the watch's timer does when it fires, now."""
    armed = watch._handle
    assert armed is not None
    armed.cancel()
    watch._check()


async def test_first_byte_keeps_the_timer_armed_at_start() -> None:
    loop = asyncio.get_running_loop()
    watch = DeadlineWatch(Timeouts(first_token_s=60.0, idle_s=30.0, total_s=600.0), loop)
    watch.start(_task())
    armed = watch._handle
    assert armed is not None
    # No idle deadline can come before start + idle: the timer is there already. (uvloop
    # keeps a timer's time in whole milliseconds: a rounding's worth of slack.)
    assert armed.when() <= loop.time() + 30.0 + 1e-3
    watch.saw_bytes(loop.time())
    assert watch._handle is armed
    watch.stop()
    await asyncio.sleep(0)
    assert not watch.cut


async def test_timer_that_fires_before_any_deadline_rearms_for_the_next() -> None:
    loop = asyncio.get_running_loop()
    watch = DeadlineWatch(Timeouts(first_token_s=60.0, idle_s=0.05, total_s=600.0), loop)
    watch.start(_task())
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
        watch.start(_task())
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
    watch.start(_task())
    armed = watch._handle
    assert armed is not None
    assert armed.when() >= before + 30.0 - 1e-3  # the idle bound, not the first token's 5 s
    watch.stop()
    await asyncio.sleep(0)


async def test_a_passed_deadline_cancels_the_task_and_is_the_cut() -> None:
    loop = asyncio.get_running_loop()
    watch = DeadlineWatch(Timeouts(first_token_s=0.01, idle_s=30.0, total_s=600.0), loop)
    task = _task()
    watch.start(task)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.sleep(5)
    watch.stop()
    assert watch.expired is DiagnosticCode.timeout_first_token
    assert watch.cut
    assert task.cancelling() == 0  # the watch's cancellation taken back


async def test_a_cancellation_from_elsewhere_is_not_the_cut() -> None:
    loop = asyncio.get_running_loop()
    watch = DeadlineWatch(Timeouts(first_token_s=60.0, idle_s=30.0, total_s=600.0), loop)
    task = _task()
    watch.start(task)
    loop.call_soon(task.cancel)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.sleep(5)
    watch.stop()
    assert not watch.cut
    assert task.uncancel() == 0  # the other cancellation stands until its owner takes it


async def test_a_deadline_with_a_cancellation_from_elsewhere_is_not_the_cut() -> None:
    loop = asyncio.get_running_loop()
    # A total deadline within the watch's slack: passed as soon as the timer looks.
    watch = DeadlineWatch(Timeouts(first_token_s=60.0, idle_s=30.0, total_s=1e-4), loop)
    task = _task()
    watch.start(task)
    _fire(watch)  # the timer fires: the task's cancellation is due next turn
    loop.call_soon(task.cancel)  # and the run cancels the request in that same turn
    with pytest.raises(asyncio.CancelledError):
        await asyncio.sleep(5)
    watch.stop()
    assert watch.expired is DiagnosticCode.timeout_total
    assert not watch.cut  # as `asyncio.timeout` would: the other cancellation wins
    assert task.cancelling() >= 1  # it stands until its owner takes it back
    while task.uncancel():
        pass


async def test_a_deadline_cancellation_due_is_dropped_by_stop() -> None:
    loop = asyncio.get_running_loop()
    # A total deadline within the watch's slack: passed as soon as the timer looks.
    watch = DeadlineWatch(Timeouts(first_token_s=60.0, idle_s=30.0, total_s=1e-4), loop)
    task = _task()
    watch.start(task)
    _fire(watch)  # the timer fires: the cancellation is due next turn
    assert watch.expired is DiagnosticCode.timeout_total
    watch.stop()  # the request ended in the same turn: nothing is cancelled
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not watch.cut
    assert task.cancelling() == 0
