"""Several load-generating processes: each runs its slice of every step on its own event loop.

The parent only coordinates: it starts the children (spawn context), gives every step one start
time on the shared monotonic clock, merges their progress, evaluates the error constraints over
all of them and broadcasts a stop. Children ignore SIGINT; the parent turns Ctrl-C into that
same stop, so every child still cancels, records and closes its sinks before it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import signal
import threading
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.synchronize import Event as ProcessEvent
from typing import Any, Generic, TypeVar

from assay.backend import open_backend
from assay.core import MonotonicClock
from assay.errors import AssayError
from assay.scheduler.constraints import StopReason
from assay.scheduler.interrupt import SigintFlag, sigint_as_flag
from assay.scheduler.plan import BenchmarkPlan, BenchmarkResult, StepResult, merge_step, next_load
from assay.scheduler.profiles import StepLoad
from assay.scheduler.progress import (
    PROGRESS_INTERVAL_NS,
    ProgressMessage,
    ProgressSnapshot,
    StepProgress,
)
from assay.scheduler.runner import ProcessStepResult, StepWork, run_step
from assay.scheduler.sink import SinkFactory

S = TypeVar("S")
T = TypeVar("T")

# Every child is idle and listening when a step is handed out; this lead lets all of them
# receive the command before the first request is due.
_START_LEAD_NS = 50_000_000
_POLL_S = 0.02
_STARTUP_TIMEOUT_S = 120.0
_SHUTDOWN_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class _StepCommand:
    step: int
    load: StepLoad
    start_ns: int


@dataclass(frozen=True, slots=True)
class _Ready:
    process: int


@dataclass(frozen=True, slots=True)
class _Done(Generic[S]):
    result: ProcessStepResult[S]


@dataclass(frozen=True, slots=True)
class _Crashed:
    process: int
    traceback: str


class LoadProcessError(AssayError):
    """A load-generating process died or failed; its traceback is in the message."""


def run_event_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on a fresh event loop, uvloop's when it is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def run_in_processes(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    *,
    on_progress: Callable[[ProgressSnapshot], None] | None = None,
) -> BenchmarkResult[S]:
    """Run `plan` in `plan.processes` child processes; Ctrl-C becomes a clean stop."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    children: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
    with sigint_as_flag() as interrupted:
        try:
            for process in range(plan.processes):
                parent_end, child_end = context.Pipe()
                child = context.Process(
                    target=_child_main,
                    args=(plan, sink_factory, process, child_end, stop),
                    name=f"assay-load-{process}",
                    daemon=True,
                )
                _start_ignoring_sigint(child)
                child_end.close()
                children.append((child, parent_end))
            _await_ready(children)
            return _run_steps(plan, children, stop, interrupted, on_progress)
        finally:
            # On an error here (a failing `on_progress`, a dead child) the others stop first.
            stop.set()
            _shut_down(children)


def _start_ignoring_sigint(child: multiprocessing.process.BaseProcess) -> None:
    """Start `child` with SIGINT ignored from its first instruction (an ignored signal survives
    exec and Python keeps it ignored), so a Ctrl-C during its start-up cannot kill it."""
    if threading.current_thread() is not threading.main_thread():
        child.start()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child.start()
    finally:
        signal.signal(signal.SIGINT, previous)


def _await_ready(children: list[tuple[multiprocessing.process.BaseProcess, Connection]]) -> None:
    waiting = {conn: child for child, conn in children}
    clock = MonotonicClock()
    deadline = clock.now_ns() + round(_STARTUP_TIMEOUT_S * 1e9)
    while waiting:
        if clock.now_ns() > deadline:
            raise LoadProcessError(f"{len(waiting)} load processes did not start in time")
        for conn in _ready_connections(waiting, _POLL_S):
            message = _receive(conn, waiting[conn])
            if isinstance(message, _Ready):
                del waiting[conn]


def _run_steps(
    plan: BenchmarkPlan,
    children: list[tuple[multiprocessing.process.BaseProcess, Connection]],
    stop: ProcessEvent,
    interrupted: SigintFlag,
    on_progress: Callable[[ProgressSnapshot], None] | None,
) -> BenchmarkResult[S]:
    clock = MonotonicClock()
    benchmark_start_ns = clock.now_ns()
    steps: list[StepResult[S]] = []
    while not interrupted.is_set() and (load := next_load(plan.profile, steps)) is not None:
        index = len(steps)
        start_ns = clock.now_ns() + _START_LEAD_NS
        stop.clear()
        for _, conn in children:
            conn.send(_StepCommand(index, load, start_ns))
        progress = StepProgress(index, plan.constraints, start_ns=start_ns)
        parent_stop: StopReason | None = None
        parts: list[ProcessStepResult[S]] = []
        pending = {conn: child for child, conn in children}
        next_report_ns = clock.now_ns() + PROGRESS_INTERVAL_NS
        while pending:
            if interrupted.is_set() and parent_stop is None:
                parent_stop = StopReason.stop_signal
                stop.set()
            for conn in _ready_connections(pending, _POLL_S):
                message = _receive(conn, pending[conn])
                if isinstance(message, _Done):
                    parts.append(message.result)
                    del pending[conn]
                elif isinstance(message, ProgressMessage):
                    reason = progress.take(message)
                    if reason is not None and parent_stop is None:
                        parent_stop = reason
                        stop.set()
            now_ns = clock.now_ns()
            if on_progress is not None and now_ns >= next_report_ns:
                next_report_ns = now_ns + PROGRESS_INTERVAL_NS
                on_progress(progress.snapshot(now_ns=now_ns, benchmark_start_ns=benchmark_start_ns))
        steps.append(merge_step(index, load, start_ns, parts, parent_stop))
    return BenchmarkResult(steps=steps, interrupted=interrupted.is_set())


def _ready_connections(
    pending: dict[Connection, multiprocessing.process.BaseProcess], timeout_s: float
) -> list[Connection]:
    """The connections with a message; raises if a child died without saying why."""
    sentinels = [child.sentinel for child in pending.values()]
    ready = wait([*pending, *sentinels], timeout=timeout_s)
    connections = [item for item in ready if isinstance(item, Connection)]
    if not connections:
        for child in pending.values():
            if not child.is_alive():
                raise LoadProcessError(f"{child.name} exited with code {child.exitcode}")
    return connections


def _receive(conn: Connection, child: multiprocessing.process.BaseProcess) -> object:
    try:
        message: object = conn.recv()
    except EOFError:
        child.join(timeout=1.0)
        raise LoadProcessError(f"{child.name} exited with code {child.exitcode}") from None
    if isinstance(message, _Crashed):
        raise LoadProcessError(f"{child.name} failed:\n{message.traceback}")
    return message


def _shut_down(children: list[tuple[multiprocessing.process.BaseProcess, Connection]]) -> None:
    for _, conn in children:
        with contextlib.suppress(OSError):
            conn.send(None)
    for child, conn in children:
        child.join(timeout=_SHUTDOWN_TIMEOUT_S)
        if child.is_alive():
            child.terminate()
            child.join(timeout=_SHUTDOWN_TIMEOUT_S)
        conn.close()


def _child_main(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    process: int,
    conn: Connection,
    stop: ProcessEvent,
) -> None:
    # The parent decides what Ctrl-C means; a child must finish its step and report.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        run_event_loop(_child(plan, sink_factory, process, conn, stop))
    except BaseException:
        with contextlib.suppress(OSError):
            conn.send(_Crashed(process, traceback.format_exc()))
    finally:
        conn.close()


async def _child(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    process: int,
    conn: Connection,
    stop: ProcessEvent,
) -> None:
    clock = MonotonicClock()
    validate = plan.validator_factory()
    async with open_backend(plan.backend_for_process(), clock) as backend:
        conn.send(_Ready(process))
        while True:
            # Between steps this process has nothing else to do, so a blocking read is fine.
            command = conn.recv()
            if command is None:
                return
            assert isinstance(command, _StepCommand), f"unexpected command {command!r}"
            work = StepWork(
                command.step,
                command.load,
                plan.constraints,
                plan.seed,
                process,
                plan.processes,
                command.start_ns,
            )
            step_stop = asyncio.Event()
            async with asyncio.TaskGroup() as group:
                watcher = group.create_task(_relay_stop(stop, step_stop))
                try:
                    result = await run_step(
                        work,
                        source=plan.source,
                        resolve=backend.resolve,
                        validate=validate,
                        sink_factory=sink_factory,
                        clock=clock,
                        stop=step_stop,
                        report=conn.send,
                    )
                finally:
                    watcher.cancel()
            conn.send(_Done(result))


async def _relay_stop(stop: ProcessEvent, step_stop: asyncio.Event) -> None:
    """Poll the parent's stop event (a cross-process primitive the loop cannot await)."""
    # A multiprocessing event has no awaitable form; polling it costs one wakeup per 20 ms.
    while not stop.is_set():  # noqa: ASYNC110
        await asyncio.sleep(_POLL_S)
    step_stop.set()


__all__ = ["LoadProcessError", "run_event_loop", "run_in_processes"]
