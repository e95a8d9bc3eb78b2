"""A request now and then timed slow by a pause that was not its own keeps the builds on the loop;
slow builds that come close together move them off it (`assay.load.ahead.SLOW_SPACING`).

On a fake clock with the builds run inline, as in test_requests_ahead."""

from __future__ import annotations

from assay.load.ahead import (
    SLOW_BUILD_NS,
    SLOW_BUILDS,
    SLOW_SPACING,
    RequestBuilds,
    RequestsAhead,
)
from assay.testing import FakeClock
from tests.load.test_requests_ahead import InlineExecutor, TimedSource, _schedule


def _cost_every(gap: int) -> TimedSource:
    """Request `i` builds slow when `i` is a multiple of `gap`, quickly otherwise."""
    clock = FakeClock()
    return TimedSource(clock, lambda i: 2 * SLOW_BUILD_NS if i % gap == 0 else SLOW_BUILD_NS // 10)


async def test_a_closed_loop_keeps_building_on_the_loop_through_scattered_slow_builds() -> None:
    source = _cost_every(SLOW_SPACING + 1)
    executor = InlineExecutor()
    builds = RequestBuilds(source, source.clock, lambda _: executor, most_at_once=2)
    count = (SLOW_SPACING + 1) * (SLOW_BUILDS * 4)
    ids = [(await builds.request(index)).request_id for index in range(count)]
    builds.close()
    assert ids == [f"req-{index:08d}" for index in range(count)]
    assert not builds.off_the_loop
    assert executor.submitted == []


async def test_a_closed_loop_moves_off_the_loop_when_slow_builds_come_close_together() -> None:
    gap = SLOW_SPACING  # SLOW_SPACING - 1 quick builds between slow ones
    source = _cost_every(gap)
    executor = InlineExecutor()
    builds = RequestBuilds(source, source.clock, lambda _: executor, most_at_once=2)
    count = gap * SLOW_BUILDS + 5
    for index in range(count):
        await builds.request(index)
    builds.close()
    assert builds.off_the_loop
    moved_at = gap * (SLOW_BUILDS - 1) + 1  # the request after the third slow build
    assert [args[0] for args in executor.submitted] == list(range(moved_at, count))


async def test_an_open_loop_keeps_building_on_the_loop_through_scattered_slow_builds() -> None:
    source = _cost_every(SLOW_SPACING + 1)
    count = (SLOW_SPACING + 1) * (SLOW_BUILDS * 4)
    schedule = _schedule(count)
    executor = InlineExecutor()
    ahead = RequestsAhead(source, schedule, source.clock, lambda _: executor, most_at_once=2)
    ids = [(await ahead.request(index)).request_id for index, _ in schedule]
    ahead.close()
    assert ids == [f"req-{index:08d}" for index in range(count)]
    assert not ahead.ahead
    assert executor.submitted == []
