"""Several load-generating processes: each runs its slice of every step on its own event loop.

This process runs slice 0 and coordinates: it starts `processes - 1` children, gives every
step one start time on the shared monotonic clock, merges everyone's progress, evaluates the
error constraints over all of them and sends a stop message. Children ignore SIGINT; the parent
turns Ctrl-C into that same stop, so every process still cancels, records and closes its sinks.

Each child is a fresh interpreter running `python -m assay.scheduler.load_process FD`, not a
multiprocessing child: it imports only the run path (never the parent's `__main__` script, say
the CLI), and nothing starts multiprocessing's resource tracker process. Everything goes over
one socket pair per child (a multiprocessing `Connection`): the parent's `sys.path`, the pickled
plan, step commands and stops one way; readiness, progress, results and crashes the other."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import subprocess
import sys
import types
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

from assay.backend import open_backend
from assay.core import MonotonicClock
from assay.errors import AssayError, ConfigError
from assay.launch import LoadChild, LoadProcesses, send_all, start_load_processes
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
class StepCommand:
    """Run step `step` of `load`, starting at `start_ns` on the shared monotonic clock."""

    step: int
    load: StepLoad
    start_ns: int


@dataclass(frozen=True, slots=True)
class StopStep:
    """Stop step `step` now; a child that has already finished it ignores the message."""

    step: int


@dataclass(frozen=True, slots=True)
class Ready:
    """A child is set up (plan unpickled, HTTP session open) and waits for a step."""

    process: int


@dataclass(frozen=True, slots=True)
class Done(Generic[S]):
    """A child's part of a step: its sinks are closed."""

    result: ProcessStepResult[S]


@dataclass(frozen=True, slots=True)
class Crashed:
    """A child failed; its last word before it exits."""

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
    started: LoadProcesses | None = None,
) -> BenchmarkResult[S]:
    """Run `plan` in `plan.processes` processes, this one and its children (those `started`
    ahead, or new ones); Ctrl-C becomes a clean stop."""
    if started is not None and started.processes != plan.processes:
        raise ConfigError(
            f"{started.processes} load processes were started for a plan of {plan.processes}"
        )
    with contextlib.ExitStack() as stack:
        interrupted = stack.enter_context(sigint_as_flag())
        if started is None:
            started = stack.enter_context(start_load_processes(plan.processes))
        children = started.children
        # Pickled while the children import the run path; it then waits in their sockets.
        payload = _pickle_for_children((plan, sink_factory))
        for process, child in enumerate(children, start=1):
            child.conn.send((process, list(sys.path)))
            child.conn.send_bytes(payload)
        return run_event_loop(_coordinate(plan, sink_factory, children, interrupted, on_progress))


class _ImportablePickler(pickle.Pickler):
    """Refuses functions and classes of `__main__`: a child runs no script, so it cannot find
    them (multiprocessing would re-run the script in every child instead)."""

    def reducer_override(self, obj: object) -> Any:  # NotImplemented: pickle as usual
        if isinstance(obj, (type, types.FunctionType)) and obj.__module__ == "__main__":
            raise ConfigError(
                f"{obj.__qualname__} is defined in the script being run (__main__); load "
                "processes import it by name, so define it in an importable module"
            )
        return NotImplemented


def _pickle_for_children(payload: object) -> bytes:
    buffer = io.BytesIO()
    _ImportablePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(payload)
    return buffer.getvalue()


class _Inbox:
    """The children's messages, read by the event loop as they arrive; a crash or a closed
    socket is raised from `get` as `LoadProcessError`."""

    def __init__(self, children: list[LoadChild]) -> None:
        self._children = children
        self._queue: asyncio.Queue[tuple[LoadChild, object]] = asyncio.Queue()

    def __enter__(self) -> _Inbox:
        loop = asyncio.get_running_loop()
        for child in self._children:
            watch_readable(loop, child.conn, self._read, child)
        return self

    def __exit__(self, *_: object) -> None:
        loop = asyncio.get_running_loop()
        for child in self._children:
            if not child.conn.closed:
                loop.remove_reader(child.conn.fileno())

    def _read(self, child: LoadChild) -> None:
        try:
            while child.conn.poll():
                self._queue.put_nowait((child, child.conn.recv()))
        except (EOFError, OSError):
            asyncio.get_running_loop().remove_reader(child.conn.fileno())
            self._queue.put_nowait((child, _GONE))

    async def get(self, timeout_s: float) -> tuple[LoadChild, object] | None:
        """The next message and its sender, or None after `timeout_s` without one."""
        try:
            async with asyncio.timeout(timeout_s):
                child, message = await self._queue.get()
        except TimeoutError:
            return None
        if isinstance(message, Crashed):
            raise LoadProcessError(f"{child.name} failed:\n{message.traceback}")
        if message is _GONE:
            # Its socket closed without a word: the exit code is due at once (or it is hung).
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.popen.wait(timeout=1.0)
            raise LoadProcessError(f"{child.name} exited with code {child.popen.returncode}")
        return child, message


_GONE = object()


def watch_readable(
    loop: asyncio.AbstractEventLoop, conn: Connection, callback: Callable[..., object], *args: Any
) -> None:
    """Call `callback(*args)` when `conn` is readable, keeping its socket blocking: uvloop makes
    a watched socket non-blocking, and a `Connection` must read and write whole messages (they
    are small, and the other end is always reading)."""
    loop.add_reader(conn.fileno(), callback, *args)
    os.set_blocking(conn.fileno(), True)


class _StepControl:
    """The parent's view of one step: merged progress, and the stop it may send everyone."""

    def __init__(self, index: int, plan: BenchmarkPlan, start_ns: int, children: list[LoadChild]):
        self.index = index
        self.progress = StepProgress(index, plan.constraints, start_ns=start_ns)
        self.stop = asyncio.Event()
        self.reason: StopReason | None = None
        self._children = children

    def take(self, message: ProgressMessage) -> None:
        reason = self.progress.take(message)
        if reason is not None:
            self.halt(reason)

    def halt(self, reason: StopReason) -> None:
        if self.reason is None:
            self.reason = reason
            self.stop.set()
            send_all(self._children, StopStep(self.index))


async def _coordinate(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    children: list[LoadChild],
    interrupted: SigintFlag,
    on_progress: Callable[[ProgressSnapshot], None] | None,
) -> BenchmarkResult[S]:
    """Run process 0's slice of every step here while following the children's."""
    clock = MonotonicClock()
    validate = plan.validator_factory()
    steps: list[StepResult[S]] = []
    with _Inbox(children) as inbox:
        async with open_backend(plan.backend_for_process(), clock) as backend:
            await _children_ready(inbox, len(children), clock)
            benchmark_start_ns = clock.now_ns()
            while not interrupted.is_set() and (load := next_load(plan.profile, steps)) is not None:
                index = len(steps)
                start_ns = clock.now_ns() + _START_LEAD_NS
                send_all(children, StepCommand(index, load, start_ns))
                control = _StepControl(index, plan, start_ns, children)
                work = StepWork(
                    index, load, plan.constraints, plan.seed, 0, plan.processes, start_ns
                )
                own = asyncio.create_task(
                    run_step(
                        work,
                        source=plan.source,
                        resolve=backend.resolve,
                        validate=validate,
                        sink_factory=sink_factory,
                        clock=clock,
                        stop=control.stop,
                        report=control.take,
                    )
                )
                try:
                    parts = await _follow_step(
                        inbox,
                        control,
                        own,
                        len(children),
                        interrupted,
                        clock,
                        on_progress,
                        benchmark_start_ns,
                    )
                finally:
                    if not own.done():
                        own.cancel()
                        await asyncio.wait([own])
                steps.append(
                    merge_step(index, load, start_ns, [own.result(), *parts], control.reason)
                )
    return BenchmarkResult(steps=steps, interrupted=interrupted.is_set())


async def _children_ready(inbox: _Inbox, count: int, clock: MonotonicClock) -> None:
    deadline_ns = clock.now_ns() + round(_STARTUP_TIMEOUT_S * 1e9)
    while count:
        remaining_ns = deadline_ns - clock.now_ns()
        if remaining_ns <= 0:
            raise LoadProcessError(f"{count} load processes did not start in time")
        received = await inbox.get(remaining_ns / 1e9)
        if received is not None and isinstance(received[1], Ready):
            count -= 1


async def _follow_step(
    inbox: _Inbox,
    control: _StepControl,
    own: asyncio.Task[ProcessStepResult[S]],
    children: int,
    interrupted: SigintFlag,
    clock: MonotonicClock,
    on_progress: Callable[[ProgressSnapshot], None] | None,
    benchmark_start_ns: int,
) -> list[ProcessStepResult[S]]:
    """The children's parts of the step, once they and this process's own part are done."""
    parts: list[ProcessStepResult[S]] = []
    next_report_ns = clock.now_ns() + PROGRESS_INTERVAL_NS
    while len(parts) < children or not own.done():
        if interrupted.is_set():
            control.halt(StopReason.stop_signal)
        if own.done():
            own.result()  # this process's part failed: raise it here, the children stop
        received = await inbox.get(_POLL_S)
        if received is not None:
            message = received[1]
            if isinstance(message, Done):
                parts.append(message.result)
            elif isinstance(message, ProgressMessage):
                control.take(message)
        now_ns = clock.now_ns()
        if on_progress is not None and now_ns >= next_report_ns:
            next_report_ns = now_ns + PROGRESS_INTERVAL_NS
            snapshot = control.progress.snapshot(
                now_ns=now_ns, benchmark_start_ns=benchmark_start_ns
            )
            on_progress(snapshot)
    return parts


__all__ = ["LoadProcessError", "run_event_loop", "run_in_processes"]
