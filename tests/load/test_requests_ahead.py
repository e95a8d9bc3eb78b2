"""Requests built ahead of their send times once building them proves slow (issue 22: image
requests encoded at their send time were dispatch lag). On a fake clock, with the builds run
inline by a stand-in executor so every test is deterministic; one end-to-end run against the
mock sends image requests on a constant schedule with every request accounted for."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from assay.core import Endpoint, GenerationRequest
from assay.load.ahead import (
    AHEAD,
    GROW_AFTER,
    SLOW_BUILD_NS,
    SLOW_BUILDS,
    STALL_BUILD_NS,
    BuildThreads,
    Lookahead,
    RequestBuilds,
    RequestsAhead,
)
from assay.testing import FakeClock
from tests.cli.cli_harness import assert_every_request_accounted, read_record_lines, run_fast


class InlineExecutor(Executor):
    """Runs each build at once, on the caller's thread, and counts them."""

    def __init__(self) -> None:
        self.submitted: list[Any] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted.append(args)
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:
            future.set_exception(error)
        return future


@dataclass
class TimedSource:
    """Builds request `i` in `cost_ns(i)` of fake time; keeps the indices it built, in order."""

    clock: FakeClock
    cost_ns: Callable[[int], int]
    built: list[int] = field(default_factory=list)
    broken: int | None = None

    def request(self, index: int) -> GenerationRequest:
        self.clock.advance(self.cost_ns(index))
        self.built.append(index)
        if index == self.broken:
            raise ValueError(f"row {index} cannot be built")
        return GenerationRequest(
            request_id=f"req-{index:08d}",
            endpoint=Endpoint.chat,
            model="m",
            messages=({"role": "user", "content": f"q {index}"},),
        )

    def size(self) -> int | None:
        return None


def _schedule(count: int) -> Lookahead:
    return Lookahead(iter([(index, index * 1_000_000) for index in range(count)]))


def _slow_builds(
    count: int, executor: Executor, *, broken: int | None = None
) -> tuple[TimedSource, Lookahead, RequestsAhead]:
    """A schedule of `count` requests that each take 1 ms of fake time to build (slow), built
    ahead on `executor`, two at once at most."""
    clock = FakeClock()
    source = TimedSource(clock, lambda _: 2 * SLOW_BUILD_NS, broken=broken)
    schedule = _schedule(count)
    ahead = RequestsAhead(source, schedule, clock, lambda _: executor, most_at_once=2)
    return source, schedule, ahead


async def _take_all(ahead: RequestsAhead, schedule: Lookahead) -> list[str]:
    return [(await ahead.request(index)).request_id for index, _ in schedule]


async def test_fast_builds_stay_on_the_loop() -> None:
    clock = FakeClock()
    source = TimedSource(clock, lambda _: SLOW_BUILD_NS // 10)
    executor = InlineExecutor()
    schedule = _schedule(50)
    ahead = RequestsAhead(source, schedule, clock, lambda _: executor, most_at_once=2)
    ids = await _take_all(ahead, schedule)
    ahead.close()
    assert ids == [f"req-{index:08d}" for index in range(50)]
    assert not ahead.ahead
    assert executor.submitted == []


async def test_slow_builds_move_ahead_and_every_request_is_built_once_in_order() -> None:
    executor = InlineExecutor()
    source, schedule, ahead = _slow_builds(100, executor)
    ids = await _take_all(ahead, schedule)
    ahead.close()
    assert ids == [f"req-{index:08d}" for index in range(100)]
    assert ahead.ahead
    # The first SLOW_BUILDS on the loop, every later one ahead, none twice.
    assert source.built == list(range(100))
    assert [args[0] for args in executor.submitted] == list(range(SLOW_BUILDS, 100))


async def test_builds_ahead_go_no_further_than_the_window() -> None:
    executor = InlineExecutor()
    source, schedule, ahead = _slow_builds(1_000, executor)
    for _ in range(30):
        index, _ = next(schedule)
        await ahead.request(index)
    for _ in range(100):  # every finished build has started the next one it may
        await asyncio.sleep(0)
    assert max(source.built) == 29 + AHEAD
    ahead.close()


class HeldExecutor(Executor):
    """Builds that finish only when the test lets them: `finish` runs the oldest."""

    def __init__(self) -> None:
        self.held: list[tuple[Future[Any], Callable[[], Any]]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.held.append((future, lambda: fn(*args, **kwargs)))
        return future

    def finish(self) -> None:
        future, build = self.held.pop(0)
        future.set_result(build())


async def _take_waiting(ahead: RequestsAhead, index: int, executor: HeldExecutor) -> int:
    """Take request `index` when its build is not done yet; the builds running meanwhile."""
    taking = asyncio.create_task(ahead.request(index))
    await asyncio.sleep(0)
    running = len(executor.held)
    while not taking.done():
        executor.finish()
        for _ in range(5):
            await asyncio.sleep(0)
    await taking
    return running


async def test_builds_that_fall_behind_run_more_at_once_up_to_the_cap() -> None:
    executor = HeldExecutor()
    _source, schedule, ahead = _slow_builds(1_000, executor)
    for _ in range(SLOW_BUILDS):
        await ahead.request(next(schedule)[0])
    assert ahead.ahead
    assert (ahead.at_once, len(executor.held)) == (1, 1)  # one build at a time to begin with
    # Requests that each had to wait for their build, GROW_AFTER in a row: one more at once.
    for _ in range(GROW_AFTER - 1):
        assert await _take_waiting(ahead, next(schedule)[0], executor) == 1
    assert ahead.at_once == 1
    assert await _take_waiting(ahead, next(schedule)[0], executor) == 2
    assert ahead.at_once == 2
    # Falling behind for longer never takes it past the cap.
    for _ in range(3 * GROW_AFTER):
        assert await _take_waiting(ahead, next(schedule)[0], executor) <= 2
    assert ahead.at_once == 2
    ahead.close()


async def test_a_start_that_catches_up_keeps_one_build_at_a_time() -> None:
    executor = HeldExecutor()
    _source, schedule, ahead = _slow_builds(1_000, executor)
    for _ in range(SLOW_BUILDS):
        await ahead.request(next(schedule)[0])
    for _ in range(GROW_AFTER - 1):  # behind at first...
        await _take_waiting(ahead, next(schedule)[0], executor)
    while executor.held:  # ...then the builds get ahead of the schedule
        executor.finish()
        await asyncio.sleep(0)
    await ahead.request(next(schedule)[0])
    for _ in range(GROW_AFTER - 1):
        await _take_waiting(ahead, next(schedule)[0], executor)
    assert ahead.at_once == 1
    ahead.close()


async def test_what_was_looked_at_ahead_is_still_left_in_the_schedule() -> None:
    # A step that stops counts what its schedule still owed from what is left of it: entries
    # looked at (and built) ahead are still there to be counted.
    _source, schedule, ahead = _slow_builds(40, InlineExecutor())
    for _ in range(5):
        index, _ = next(schedule)
        await ahead.request(index)
    ahead.close()
    assert [index for index, _ in schedule] == list(range(5, 40))


async def test_a_build_that_fails_ahead_fails_where_its_request_is_taken() -> None:
    _source, schedule, ahead = _slow_builds(20, InlineExecutor(), broken=6)
    taken = [await ahead.request(next(schedule)[0]) for _ in range(6)]
    with pytest.raises(ValueError, match="row 6"):
        await ahead.request(next(schedule)[0])
    ahead.close()
    assert [request.request_id for request in taken] == [f"req-{i:08d}" for i in range(6)]


async def test_a_failed_build_never_taken_is_dropped_quietly() -> None:
    source, schedule, ahead = _slow_builds(30, InlineExecutor(), broken=10)
    for _ in range(5):
        index, _ = next(schedule)
        await ahead.request(index)
    for _ in range(100):  # the builds ahead reach the broken row
        await asyncio.sleep(0)
    assert 10 in source.built
    ahead.close()  # the failed build of index 10 is retrieved, not left to warn


def test_image_requests_on_a_schedule_are_all_accounted_for(tmp_path: Path) -> None:
    # PNG images take milliseconds each to encode: the run builds them ahead on a thread.
    result = run_fast(
        tmp_path / "run", "--processes", "1", "--profile", "constant", "--rate", "40",
        "--max-requests", "24", "--images", "1", "--image-size", "256x256",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path / "run")
    assert report.steps[0].scheduled == 24
    assert report.steps[0].metrics.outcomes.dispatched == 24
    ids = sorted(line["id"] for line in read_record_lines(tmp_path / "run"))
    assert ids == [f"req-{index:08d}" for index in range(24)]


def test_a_process_that_stops_does_not_wait_for_a_build_still_running() -> None:
    # Issue 37: a run stopped while images were encoding ahead waited for them (seconds each)
    # before it could exit. Here a build never ends: the process exits all the same.
    program = (
        "import threading\n"
        "from assay.load.ahead import BuildThreads\n"
        "never = threading.Event()\n"
        "threads = BuildThreads(2)\n"
        "running = threads.submit(never.wait)\n"
        "queued = [threads.submit(never.wait) for _ in range(3)]\n"
        "threads.shutdown(wait=False, cancel_futures=True)\n"
        "assert all(future.cancelled() for future in queued[1:])\n"
        "print('left', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "left\n"


def test_build_threads_hand_back_results_and_errors() -> None:
    threads = BuildThreads(2)

    def build(index: int) -> int:
        if index == 3:
            raise ValueError("row 3 cannot be built")
        return index * 10

    futures = [threads.submit(build, index) for index in range(5)]
    assert [future.result(timeout=30) for i, future in enumerate(futures) if i != 3] == [
        0,
        10,
        20,
        40,
    ]
    with pytest.raises(ValueError, match="row 3"):
        futures[3].result(timeout=30)
    threads.shutdown(wait=True)
    with pytest.raises(RuntimeError, match="after shutdown"):
        threads.submit(build, 1)


async def test_one_build_that_stalls_the_loop_moves_the_builds_ahead_at_once() -> None:
    # Issue 37: three image builds of seconds each held the loop past --max-seconds and Ctrl-C.
    clock = FakeClock()
    source = TimedSource(clock, lambda _: STALL_BUILD_NS + 1)
    executor = InlineExecutor()
    schedule = _schedule(10)
    ahead = RequestsAhead(source, schedule, clock, lambda _: executor, most_at_once=2)
    ids = await _take_all(ahead, schedule)
    ahead.close()
    assert ids == [f"req-{index:08d}" for index in range(10)]
    assert ahead.ahead
    assert [args[0] for args in executor.submitted] == list(range(1, 10))


async def test_a_closed_loop_builds_on_the_loop_while_builds_are_quick() -> None:
    clock = FakeClock()
    source = TimedSource(clock, lambda _: SLOW_BUILD_NS // 10)
    executor = InlineExecutor()
    builds = RequestBuilds(source, clock, lambda _: executor, most_at_once=2)
    ids = [(await builds.request(index)).request_id for index in range(50)]
    builds.close()
    assert ids == [f"req-{index:08d}" for index in range(50)]
    assert not builds.off_the_loop
    assert executor.submitted == []


@pytest.mark.parametrize(
    ("cost_ns", "on_the_loop"), [(2 * SLOW_BUILD_NS, SLOW_BUILDS), (STALL_BUILD_NS + 1, 1)]
)
async def test_a_closed_loop_builds_off_the_loop_once_builds_prove_slow(
    cost_ns: int, on_the_loop: int
) -> None:
    clock = FakeClock()
    source = TimedSource(clock, lambda _: cost_ns)
    executor = InlineExecutor()
    builds = RequestBuilds(source, clock, lambda _: executor, most_at_once=2)
    ids = [(await builds.request(index)).request_id for index in range(20)]
    builds.close()
    assert ids == [f"req-{index:08d}" for index in range(20)]
    assert builds.off_the_loop
    assert [args[0] for args in executor.submitted] == list(range(on_the_loop, 20))


async def test_a_request_built_here_is_none_once_builds_are_off_the_loop() -> None:
    # The closed loop takes `here`'s request, and awaits `request` only when `here` has none.
    clock = FakeClock()
    source = TimedSource(clock, lambda _: 2 * SLOW_BUILD_NS)
    executor = InlineExecutor()
    builds = RequestBuilds(source, clock, lambda _: executor, most_at_once=2)
    here = [builds.here(index) for index in range(SLOW_BUILDS + 2)]
    assert [request.request_id for request in here[:SLOW_BUILDS] if request is not None] == [
        f"req-{index:08d}" for index in range(SLOW_BUILDS)
    ]
    assert here[SLOW_BUILDS:] == [None, None]
    assert builds.off_the_loop
    assert (await builds.request(SLOW_BUILDS)).request_id == f"req-{SLOW_BUILDS:08d}"
    builds.close()
    assert [args[0] for args in executor.submitted] == [SLOW_BUILDS]


async def test_a_closed_loop_stream_stops_waiting_for_its_build_when_cancelled() -> None:
    clock = FakeClock()
    source = TimedSource(clock, lambda _: STALL_BUILD_NS + 1)
    executor = HeldExecutor()
    builds = RequestBuilds(source, clock, lambda _: executor, most_at_once=2)
    await builds.request(0)  # on the loop, and slow enough to move the rest off it
    waiting = asyncio.create_task(builds.request(1))
    await asyncio.sleep(0)
    assert len(executor.held) == 1  # its build has not finished
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    builds.close()
