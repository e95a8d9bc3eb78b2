"""One step in one process: pace, dispatch, bound, stop, and account for every request.

The runner builds each request from the source just before it is due, dispatches it at its
targeted time (immediately when behind, never accumulating drift), runs it through
`assay.worker.execute` inside one `TaskGroup`, and on any stop cancels what is in flight, so
every dispatched request ends as exactly one completed, errored or cancelled record.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from returns.result import Result

from assay.core import Clock, GenerationRequest, GenerationResponse, UnusableResponse
from assay.core.clock import Waiter, open_pacing_waiter
from assay.data.session import SessionSource
from assay.data.source import RequestSource, sends_several_models
from assay.errors import first_assay_error
from assay.load.ahead import Lookahead, RequestBuilds, RequestsAhead
from assay.load.collector import quiet_collector
from assay.load.error_watch import ErrorWatch
from assay.load.loop_probe import ClientLoad, LoopProbe
from assay.load.progress import PROGRESS_INTERVAL_NS, OutcomeTotals, ProgressMessage, StepTally
from assay.load.schedule import (
    owned_streams,
    rate_slice,
    replay_slice,
    stream_indices,
    throughput_indices,
    throughput_share,
    timed,
)
from assay.load.sessions import SessionCounts, SessionTally, run_session
from assay.load.slo_tally import SloMisses, SloTally
from assay.records import Cancelled, Completed, Errored, RequestRecord
from assay.records.sink import RecordSink, SinkFactory, StepContext
from assay.spec.capacity import SloTarget
from assay.spec.constraints import Constraints, StopReason
from assay.spec.load import (
    Concurrent,
    Constant,
    Pacing,
    Poisson,
    RampUp,
    Replay,
    StepLoad,
    Synchronous,
    Throughput,
    pacing,
)
from assay.validators.chain import Validator
from assay.worker import execute

S = TypeVar("S")

Record = RequestRecord[GenerationResponse]

Resolve = Callable[[GenerationRequest], Awaitable[Result[GenerationResponse, UnusableResponse]]]
"""Sends one request and compiles the answer: `backend.resolve`."""

# When the schedule is behind, dispatch without sleeping but yield to the loop this often so
# requests in flight keep being served while a backlog is flushed.
_YIELD_EVERY = 64
_MAX_EARLY_WAKEUPS = 10_000
# A request due this little before its step stopped is not owed: event loops round timers to
# the millisecond, so its wake-up and the stop can land in either order.
OWED_GRACE_NS = 2_000_000


def not_sent(scheduled: int | None, totals: OutcomeTotals) -> int:
    """What a schedule of `scheduled` requests owed beyond those dispatched (0 for a closed
    loop, which has no schedule)."""
    if scheduled is None:
        return 0
    return max(0, scheduled - totals.dispatched)


@dataclass(frozen=True, slots=True)
class StepWork:
    """What one process runs for one step (picklable: it crosses into worker processes)."""

    step: int
    load: StepLoad
    constraints: Constraints
    seed: int
    process: int
    processes: int
    start_ns: int
    # The percentile SLOs whose misses the step counts (a capacity search's), none otherwise.
    slos: tuple[SloTarget, ...] = ()


@dataclass(frozen=True, slots=True)
class ProcessStepResult(Generic[S]):
    """How one step ended in one process, with the summary its sink returned.

    `scheduled` is how many requests an open-loop load (constant, poisson, replay: see
    `assay.spec.load.pacing`) owed by the time the step stopped dispatching; those not
    dispatched were never sent (`not_sent`) because this process fell behind its schedule.
    Closed loops owe no send times: `scheduled` is None.

    `errors_by_code` is this process's `StepTally` count at the end of the step: every errored
    record, warm-up and cool-down included (see `StepTally` for the other counts).
    """

    process: int
    totals: OutcomeTotals
    errors_by_code: dict[str, int]
    stopped_by: StopReason | None
    finished_ns: int
    summary: S
    scheduled: int | None = None

    @property
    def not_sent(self) -> int:
        """Requests the schedule owed that never went out (0 for a closed loop)."""
        return not_sent(self.scheduled, self.totals)

    # Set when the source runs sessions: how they went, and the turns never sent.
    sessions: SessionCounts | None = None
    # Set when the step counts percentile SLO misses (`StepWork.slos`).
    slo_misses: SloMisses | None = None
    # How busy this process was while it measured (its event loop's lag, its CPU).
    client: ClientLoad | None = None


async def run_step(
    work: StepWork,
    *,
    source: RequestSource,
    resolve: Resolve,
    validate: Validator[GenerationResponse],
    sink_factory: SinkFactory[S],
    clock: Clock,
    stop: asyncio.Event,
    report: Callable[[ProgressMessage], None] | None = None,
) -> ProcessStepResult[S]:
    """Run this process's share of one step until its schedule, a constraint or `stop` ends it.

    Setting `stop` stops dispatching and cancels the requests in flight; they are recorded as
    cancelled. `report` receives a progress message at most every ~250 ms of `clock` time.
    """
    context = StepContext(
        step=work.step,
        process=work.process,
        processes=work.processes,
        start_ns=work.start_ns,
        measured_window=work.constraints.measured_window(work.start_ns),
    )
    sink = sink_factory(context)
    runner = _StepRunner(work, source, resolve, validate, sink, clock)
    probe = LoopProbe(work.process)
    try:
        # Set-up is done: what it built is frozen, and the collector stays out of the way of
        # the dispatch timers until the step ends (see `assay.load.collector`).
        with quiet_collector(), probe:
            await runner.run(stop, report)
    except BaseException as error:
        sink.close()
        # An error meant for the user (the sink's disk is full) leaves its task groups bare,
        # so whoever runs the step can tell it in one line.
        user_error = first_assay_error(error)
        if user_error is not None:
            raise user_error from None
        raise
    return ProcessStepResult(
        process=work.process,
        totals=runner.tally.totals(),
        errors_by_code=dict(runner.tally.errors_by_code),
        stopped_by=runner.stopped_by,
        finished_ns=clock.now_ns(),
        summary=sink.close(),
        scheduled=runner.scheduled(),
        sessions=None if runner.sessions is None else runner.session_tally.counts(),
        slo_misses=None if runner.slo_tally is None else runner.slo_tally.counts(),
        client=probe.snapshot(),
    )


def open_loop_slice(
    work: StepWork, source: RequestSource, budget: int | None
) -> Iterator[tuple[int, int]]:
    """`(index, offset_ns)` of what slice `work.process` of an open-loop step is due to send:
    the rate's schedule, or the trace's own times divided by the replay speed.

    Offsets never decrease (a trace is replayed in timestamp order). Only a load whose
    `pacing` is open-loop has send times; asking a closed loop for them is a bug.

    >>> work = StepWork(0, Constant(rate=10), Constraints(), 0, 1, 2, start_ns=0)
    >>> list(open_loop_slice(work, source=..., budget=4))  # a rate takes no times from it
    [(1, 100000000), (3, 300000000)]
    """
    load = work.load
    match load:
        case Constant() | Poisson() | RampUp():
            return rate_slice(load, work.seed, work.process, work.processes, budget)
        case Replay(speed=speed):
            return replay_slice(timed(source), speed, work.process, work.processes, budget)
        case Synchronous() | Concurrent() | Throughput():
            raise _mispaced(load)


def _mispaced(load: StepLoad) -> AssertionError:
    return AssertionError(f"{load.kind} is paced {pacing(load)}, which this match disagrees with")


def slice_owed(
    work: StepWork, source: RequestSource, budget: int | None, end_ns: int | None
) -> int | None:
    """What process `work.process`'s slice of an open-loop step owed when dispatching stopped
    at `end_ns` (None: the step ran its whole finite budget); None for a closed loop.

    The parent uses it for a process that was lost, whose own count never came back; it
    counts the same schedule the process would have run (see `open_loop_slice`).

    >>> work = StepWork(0, Constant(rate=10), Constraints(), 0, 1, 2, start_ns=0)
    >>> slice_owed(work, ..., budget=None, end_ns=1_000_000_000)  # due at 100, 300, ... 900 ms
    5
    """
    match pacing(work.load):
        case Pacing.closed_loop:
            return None
        case Pacing.open_loop:
            schedule = open_loop_slice(work, source, budget)
            if end_ns is None:
                if budget is None:
                    raise ValueError("an unbounded schedule owes nothing countable without an end")
                return sum(1 for _ in schedule)
            return _count_due(schedule, work.start_ns, end_ns - OWED_GRACE_NS)


def _count_due(schedule: Iterator[tuple[int, int]], start_ns: int, cutoff_ns: int) -> int:
    count = 0
    # Offsets never decrease, so the first one past the cutoff ends the count.
    for _, offset_ns in schedule:
        if start_ns + offset_ns >= cutoff_ns:
            break
        count += 1
    return count


class _StepRunner(Generic[S]):
    """The live state of one step in one process."""

    def __init__(
        self,
        work: StepWork,
        source: RequestSource,
        resolve: Resolve,
        validate: Validator[GenerationResponse],
        sink: RecordSink[S],
        clock: Clock,
    ) -> None:
        self.work = work
        self.source = source
        self.resolve = resolve
        self.validate = validate
        self.sink = sink
        self.clock = clock
        self.tally = StepTally(work.step, work.process)
        window = work.constraints.measured_window(work.start_ns)
        self.slo_tally = SloTally(work.slos, window) if work.slos else None
        # max_errors is sound per process (local errors <= global ones); the error rate is only
        # exact over every process, so with several the parent evaluates it.
        self.watch = ErrorWatch(work.constraints, rate=work.processes == 1)
        self.budget = work.constraints.budget(source.size())
        self.deadline_ns = work.constraints.deadline_ns(work.start_ns)
        self.stopped_by: StopReason | None = None
        self.stopped_ns: int | None = None
        # The open loop's schedule, the entry it holds and how many it handed to tasks: what
        # the schedule owed is counted from them when the step ends.
        self.schedule: Iterator[tuple[int, int]] | None = None
        self.pending_target_ns: int | None = None
        self.handed_out = 0
        self.sessions = source if isinstance(source, SessionSource) else None
        # A traffic mix's records carry their request's model; a single model's carry none.
        self.stamps_model = sends_several_models(source)
        # A closed loop's requests: off the loop once their builds prove slow (images).
        self.builds = RequestBuilds(source, clock, cpu_ns=time.thread_time_ns)
        self.session_tally = SessionTally()
        self.active: set[asyncio.Task[object]] = set()
        self.report: Callable[[ProgressMessage], None] | None = None
        self.reported_ns = clock.now_ns()
        self.urgent_pending = False
        # With several processes the parent evaluates the error constraints over all of them,
        # so an error is reported at once rather than at the next 250 ms tick.
        constraints = work.constraints
        self.errors_are_urgent = work.processes > 1 and (
            constraints.max_errors is not None or constraints.stop_error_rate is not None
        )

    async def run(
        self, stop: asyncio.Event, report: Callable[[ProgressMessage], None] | None
    ) -> None:
        if stop.is_set():
            self.stopped_by = StopReason.stop_signal
            self.stopped_ns = self.clock.now_ns()
            return
        # The errors-are-urgent path reports through it between the 250 ms ticks.
        self.report = report
        async with asyncio.TaskGroup() as helpers:
            watchers = [helpers.create_task(self._watch_stop(stop))]
            if self.deadline_ns is not None:
                watchers.append(helpers.create_task(self._watch_deadline(self.deadline_ns)))
            if report is not None:
                watchers.append(helpers.create_task(self._report(report)))
            try:
                async with asyncio.TaskGroup() as work:
                    self._launch(work)
            finally:
                self.builds.close()
                for watcher in watchers:
                    watcher.cancel()
        if self.stopped_by is None and self._budget_was_max_requests():
            self.stopped_by = StopReason.max_requests
        elif self.stopped_by is None and self._data_ran_out():
            self.stopped_by = StopReason.data_exhausted

    def _budget_was_max_requests(self) -> bool:
        limit = self.work.constraints.max_requests
        return limit is not None and self.budget == limit

    def _data_ran_out(self) -> bool:
        """Whether the step ended because its data had no more rows while the run asked for
        more: more requests than rows, or a time limit the rows did not last to.

        A replayed trace is the schedule itself: its end is the schedule's end, not a shortage.
        """
        match self.work.load:
            case Replay():
                return False
            case Synchronous() | Concurrent() | Throughput() | Constant() | Poisson() | RampUp():
                pass
        size = self.source.size()
        if size is None or self.budget != size:
            return False
        limits = self.work.constraints
        return limits.max_seconds is not None or (
            limits.max_requests is not None and limits.max_requests > size
        )

    def _launch(self, group: asyncio.TaskGroup) -> None:
        # The profile's declared pacing decides both how its requests leave and what the step
        # owes the accounting (`scheduled`), so the two cannot disagree.
        match pacing(self.work.load):
            case Pacing.open_loop:
                schedule = Lookahead(open_loop_slice(self.work, self.source, self.budget))
                self.schedule = schedule
                self._track(group.create_task(self._open_loop(group, schedule)))
            case Pacing.closed_loop:
                self._launch_closed_loops(group)

    def _launch_closed_loops(self, group: asyncio.TaskGroup) -> None:
        work = self.work
        match work.load:
            case Synchronous():
                if work.process == 0:
                    self._track(
                        group.create_task(self._closed_loop(stream_indices(0, 1, self.budget)))
                    )
            # Closed loops start only as many as can send something: `--concurrency 10**9`
            # with a budget of 2 requests starts 2 tasks, not a billion idle ones.
            case Concurrent(streams=streams):
                for stream in owned_streams(streams, work.process, work.processes):
                    if self.budget is not None and stream >= self.budget:
                        break  # this stream and every later one has no index to send
                    indices = stream_indices(stream, streams, self.budget)
                    self._track(group.create_task(self._closed_loop(indices)))
            case Throughput(max_concurrency=limit):
                active = min(work.processes, limit)
                shared = throughput_indices(limit, work.process, work.processes, self.budget)
                if work.process < active:
                    share = throughput_share(limit, work.process, active)
                    for _ in range(share if self.budget is None else min(share, self.budget)):
                        self._track(group.create_task(self._closed_loop(shared)))
            case Constant() | Poisson() | RampUp() | Replay():
                raise _mispaced(work.load)

    def _track(self, task: asyncio.Task[object]) -> None:
        self.active.add(task)
        task.add_done_callback(self.active.discard)

    def stop(self, reason: StopReason) -> None:
        """Stop dispatching and cancel everything in flight (the first reason is kept)."""
        if self.stopped_by is not None:
            return
        self.stopped_by = reason
        self.stopped_ns = self.clock.now_ns()
        current = asyncio.current_task()
        for task in list(self.active):
            if task is not current:
                task.cancel()

    def _due(self, target_ns: int) -> bool:
        return self.stopped_by is None and (
            self.deadline_ns is None or target_ns < self.deadline_ns
        )

    async def _open_loop(self, group: asyncio.TaskGroup, schedule: Lookahead) -> None:
        ahead = RequestsAhead(self.source, schedule, self.clock, cpu_ns=time.thread_time_ns)
        # The loop's timer wakes up to a millisecond late (uvloop); send times are kept finer.
        waiter = open_pacing_waiter(self.clock)
        try:
            await self._dispatch_on_schedule(group, schedule, ahead, waiter)
        finally:
            waiter.close()
            ahead.close()

    async def _dispatch_on_schedule(
        self,
        group: asyncio.TaskGroup,
        schedule: Lookahead,
        ahead: RequestsAhead,
        waiter: Waiter,
    ) -> None:
        behind = 0
        for index, offset_ns in schedule:
            target_ns = self.work.start_ns + offset_ns
            self.pending_target_ns = target_ns
            if not self._due(target_ns):
                return
            sessions = self.sessions
            request = await ahead.request(index) if sessions is None else None
            if self.clock.now_ns() < target_ns:
                await self._wait_until(target_ns, waiter)
            else:
                behind += 1
                if behind % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)
            if self.stopped_by is not None:
                return
            self.pending_target_ns = None
            self.handed_out += 1
            if request is not None:
                self._track(group.create_task(self._send(request, None, target_ns)))
            else:
                assert sessions is not None  # no request built: a session source
                # An open loop starts sessions at its send times; each runs its turns on its own.
                self._track(group.create_task(self._session(sessions, index, target_ns)))

    def scheduled(self) -> int | None:
        """How many requests an open-loop schedule owed when dispatching stopped (None for a
        closed loop): those handed to a task, and those due before the stop that never were.

        Due means targeted before the earlier of the deadline and the stop, less
        `OWED_GRACE_NS`. A task cancelled before its first run sent nothing: it is owed and
        not dispatched, so it counts as not sent.
        """
        match pacing(self.work.load):
            case Pacing.closed_loop:
                return None
            case Pacing.open_loop:
                return self._owed_by_schedule()

    def _owed_by_schedule(self) -> int:
        owed = self.handed_out
        ends = [end for end in (self.deadline_ns, self.stopped_ns) if end is not None]
        if not ends or self.schedule is None:
            return owed  # the schedule ran out (or never started): nothing else was due
        cutoff_ns = min(ends) - OWED_GRACE_NS
        if self.pending_target_ns is not None and self.pending_target_ns < cutoff_ns:
            owed += 1
        return owed + _count_due(self.schedule, self.work.start_ns, cutoff_ns)

    async def _wait_until(self, target_ns: int, waiter: Waiter | None = None) -> None:
        # Event loops round timers (uvloop to the millisecond) and may wake a little early;
        # a request is never sent before its targeted time, so sleep again for the remainder.
        sleep_until = self.clock.sleep_until if waiter is None else waiter.sleep_until
        for _ in range(_MAX_EARLY_WAKEUPS):
            if self.clock.now_ns() >= target_ns:
                return
            await sleep_until(target_ns)

    async def _closed_loop(self, indices: Iterator[int]) -> None:
        # Processes get the step a little ahead of its start; closed loops wait for it too.
        await self._wait_until(self.work.start_ns)
        for index in indices:
            now_ns = self.clock.now_ns()
            if not self._due(now_ns):
                return
            if self.sessions is not None:
                # A closed loop runs one session at a time: N streams are N sessions at once.
                await self._session(self.sessions, index, now_ns)
            else:
                request = self.builds.here(index)  # on the loop: no coroutine to await
                if request is None:
                    request = await self.builds.request(index)
                self.tally.dispatched += 1  # as `_send` counts it, without its coroutine
                await self._execution(request, None, now_ns)

    async def _session(self, sessions: SessionSource, index: int, target_ns: int) -> None:
        await run_session(
            sessions.session(index),
            first_target_ns=target_ns,
            send=self._send,
            clock=self.clock,
            may_continue=self._due,
            tally=self.session_tally,
        )

    async def _send(self, request: GenerationRequest, turn: int | None, target_ns: int) -> Record:
        """Send `request` (turn `turn` of a session, None outside sessions) and return its
        record: a session builds its next turn from the answer."""
        # Counted here, on the task's first run: a task cancelled before it ever ran sent nothing.
        self.tally.dispatched += 1
        return await self._execution(request, turn, target_ns)

    def _execution(
        self, request: GenerationRequest, turn: int | None, target_ns: int
    ) -> Awaitable[Record]:
        """`request`'s execution, to be awaited at once by whoever counted it dispatched (a
        closed loop awaits it in its own coroutine: one coroutine less a request)."""
        return execute(
            request,
            request_id=request.request_id,
            resolve=self.resolve,
            validate=self.validate,
            clock=self.clock,
            targeted_start_ns=target_ns,
            step=self.work.step,
            turn=turn,
            model=request.model if self.stamps_model else None,
            sink=self._take,
        )

    def _take(self, record: RequestRecord[GenerationResponse]) -> None:
        tally = self.tally
        reason: StopReason | None = None
        outcome = record.outcome
        # Told by its type first: a pydantic model's instance check (a class pattern's) is a
        # Python call, and most records are completed.
        if type(outcome) is Completed or isinstance(outcome, Completed):
            tally.completed += 1
            tally.recent.append(0)
            reason = self.watch.observe(errored=False)
        else:
            match outcome:
                case Errored(diagnostic=diagnostic):
                    tally.errored += 1
                    tally.recent.append(1)
                    # Every record, whatever the measured window: the live count (`StepTally`).
                    code = diagnostic.code.value
                    tally.errors_by_code[code] = tally.errors_by_code.get(code, 0) + 1
                    reason = self.watch.observe(errored=True)
                    if self.errors_are_urgent:
                        self._report_soon()
                case Cancelled():
                    tally.cancelled += 1
        if self.slo_tally is not None:
            self.slo_tally.add(record)
        self.sink.add(record)
        if reason is not None:
            self.stop(reason)

    async def _watch_stop(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self.stop(StopReason.stop_signal)

    async def _watch_deadline(self, deadline_ns: int) -> None:
        await self.clock.sleep_until(deadline_ns)
        self.stop(StopReason.max_seconds)

    async def _report(self, report: Callable[[ProgressMessage], None]) -> None:
        while True:
            await self.clock.sleep_until(self.reported_ns + PROGRESS_INTERVAL_NS)
            self.reported_ns = self.clock.now_ns()
            report(self.tally.message())

    def _report_soon(self) -> None:
        # Errors finished in one turn of the event loop go out in one message, right after it:
        # the parent sees them within milliseconds, and a burst costs one message, not many.
        if self.report is None or self.urgent_pending:
            return
        self.urgent_pending = True
        asyncio.get_running_loop().call_soon(self._report_now)

    def _report_now(self) -> None:
        self.urgent_pending = False
        if self.report is not None:
            self.report(self.tally.message())


__all__ = [
    "OWED_GRACE_NS",
    "ProcessStepResult",
    "Resolve",
    "StepWork",
    "not_sent",
    "run_step",
    "slice_owed",
]
