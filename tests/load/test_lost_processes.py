"""A load process that dies or freezes mid-step does not throw the run away or hang it
(issue 9, items 6 and 11): the step ends with the others and the lost slice is accounted.

The runs target a port where nothing listens (every request is a quick connect error), so no
server is needed. Each test's deadlines are safety bounds, not timing assertions.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from assay.engine import (
    BenchmarkPlan,
    Constant,
    Constraints,
    ProgressSnapshot,
    StopReason,
    counting_sink,
    run_benchmark,
    start_load_processes,
)
from assay.engine.liveness import Heartbeats
from assay.testing import FakeClock
from tests.load.test_coordinator import two_process_plan

MS = 1_000_000


def plan(constraints: Constraints, *, unresponsive_after_s: float = 10.0) -> BenchmarkPlan:
    return two_process_plan(
        constraints, Constant(rate=40), unresponsive_after_s=unresponsive_after_s
    )


def send_once(pid: int, number: signal.Signals) -> Callable[[ProgressSnapshot], None]:
    """An on_progress callback that sends `number` to `pid` at the first progress report."""
    sent: list[bool] = []

    def on_progress(_: ProgressSnapshot) -> None:
        if not sent:
            sent.append(True)
            os.kill(pid, number)

    return on_progress


def test_a_killed_load_process_leaves_a_degraded_step_the_others_finish() -> None:
    with start_load_processes(2) as started:
        [child] = started.children
        result = run_benchmark(
            plan(Constraints(max_seconds=1.0)),
            counting_sink,
            on_progress=send_once(child.popen.pid, signal.SIGKILL),
            started=started,
        )
    assert result.degraded
    assert not result.interrupted
    [step] = result.steps
    [lost] = step.lost_processes
    assert lost.process == 1
    assert lost.reason == "load process 1 was killed by SIGKILL"
    # Its slice at 40 req/s over 1 s: the odd indices due before the deadline (less 2 ms).
    assert lost.scheduled == 20
    assert lost.reported.dispatched <= lost.scheduled
    # Process 0 ran its whole slice; only its records are in the totals.
    assert step.scheduled == 20
    assert step.totals.dispatched == 20
    assert step.not_sent == 0
    assert [counts.total for counts in step.sink_results] == [20]


def test_a_frozen_load_process_is_killed_and_the_run_ends() -> None:
    with start_load_processes(2) as started:
        [child] = started.children
        result = run_benchmark(
            plan(Constraints(max_seconds=1.0), unresponsive_after_s=0.5),
            counting_sink,
            on_progress=send_once(child.popen.pid, signal.SIGSTOP),
            started=started,
        )
        assert child.popen.returncode == -signal.SIGKILL
    assert result.degraded
    [step] = result.steps
    [lost] = step.lost_processes
    assert lost.reason == "load process 1 stopped answering for 0.5 s and was killed"
    assert step.totals.dispatched == 20


def test_ctrl_c_still_ends_a_run_whose_load_process_is_frozen() -> None:
    frozen: list[bool] = []

    with start_load_processes(2) as started:
        [child] = started.children

        def freeze_then_interrupt(_: ProgressSnapshot) -> None:
            if not frozen:
                frozen.append(True)
                os.kill(child.popen.pid, signal.SIGSTOP)
                os.kill(os.getpid(), signal.SIGINT)

        # No deadline: only Ctrl-C (and the frozen process's heartbeat) can end this step.
        result = run_benchmark(
            plan(Constraints(), unresponsive_after_s=1.0),
            counting_sink,
            on_progress=freeze_then_interrupt,
            started=started,
        )
    assert result.interrupted
    assert result.degraded
    [step] = result.steps
    assert step.stopped_by is StopReason.stop_signal
    [lost] = step.lost_processes
    assert "stopped answering" in lost.reason
    totals = step.totals
    assert totals.dispatched == totals.completed + totals.errored + totals.cancelled


def test_sigterm_stops_a_run_like_ctrl_c() -> None:
    sent: list[bool] = []

    def terminate(_: ProgressSnapshot) -> None:
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)

    result = run_benchmark(plan(Constraints()), counting_sink, on_progress=terminate)
    assert result.interrupted
    assert not result.degraded
    [step] = result.steps
    assert step.stopped_by is StopReason.stop_signal
    assert len(step.sink_results) == 2
    totals = step.totals
    assert totals.dispatched == totals.completed + totals.errored + totals.cancelled


async def test_a_sender_silent_past_the_deadline_is_named_and_a_talking_one_is_not() -> None:
    clock = FakeClock()
    beats = Heartbeats[int](timeout_ns=500 * MS)
    beats.expect([1, 2], clock.now_ns())
    for _ in range(4):
        clock.advance(200 * MS)
        beats.heard(1, clock.now_ns())
        assert beats.silent(clock.now_ns()) == ([2] if clock.now_ns() > 500 * MS else [])
    beats.forget(2)
    assert beats.silent(clock.now_ns()) == []
