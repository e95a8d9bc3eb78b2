"""On the real clock an open-loop step paces on a timerfd: never early, its descriptor closed."""

from __future__ import annotations

import asyncio
import os

from returns.result import Result, Success

from assay.core import (
    GenerationRequest,
    GenerationResponse,
    MonotonicClock,
    UnusableResponse,
)
from assay.load.schedule import constant_offset_ns
from assay.load.step_runner import StepWork, run_step
from assay.spec.constraints import Constraints, StopReason
from assay.spec.load import Constant
from tests.load.test_step_runner import KeepingSink, NumberedSource, accept, served_answer

MS = 1_000_000


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class InstantServer:
    """Answers at once, noting when each request was sent; sets `stop` after `stop_after`."""

    def __init__(self, clock: MonotonicClock, stop: asyncio.Event, stop_after: int) -> None:
        self.clock = clock
        self.stop = stop
        self.stop_after = stop_after
        self.sent_ns: dict[str, int] = {}

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        send_ns = self.clock.now_ns()
        self.sent_ns[request.request_id] = send_ns
        if len(self.sent_ns) >= self.stop_after:
            self.stop.set()
        return Success(served_answer(request.request_id, send_ns, send_ns))


async def run_real_step(
    rate: float, max_requests: int, stop_after: int
) -> tuple[InstantServer, StepWork, StopReason | None]:
    clock = MonotonicClock()
    stop = asyncio.Event()
    server = InstantServer(clock, stop, stop_after)
    work = StepWork(
        step=0,
        load=Constant(rate=rate),
        constraints=Constraints(max_requests=max_requests),
        seed=1,
        process=0,
        processes=1,
        start_ns=clock.now_ns() + 2 * MS,
    )
    result = await run_step(
        work,
        source=NumberedSource(),
        resolve=server.resolve,
        validate=accept,
        sink_factory=KeepingSink,
        clock=clock,
        stop=stop,
    )
    return server, work, result.stopped_by


async def test_an_open_loop_step_sends_no_request_before_its_target_and_closes_its_timerfd() -> (
    None
):
    before = open_fds()
    server, work, _ = await run_real_step(rate=2_000, max_requests=40, stop_after=41)
    assert len(server.sent_ns) == 40
    for index in range(40):
        target_ns = work.start_ns + constant_offset_ns(index, 2_000)
        assert server.sent_ns[f"req-{index:08d}"] >= target_ns
    assert open_fds() == before


async def test_a_step_stopped_while_waiting_for_a_send_time_closes_its_timerfd() -> None:
    before = open_fds()
    # One request a second: the stop comes while the dispatcher waits a second for the next.
    server, _, stopped_by = await run_real_step(rate=1, max_requests=5, stop_after=1)
    assert stopped_by == StopReason.stop_signal
    assert len(server.sent_ns) == 1
    assert open_fds() == before
