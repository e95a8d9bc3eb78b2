"""The step runner paces on a fake clock, bounds concurrency, stops, and accounts for all."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from returns.result import Failure, Result, Success

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    UnusableResponse,
)
from assay.data.source import RequestSource
from assay.load.progress import ProgressMessage
from assay.load.step_runner import ProcessStepResult, Resolve, StepWork, run_step
from assay.records import RequestRecord
from assay.records.sink import OutcomeCounts, SinkFactory, StepContext, counting_sink
from assay.spec.constraints import Constraints, StopReason
from assay.spec.load import (
    Concurrent,
    Constant,
    Poisson,
    StepLoad,
    Synchronous,
    Throughput,
)
from assay.testing import FakeClock

MS = 1_000_000


@dataclass(frozen=True)
class NumberedSource:
    """Chat requests numbered by index."""

    count: int | None = None

    def request(self, index: int) -> GenerationRequest:
        return GenerationRequest(
            request_id=f"req-{index:08d}",
            endpoint=Endpoint.chat,
            model="tiny-llama",
            messages=({"role": "user", "content": f"question {index}"},),
            max_output_tokens=16,
        )

    def size(self) -> int | None:
        return self.count


@dataclass
class FakeServer:
    """Answers after `latency_ns` of fake time; every `fail_every`-th request is a 503."""

    clock: FakeClock
    latency_ns: int = 100 * MS
    fail_every: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    sent_at: dict[str, int] = field(default_factory=dict)

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        send_ns = self.clock.now_ns()
        self.sent_at[request.request_id] = send_ns
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await self.clock.sleep_until(send_ns + self.latency_ns)
        finally:
            self.in_flight -= 1
        index = int(request.request_id.removeprefix("req-"))
        if self.fail_every and index % self.fail_every == self.fail_every - 1:
            return Failure(
                UnusableResponse(
                    code=DiagnosticCode.http_status, message="HTTP 503: server overloaded"
                )
            )
        return Success(served_answer(request.request_id, send_ns, self.clock.now_ns()))


def served_answer(request_id: str, send_ns: int, end_ns: int) -> GenerationResponse:
    """A short complete streamed chat answer, as the fake servers give."""
    return GenerationResponse(
        request_id=request_id,
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text="An answer."),
        finish_reason="stop",
        streamed_tokens=3,
        terminal_seen=True,
        timing=ResponseTiming(send_ns=send_ns, end_ns=end_ns),
    )


@dataclass
class KeepingSink:
    context: StepContext
    records: list[RequestRecord[GenerationResponse]] = field(default_factory=list)

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        self.records.append(record)

    def close(self) -> list[RequestRecord[GenerationResponse]]:
        return self.records


def accept(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    return Success(response)


S = TypeVar("S")


async def drive_step(
    work: StepWork,
    clock: FakeClock,
    *,
    resolve: Resolve,
    sink_factory: SinkFactory[S],
    source: RequestSource | None = None,
    stop: asyncio.Event | None = None,
    report: Callable[[ProgressMessage], None] | None = None,
    max_steps: int = 10_000,
) -> ProcessStepResult[S]:
    """Run one step with the default `accept` chain while `clock` runs until idle (bounded)."""
    async with asyncio.TaskGroup() as group:
        step = group.create_task(
            run_step(
                work,
                source=source or NumberedSource(),
                resolve=resolve,
                validate=accept,
                sink_factory=sink_factory,
                clock=clock,
                stop=stop or asyncio.Event(),
                report=report,
            )
        )
        group.create_task(clock.run_until_idle(max_steps=max_steps))
    return step.result()


async def run_on_fake_clock(
    load: StepLoad,
    constraints: Constraints,
    server: FakeServer,
    *,
    source: NumberedSource | None = None,
    process: int = 0,
    processes: int = 1,
    stop: asyncio.Event | None = None,
    progress: list[ProgressMessage] | None = None,
) -> ProcessStepResult[list[RequestRecord[GenerationResponse]]]:
    clock = server.clock
    work = StepWork(
        step=0,
        load=load,
        constraints=constraints,
        seed=1,
        process=process,
        processes=processes,
        start_ns=clock.now_ns(),
    )
    return await drive_step(
        work,
        clock,
        resolve=server.resolve,
        sink_factory=KeepingSink,
        source=source,
        stop=stop,
        report=None if progress is None else progress.append,
    )


def assert_accounted(result: ProcessStepResult[list[RequestRecord[GenerationResponse]]]) -> None:
    totals = result.totals
    assert totals.dispatched == totals.completed + totals.errored + totals.cancelled
    assert len(result.summary) == totals.dispatched


async def test_constant_rate_dispatches_exactly_at_targeted_times() -> None:
    server = FakeServer(FakeClock(start_ns=5_000))
    result = await run_on_fake_clock(Constant(rate=10), Constraints(max_requests=20), server)
    assert_accounted(result)
    assert result.totals.completed == 20
    assert result.stopped_by is StopReason.max_requests
    for record in result.summary:
        index = int(record.request_id.removeprefix("req-"))
        assert record.targeted_start_ns == 5_000 + index * 100 * MS
        assert record.dispatched_ns == record.targeted_start_ns
    assert server.peak_in_flight == 1


async def test_a_process_sends_only_its_slice_at_the_single_process_times() -> None:
    server = FakeServer(FakeClock())
    load = Poisson(rate=50, seed=4)
    result = await run_on_fake_clock(
        load, Constraints(max_requests=30), server, process=1, processes=3
    )
    alone = await run_on_fake_clock(load, Constraints(max_requests=30), FakeServer(FakeClock()))
    by_id = {r.request_id: r.targeted_start_ns for r in alone.summary}
    assert [r.request_id for r in result.summary] == [f"req-{i:08d}" for i in range(1, 30, 3)]
    assert all(by_id[r.request_id] == r.targeted_start_ns for r in result.summary)


async def test_behind_schedule_dispatches_immediately_and_keeps_targeted_times() -> None:
    clock = FakeClock()
    server = FakeServer(clock)
    source = NumberedSource()
    # Start the step 1 s in the past: the first 10 requests at 10/s are already overdue.
    work = StepWork(0, Constant(rate=10), Constraints(max_requests=12), 0, 0, 1, start_ns=0)
    clock.set(1_000 * MS)
    stepped = await drive_step(
        work,
        clock,
        resolve=server.resolve,
        sink_factory=KeepingSink,
        source=source,
        max_steps=1_000,
    )
    records = {r.request_id: r for r in stepped.summary}
    late = records["req-00000003"]
    assert late.targeted_start_ns == 300 * MS
    assert late.dispatched_ns == 1_000 * MS
    on_time = records["req-00000011"]
    assert on_time.dispatched_ns == on_time.targeted_start_ns == 1_100 * MS


async def test_concurrent_streams_bound_the_requests_in_flight() -> None:
    server = FakeServer(FakeClock())
    result = await run_on_fake_clock(Concurrent(streams=4), Constraints(max_requests=40), server)
    assert_accounted(result)
    assert result.totals.completed == 40
    assert server.peak_in_flight == 4


async def test_synchronous_sends_one_request_at_a_time_and_only_from_process_zero() -> None:
    server = FakeServer(FakeClock())
    result = await run_on_fake_clock(Synchronous(), Constraints(max_requests=5), server)
    assert server.peak_in_flight == 1
    assert result.totals.completed == 5
    other = await run_on_fake_clock(
        Synchronous(), Constraints(max_requests=5), FakeServer(FakeClock()), process=1, processes=2
    )
    assert other.totals.dispatched == 0


async def test_throughput_uses_its_share_of_the_max_concurrency() -> None:
    server = FakeServer(FakeClock())
    result = await run_on_fake_clock(
        Throughput(max_concurrency=5), Constraints(max_requests=40), server, process=0, processes=2
    )
    assert_accounted(result)
    assert server.peak_in_flight == 3
    assert result.totals.completed == 20


async def test_max_seconds_cancels_requests_in_flight_and_records_them() -> None:
    server = FakeServer(FakeClock(), latency_ns=1_000 * MS)
    result = await run_on_fake_clock(Constant(rate=10), Constraints(max_seconds=2.5), server)
    assert_accounted(result)
    assert result.stopped_by is StopReason.max_seconds
    assert result.totals.dispatched == 25
    assert result.totals.completed == 15
    assert result.totals.cancelled == 10
    assert result.finished_ns == 2_500 * MS


async def test_max_errors_stops_dispatching_and_counts_errors_by_code() -> None:
    server = FakeServer(FakeClock(), fail_every=2)
    result = await run_on_fake_clock(
        Concurrent(streams=2), Constraints(max_errors=3, max_requests=100), server
    )
    assert_accounted(result)
    assert result.stopped_by is StopReason.max_errors
    assert result.totals.errored == 3
    assert result.errors_by_code == {"http_status": 3}
    assert result.totals.dispatched < 100


async def test_stop_error_rate_stops_a_single_process_step() -> None:
    server = FakeServer(FakeClock(), fail_every=2)
    constraints = Constraints(stop_error_rate=0.5, error_rate_window=10, max_requests=100)
    result = await run_on_fake_clock(Constant(rate=100), constraints, server)
    assert_accounted(result)
    assert result.stopped_by is StopReason.stop_error_rate
    assert result.totals.completed + result.totals.errored == 10


async def test_stop_signal_mid_step_cancels_in_flight_requests() -> None:
    clock = FakeClock()
    server = FakeServer(clock, latency_ns=500 * MS)
    stop = asyncio.Event()

    async def press_stop() -> None:
        await clock.sleep_until(1_050 * MS)
        stop.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(press_stop())
        result = await run_on_fake_clock(Constant(rate=10), Constraints(), server, stop=stop)
    assert_accounted(result)
    assert result.stopped_by is StopReason.stop_signal
    assert result.totals.dispatched == 11
    assert result.totals.cancelled == 5


async def test_progress_messages_come_at_most_every_250_ms() -> None:
    server = FakeServer(FakeClock())
    progress: list[ProgressMessage] = []
    result = await run_on_fake_clock(
        Constant(rate=20), Constraints(max_seconds=2), server, progress=progress
    )
    assert len(progress) == 8  # at 250, 500, ..., 2000 ms of fake time
    assert sum(len(message.recent) for message in progress) <= result.totals.completed
    assert progress[-1].totals.dispatched <= result.totals.dispatched


async def test_warmup_and_cooldown_requests_are_recorded_outside_the_window() -> None:
    clock = FakeClock()
    server = FakeServer(clock, latency_ns=10 * MS)
    work = StepWork(
        0,
        Constant(rate=10),
        Constraints(max_seconds=3, warmup_seconds=1, cooldown_seconds=1),
        0,
        0,
        1,
        start_ns=0,
    )
    stepped = await drive_step(
        work, clock, resolve=server.resolve, sink_factory=counting_sink, max_steps=1_000
    )
    counts = stepped.summary
    assert isinstance(counts, OutcomeCounts)
    assert counts.completed == 30
    assert counts.outside_window == 20


async def test_a_finite_source_ends_the_step_without_a_stop_reason() -> None:
    server = FakeServer(FakeClock())
    result = await run_on_fake_clock(
        Concurrent(streams=3), Constraints(), server, source=NumberedSource(count=7)
    )
    assert result.totals.completed == 7
    assert result.stopped_by is None


async def test_closed_loops_wait_for_a_step_start_in_the_future() -> None:
    clock = FakeClock()
    server = FakeServer(clock)
    work = StepWork(0, Concurrent(streams=2), Constraints(max_requests=4), 0, 0, 1, 50 * MS)
    stepped = await drive_step(
        work, clock, resolve=server.resolve, sink_factory=KeepingSink, max_steps=1_000
    )
    first = min(record.dispatched_ns for record in stepped.summary)
    assert first == 50 * MS
