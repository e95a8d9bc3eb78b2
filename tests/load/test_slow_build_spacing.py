"""A request now and then timed slow by a pause that was not its own keeps the builds on the loop;
slow builds that come close together move them off it (`assay.load.ahead.SLOW_SPACING`).

On a fake clock with the builds run inline, as in test_requests_ahead."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from assay.core import GenerationRequest
from assay.load.ahead import (
    SLOW_BUILD_NS,
    SLOW_BUILDS,
    SLOW_SPACING,
    STALL_BUILD_NS,
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


class CpuTimedSource(TimedSource):
    """A `TimedSource` whose builds also spend `cpu_cost_ns(i)` of the building thread's CPU."""

    def __init__(self, wall_ns: Callable[[int], int], cpu_ns: Callable[[int], int]) -> None:
        super().__init__(FakeClock(), wall_ns)
        self.cpu = FakeClock()
        self._cpu_cost = cpu_ns

    def request(self, index: int) -> GenerationRequest:
        self.cpu.advance(self._cpu_cost(index))
        return super().request(index)


def _paused_every(gap: int) -> CpuTimedSource:
    """Every build is quick in CPU; each `gap`-th one is timed slow by a pause not its own."""
    return CpuTimedSource(
        lambda i: 2 * SLOW_BUILD_NS if i % gap == 0 else SLOW_BUILD_NS // 10,
        lambda _: SLOW_BUILD_NS // 10,
    )


async def test_builds_timed_slow_by_pauses_not_their_own_stay_on_the_loop() -> None:
    source = _paused_every(3)  # slow on the clock far closer together than SLOW_SPACING
    executor = InlineExecutor()
    builds = RequestBuilds(
        source, source.clock, lambda _: executor, most_at_once=2, cpu_ns=source.cpu.now_ns
    )
    for index in range(200):
        await builds.request(index)
    builds.close()
    assert not builds.off_the_loop
    assert executor.submitted == []


async def test_an_open_loop_ignores_pauses_not_its_builds_own() -> None:
    source = _paused_every(2)
    schedule = _schedule(100)
    executor = InlineExecutor()
    ahead = RequestsAhead(
        source, schedule, source.clock, lambda _: executor, most_at_once=2, cpu_ns=source.cpu.now_ns
    )
    for index, _ in schedule:
        await ahead.request(index)
    ahead.close()
    assert not ahead.ahead


@pytest.mark.parametrize("cost_ns", [2 * SLOW_BUILD_NS, STALL_BUILD_NS + 1])
async def test_builds_slow_in_their_own_cpu_move_off_the_loop(cost_ns: int) -> None:
    # The first is timed on the clock alone; the next slow in CPU too confirm it (a stall at the
    # first confirmed one, others once SLOW_BUILDS are counted).
    source = CpuTimedSource(lambda _: cost_ns, lambda _: cost_ns)
    executor = InlineExecutor()
    builds = RequestBuilds(
        source, source.clock, lambda _: executor, most_at_once=2, cpu_ns=source.cpu.now_ns
    )
    for index in range(10):
        await builds.request(index)
    builds.close()
    assert builds.off_the_loop
    on_the_loop = 2 if cost_ns > STALL_BUILD_NS else SLOW_BUILDS
    assert [args[0] for args in executor.submitted] == list(range(on_the_loop, 10))


async def test_a_stall_timed_on_the_clock_alone_waits_for_a_slow_build_to_confirm_it() -> None:
    # One 30 ms pause not the build's own, then builds quick on both clocks: all on the loop.
    source = CpuTimedSource(
        lambda i: STALL_BUILD_NS + 1 if i == 0 else SLOW_BUILD_NS // 10, lambda _: 1_000
    )
    executor = InlineExecutor()
    builds = RequestBuilds(
        source, source.clock, lambda _: executor, most_at_once=2, cpu_ns=source.cpu.now_ns
    )
    for index in range(100):
        await builds.request(index)
    builds.close()
    assert not builds.off_the_loop
