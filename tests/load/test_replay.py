"""Replay sends each trace request at its trace time (scaled by speed), on a fake clock, with
the same targeted-start accounting as the constant profile."""

from __future__ import annotations

from dataclasses import dataclass

from assay.core import Endpoint, GenerationRequest, GenerationResponse
from assay.load.step_runner import ProcessStepResult, StepWork
from assay.records import RequestRecord
from assay.spec.constraints import Constraints
from assay.spec.load import Replay
from assay.testing import FakeClock
from tests.load.test_step_runner import MS, FakeServer, KeepingSink, drive_step

TRACE_MS = (0, 3, 3, 250, 1000, 1001.5)


@dataclass(frozen=True)
class Trace:
    """A timed source with the offsets of `TRACE_MS`."""

    def request(self, index: int) -> GenerationRequest:
        return GenerationRequest(
            request_id=f"req-{index:08d}",
            endpoint=Endpoint.chat,
            model="m",
            messages=({"role": "user", "content": f"turn {index}"},),
            max_output_tokens=4,
        )

    def size(self) -> int | None:
        return len(TRACE_MS)

    def offset_ns(self, index: int) -> int:
        return round(TRACE_MS[index] * MS)


async def replay(
    speed: float, process: int = 0, processes: int = 1, latency_ns: int = 400 * MS
) -> ProcessStepResult[list[RequestRecord[GenerationResponse]]]:
    clock = FakeClock(start_ns=7_000)
    server = FakeServer(clock, latency_ns=latency_ns)
    work = StepWork(0, Replay(speed=speed), Constraints(), 0, process, processes, clock.now_ns())
    return await drive_step(
        work, clock, resolve=server.resolve, sink_factory=KeepingSink, source=Trace()
    )


async def test_replay_sends_every_request_at_its_trace_time_scaled_by_speed() -> None:
    for speed in (1.0, 2.0, 0.5):
        result = await replay(speed)
        totals = result.totals
        assert totals.dispatched == totals.completed == len(TRACE_MS)
        assert (result.scheduled, result.not_sent) == (len(TRACE_MS), 0)  # owed the trace
        sent = {r.request_id: r for r in result.summary}
        for index, ms in enumerate(TRACE_MS):
            record = sent[f"req-{index:08d}"]
            assert record.targeted_start_ns == 7_000 + round(round(ms * MS) / speed)
            assert record.dispatched_ns == record.targeted_start_ns  # open loop: no waiting


async def test_replay_is_open_loop_whatever_the_latency() -> None:
    # Answers take 5 s: later trace requests are still sent at their own times.
    result = await replay(1.0, latency_ns=5_000 * MS)
    assert all(r.dispatched_ns == r.targeted_start_ns for r in result.summary)


async def test_replay_processes_split_the_trace_and_keep_its_times() -> None:
    alone = {r.request_id: r.targeted_start_ns for r in (await replay(1.0)).summary}
    parts = [await replay(1.0, process=p, processes=2) for p in range(2)]
    assert [r.request_id for r in parts[1].summary] == [
        "req-00000001",
        "req-00000003",
        "req-00000005",
    ]
    together = {r.request_id: r.targeted_start_ns for part in parts for r in part.summary}
    assert together == alone
    assert [part.scheduled for part in parts] == [3, 3]
