"""Sessions on a fake clock: turns wait for the previous answer plus the think time, an errored
turn ends the session, and a stop counts the turns that were never sent."""

from __future__ import annotations

from dataclasses import dataclass, field

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
from assay.data.session import Session, Turn
from assay.data.source import RequestSettings
from assay.load.step_runner import ProcessStepResult, StepWork
from assay.records import RequestRecord
from assay.spec.constraints import Constraints, StopReason
from assay.spec.load import Concurrent, Constant, StepLoad
from assay.testing import FakeClock
from tests.load.test_step_runner import MS, KeepingSink, drive_step

SHAPE = RequestSettings(endpoint=Endpoint.chat, model="m")
THINK_NS = 50 * MS
LATENCY_NS = 100 * MS


@dataclass(frozen=True)
class Sessions:
    """Sessions of `turns` turns each."""

    turns: int = 3

    def session(self, index: int) -> Session:
        turns = tuple(Turn(f"s{index} t{k}", 4) for k in range(self.turns))
        return Session(index, turns, (), THINK_NS, SHAPE, {})

    def request(self, index: int) -> GenerationRequest:
        return self.session(index).request(0, ())

    def size(self) -> int | None:
        return None


@dataclass
class TurnServer:
    """Answers each turn with a text naming it after `LATENCY_NS`; fails the ids in `fail`."""

    clock: FakeClock
    fail: frozenset[str] = frozenset()
    received: dict[str, GenerationRequest] = field(default_factory=dict)

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        self.received[request.request_id] = request
        send_ns = self.clock.now_ns()
        await self.clock.sleep_until(send_ns + LATENCY_NS)
        if request.request_id in self.fail:
            return Failure(UnusableResponse(code=DiagnosticCode.http_status, message="HTTP 500"))
        return Success(
            GenerationResponse(
                request_id=request.request_id,
                endpoint=Endpoint.chat,
                streamed=True,
                answer=TextAnswer(text=f"answer to {request.request_id}"),
                finish_reason="stop",
                streamed_tokens=3,
                terminal_seen=True,
                timing=ResponseTiming(send_ns=send_ns, end_ns=self.clock.now_ns()),
            )
        )


async def run_sessions(
    load: StepLoad, constraints: Constraints, server: TurnServer, turns: int = 3
) -> ProcessStepResult[list[RequestRecord[GenerationResponse]]]:
    clock = server.clock
    work = StepWork(0, load, constraints, 0, 0, 1, clock.now_ns())
    return await drive_step(
        work, clock, resolve=server.resolve, sink_factory=KeepingSink, source=Sessions(turns)
    )


async def test_next_turn_is_due_think_time_after_the_previous_answer() -> None:
    server = TurnServer(FakeClock())
    result = await run_sessions(Concurrent(streams=1), Constraints(max_requests=2), server)
    records = {r.request_id: r for r in result.summary}
    assert len(records) == 6
    first, second = records["req-00000000-turn-01"], records["req-00000000-turn-02"]
    assert second.targeted_start_ns == first.finished_ns + THINK_NS
    assert second.dispatched_ns == second.targeted_start_ns
    history = server.received["req-00000000-turn-02"].messages
    assert history is not None
    assert history[1] == {"role": "assistant", "content": "answer to req-00000000-turn-01"}
    assert result.sessions is not None
    assert result.sessions.completed == 2


async def test_errored_turn_ends_the_session_and_counts_the_rest_not_sent() -> None:
    server = TurnServer(FakeClock(), fail=frozenset({"req-00000001-turn-01"}))
    result = await run_sessions(Constant(rate=5), Constraints(max_requests=3), server, turns=4)
    sent = sorted(r.request_id for r in result.summary)
    assert "req-00000001-turn-01" in sent
    assert not [i for i in sent if i.startswith("req-00000001-turn-0") and i.endswith(("2", "3"))]
    assert result.sessions is not None
    counts = result.sessions
    assert (counts.started, counts.completed, counts.ended_early) == (3, 2, 1)
    assert (counts.turns_sent, counts.turns_not_sent) == (9, 3)
    assert result.totals.dispatched == counts.turns_sent


async def test_a_stopped_step_counts_the_turns_its_sessions_still_owed() -> None:
    server = TurnServer(FakeClock())
    # 0.2 s: each session's first turn (0.1 s) completes, its second (sent at 0.15 s) is cut.
    result = await run_sessions(Concurrent(streams=2), Constraints(max_seconds=0.2), server)
    assert result.stopped_by is StopReason.max_seconds
    counts = result.sessions
    assert counts is not None
    assert result.totals.dispatched == counts.turns_sent == 4
    assert result.totals.cancelled == 2
    assert counts.turns_not_sent == 2 * 3 - 4
    assert counts.started * 3 == counts.turns_sent + counts.turns_not_sent
