"""Nothing scheduled goes unaccounted: what an open-loop schedule owed and never sent is counted,
and errors reach the parent as they happen (issue 10, items 5 and 6). All on a fake clock.

Every open-loop profile owes it, replay included (issue 24: a replay step reported no
`scheduled`/`not_sent` at all, so a client that fell behind a trace went unseen).
"""

from __future__ import annotations

import asyncio
import typing
from dataclasses import dataclass

import pytest
from returns.result import Result

from assay.core import GenerationRequest, GenerationResponse, UnusableResponse
from assay.data.source import RequestSource
from assay.load.progress import ProgressMessage
from assay.load.step_runner import OWED_GRACE_NS, StepWork, slice_owed
from assay.spec.constraints import Constraints, StopReason
from assay.spec.load import (
    Concurrent,
    Constant,
    Pacing,
    Poisson,
    ProfileKind,
    RampUp,
    RateRamp,
    Replay,
    StepLoad,
    pacing,
)
from assay.testing import FakeClock
from tests.load.profile_examples import STEP_KINDS, example_step_load
from tests.load.test_step_runner import (
    MS,
    FakeServer,
    KeepingSink,
    NumberedSource,
    assert_accounted,
    drive_step,
    run_on_fake_clock,
)


@dataclass(frozen=True)
class SteadyTrace(NumberedSource):
    """A trace of `count` requests, one every `gap_ns` (at speed 1)."""

    gap_ns: int = MS

    def offset_ns(self, index: int) -> int:
        return index * self.gap_ns


@dataclass
class SlowClient:
    """A server in front of a client that spends `cost_ns` of (fake) CPU time on every send:
    the clock moves on while the send runs, as it does when one process cannot keep up."""

    server: FakeServer
    cost_ns: int

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        self.server.clock.advance(self.cost_ns)
        return await self.server.resolve(request)


async def run_slow_client(
    load: StepLoad,
    constraints: Constraints,
    cost_ns: int,
    *,
    source: RequestSource | None = None,
    process: int = 0,
    processes: int = 1,
) -> tuple[int | None, int, int]:
    clock = FakeClock()
    client = SlowClient(FakeServer(clock, latency_ns=10 * MS), cost_ns)
    work = StepWork(0, load, constraints, 1, process, processes, start_ns=0)
    stepped = await drive_step(
        work,
        clock,
        resolve=client.resolve,
        sink_factory=KeepingSink,
        source=source,
        max_steps=100_000,
    )
    result = stepped
    assert_accounted(result)
    return result.scheduled, result.totals.dispatched, result.not_sent


async def test_a_client_that_falls_behind_counts_what_it_never_sent() -> None:
    # 1,000 req/s for 1 s owes the requests due before the deadline, less the last 2 ms (timer
    # rounding: see OWED_GRACE_NS). Each send costs the client 2 ms, so it sends about half of
    # them before the deadline stops dispatching; the rest were owed and never sent.
    scheduled, dispatched, not_sent = await run_slow_client(
        Constant(rate=1000), Constraints(max_seconds=1), cost_ns=2 * MS
    )
    assert scheduled == 1000 - OWED_GRACE_NS // MS
    assert dispatched + not_sent == scheduled
    assert 400 <= dispatched <= 600
    assert not_sent >= 400


async def test_a_poisson_client_that_falls_behind_counts_what_it_never_sent() -> None:
    scheduled, dispatched, not_sent = await run_slow_client(
        Poisson(rate=1000, seed=2), Constraints(max_seconds=1), cost_ns=2 * MS
    )
    assert scheduled is not None
    assert 900 <= scheduled <= 1100
    assert dispatched + not_sent == scheduled
    assert not_sent >= 300


async def test_a_replay_that_falls_behind_counts_what_it_never_sent_as_constant_does() -> None:
    # Issue 24. A trace with a request every 2 ms replayed at speed 2 is due every 1 ms, as
    # constant 1,000 req/s is; the same slow client owes, sends and leaves unsent the same.
    trace = SteadyTrace(count=2_000, gap_ns=2 * MS)
    replayed = await run_slow_client(
        Replay(speed=2), Constraints(max_seconds=1), cost_ns=2 * MS, source=trace
    )
    constant = await run_slow_client(
        Constant(rate=1000),
        Constraints(max_seconds=1),
        cost_ns=2 * MS,
        source=NumberedSource(count=2_000),
    )
    scheduled, dispatched, not_sent = replayed
    assert scheduled == 1000 - OWED_GRACE_NS // MS
    assert dispatched + not_sent == scheduled
    assert not_sent >= 400
    assert replayed == constant


async def test_a_replay_owes_no_more_than_its_trace() -> None:
    # 800 requests due in the first 0.8 s of a 1 s step: all of them were owed, about half sent.
    scheduled, dispatched, not_sent = await run_slow_client(
        Replay(), Constraints(max_seconds=1), cost_ns=2 * MS, source=SteadyTrace(count=800)
    )
    assert scheduled == 800
    assert dispatched + not_sent == scheduled
    assert 400 <= dispatched <= 600


async def test_replay_slices_that_fall_behind_owe_together_what_one_process_owes() -> None:
    # Due every 1 ms, each send costing 4 ms: one process, and each of two, falls behind, so
    # each owes exactly its requests due before the deadline (less the grace).
    trace = SteadyTrace(count=2_000)
    alone, *_ = await run_slow_client(
        Replay(), Constraints(max_seconds=1), cost_ns=4 * MS, source=trace
    )
    assert alone == 1000 - OWED_GRACE_NS // MS
    parts = [
        await run_slow_client(
            Replay(),
            Constraints(max_seconds=1),
            cost_ns=4 * MS,
            source=trace,
            process=process,
            processes=2,
        )
        for process in range(2)
    ]
    for scheduled, dispatched, not_sent in parts:
        assert scheduled is not None
        assert dispatched + not_sent == scheduled
        assert not_sent > 0
    assert sum(scheduled or 0 for scheduled, _, _ in parts) == alone


def test_a_lost_replay_slice_owed_what_a_constant_slice_with_its_times_owed() -> None:
    # What the parent counts for a slice whose process was lost (see `slice_owed`).
    trace, numbered = SteadyTrace(count=2_000, gap_ns=2 * MS), NumberedSource(count=2_000)
    for end_ns in (1_000 * MS, None):
        owed = [
            slice_owed(StepWork(0, load, Constraints(), 1, 1, 2, 0), source, 2_000, end_ns)
            for load, source in ((Replay(speed=2), trace), (Constant(rate=1000), numbered))
        ]
        assert owed[0] == owed[1] == (499 if end_ns else 1_000)


def _step_loads(kind: ProfileKind) -> tuple[StepLoad, ...]:
    """Step loads of profile `kind`, built from the examples its fields declare
    (`tests.load.profile_examples`), and again with bursty gaps when it takes a burstiness;
    none for a sweep or a capacity search, whose steps are the others'."""
    if kind not in STEP_KINDS:
        return ()
    load = example_step_load(kind)
    if "burstiness" not in type(load).model_fields:
        return (load,)
    return load, example_step_load(kind, burstiness=0.5)


async def test_every_open_loop_profile_reports_what_it_owed_and_no_closed_loop_does() -> None:
    loads = [load for kind in typing.get_args(ProfileKind) for load in _step_loads(kind)]
    assert {type(load) for load in loads} == set(typing.get_args(StepLoad))
    for load in loads:
        result = await run_on_fake_clock(
            load, Constraints(max_requests=4), FakeServer(FakeClock()), source=SteadyTrace()
        )
        assert (result.scheduled is not None) == (pacing(load) is Pacing.open_loop), load.kind
        assert result.totals.dispatched + result.not_sent == (result.scheduled or 4), load.kind


@pytest.mark.parametrize(
    "load",
    [
        Constant(rate=1000, burstiness=0.5),
        Poisson(rate=1000, seed=2, burstiness=0.3),
        RampUp(ramp=RateRamp(curve="linear", start_rate=100, end_rate=1900, duration_s=1)),
        RampUp(
            ramp=RateRamp(curve="exponential", start_rate=100, end_rate=3000, duration_s=1),
            burstiness=0.5,
        ),
    ],
)
async def test_bursty_and_ramped_clients_that_fall_behind_owe_what_their_schedule_owed(
    load: Constant | Poisson | RampUp,
) -> None:
    # The same accounting as constant: what the schedule had due before the deadline (less the
    # grace) is owed, exactly, and each owed request was dispatched or counted as not sent.
    scheduled, dispatched, not_sent = await run_slow_client(
        load, Constraints(max_seconds=1), cost_ns=2 * MS
    )
    work = StepWork(0, load, Constraints(max_seconds=1), 1, 0, 1, start_ns=0)
    assert scheduled == slice_owed(work, NumberedSource(), None, end_ns=1_000 * MS)
    assert scheduled is not None
    assert scheduled > 800  # each schedule offers 850 to 1,000 requests in its second
    assert dispatched + not_sent == scheduled
    assert not_sent >= 300


async def test_a_client_that_keeps_up_owes_nothing() -> None:
    scheduled, dispatched, not_sent = await run_slow_client(
        Constant(rate=100), Constraints(max_seconds=1), cost_ns=1 * MS
    )
    assert scheduled == dispatched == 100
    assert not_sent == 0


async def test_a_schedule_cut_by_max_requests_owes_only_its_budget() -> None:
    scheduled, dispatched, not_sent = await run_slow_client(
        Constant(rate=1000), Constraints(max_requests=50), cost_ns=2 * MS
    )
    assert scheduled == dispatched == 50
    assert not_sent == 0


async def test_a_stop_owes_the_requests_due_before_it_and_not_those_after() -> None:
    clock = FakeClock()
    server = FakeServer(clock, latency_ns=500 * MS)
    stop = asyncio.Event()

    async def press_stop() -> None:
        await clock.sleep_until(1_050 * MS)
        stop.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(press_stop())
        result = await run_on_fake_clock(Constant(rate=10), Constraints(), server, stop=stop)
    # Due at 0, 100, ..., 1000 ms: 11 owed, all sent; the one due at 1100 ms was not owed.
    assert result.scheduled == result.totals.dispatched == 11
    assert result.not_sent == 0


async def test_a_closed_loop_owes_no_send_times() -> None:
    result = await run_on_fake_clock(
        Concurrent(streams=2), Constraints(max_requests=4), FakeServer(FakeClock())
    )
    assert result.scheduled is None
    assert result.not_sent == 0


async def test_with_several_processes_an_error_is_reported_when_it_happens() -> None:
    # Issue 10 item 6: the parent judges max_errors over every process, so each error must
    # reach it at once, not at the next 250 ms progress tick.
    clock = FakeClock()
    server = FakeServer(clock, latency_ns=100 * MS, fail_every=1)
    heard: list[tuple[int, ProgressMessage]] = []
    work = StepWork(
        0, Concurrent(streams=2), Constraints(max_errors=50, max_requests=2), 1, 0, 2, 0
    )
    stepped = await drive_step(
        work,
        clock,
        resolve=server.resolve,
        sink_factory=KeepingSink,
        report=lambda message: heard.append((clock.now_ns(), message)),
        max_steps=1_000,
    )
    assert stepped.totals.errored == 1  # process 0 runs stream 0 of 2: one request
    first_error_heard = min(at for at, message in heard if message.totals.errored)
    assert first_error_heard == 100 * MS


async def test_errors_ending_in_the_same_turn_of_the_loop_go_out_in_one_report() -> None:
    clock = FakeClock()
    server = FakeServer(clock, latency_ns=100 * MS, fail_every=1)
    heard: list[ProgressMessage] = []
    work = StepWork(
        0, Concurrent(streams=8), Constraints(max_errors=50, max_requests=8), 1, 0, 2, 0
    )
    stepped = await drive_step(
        work,
        clock,
        resolve=server.resolve,
        sink_factory=KeepingSink,
        report=heard.append,
        max_steps=1_000,
    )
    result = stepped
    # Process 0 of 2 runs 4 of the 8 streams; their 4 errors end in the same turn of the loop
    # and go out as one message carrying all four.
    assert result.totals.errored == 4
    assert result.stopped_by is StopReason.max_requests
    error_messages = [message for message in heard if message.totals.errored]
    assert len(error_messages) == 1
    assert error_messages[0].recent == bytes([1, 1, 1, 1])
