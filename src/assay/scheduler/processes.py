"""Several load-generating processes: each runs its slice of every step on its own event loop.

The parent only coordinates: it starts the children, gives every step one start time on the
shared monotonic clock, merges their progress, evaluates the error constraints over all of them
and sends a stop message. Children ignore SIGINT; the parent turns Ctrl-C into that same stop,
so every child still cancels, records and closes its sinks before it answers.

Each child is a fresh interpreter running `python -m assay.scheduler.load_process FD`, not a
multiprocessing child: it imports only the run path (never the parent's `__main__` script, say
the CLI), and nothing starts multiprocessing's resource tracker process. Everything goes over
one socket pair per child (a multiprocessing `Connection`): the parent's `sys.path`, the pickled
plan, step commands and stops one way; readiness, progress, results and crashes the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
import types
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe, wait
from pathlib import Path
from typing import Any, Generic, TypeVar

import assay
from assay.backend import open_backend
from assay.core import MonotonicClock
from assay.errors import AssayError, ConfigError
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
class _Stop:
    """Stop step `step` now; a child that has already finished it ignores the message."""

    step: int


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


@dataclass(slots=True)
class _Child:
    """One running load process and the parent's end of its socket pair."""

    name: str
    popen: subprocess.Popen[bytes]
    conn: Connection


def run_in_processes(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    *,
    on_progress: Callable[[ProgressSnapshot], None] | None = None,
) -> BenchmarkResult[S]:
    """Run `plan` in `plan.processes` child processes; Ctrl-C becomes a clean stop."""
    with sigint_as_flag() as interrupted, _started(plan.processes) as children:
        # Pickled while the children import the run path; it then waits in their sockets.
        payload = _pickle_for_children((plan, sink_factory))
        for process, child in enumerate(children):
            child.conn.send((process, list(sys.path)))
            child.conn.send_bytes(payload)
        _await_ready(children)
        return _run_steps(plan, children, interrupted, on_progress)


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


@contextlib.contextmanager
def _started(count: int) -> Iterator[list[_Child]]:
    """Start `count` load processes at once; on leaving (also on an error: a failing
    `on_progress`, a dead child) every child is told to stop and is waited for."""
    children: list[_Child] = []
    try:
        for process in range(count):
            children.append(_start(f"assay-load-{process}"))
        yield children
    finally:
        _shut_down(children)


def _start(name: str) -> _Child:
    parent_end, child_end = Pipe(duplex=True)
    with child_end:
        fd = child_end.fileno()
        try:
            popen = _popen_ignoring_sigint(
                [sys.executable, "-m", "assay.scheduler.load_process", str(fd)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                env=_child_environment(),
            )
        except BaseException:
            parent_end.close()
            raise
    return _Child(name, popen, parent_end)


def _child_environment() -> dict[str, str]:
    # The entry module must import from the same assay as this process; once it runs, the
    # child takes this process's whole `sys.path` (sink factories may live anywhere on it).
    root = str(Path(assay.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}


def _popen_ignoring_sigint(command: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """Start `command` with SIGINT ignored from its first instruction (an ignored signal survives
    exec and Python keeps it ignored), so a Ctrl-C during its start-up cannot kill it."""
    if threading.current_thread() is not threading.main_thread():
        return subprocess.Popen(command, **options)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.Popen(command, **options)
    finally:
        signal.signal(signal.SIGINT, previous)


def _await_ready(children: list[_Child]) -> None:
    waiting = {child.conn: child for child in children}
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
    children: list[_Child],
    interrupted: SigintFlag,
    on_progress: Callable[[ProgressSnapshot], None] | None,
) -> BenchmarkResult[S]:
    clock = MonotonicClock()
    benchmark_start_ns = clock.now_ns()
    steps: list[StepResult[S]] = []
    while not interrupted.is_set() and (load := next_load(plan.profile, steps)) is not None:
        index = len(steps)
        start_ns = clock.now_ns() + _START_LEAD_NS
        _send_all(children, _StepCommand(index, load, start_ns))
        progress = StepProgress(index, plan.constraints, start_ns=start_ns)
        parent_stop: StopReason | None = None
        parts: list[ProcessStepResult[S]] = []
        pending = {child.conn: child for child in children}
        next_report_ns = clock.now_ns() + PROGRESS_INTERVAL_NS
        while pending:
            if interrupted.is_set() and parent_stop is None:
                parent_stop = StopReason.stop_signal
                _send_all(children, _Stop(index))
            for conn in _ready_connections(pending, _POLL_S):
                message = _receive(conn, pending[conn])
                if isinstance(message, _Done):
                    parts.append(message.result)
                    del pending[conn]
                elif isinstance(message, ProgressMessage):
                    reason = progress.take(message)
                    if reason is not None and parent_stop is None:
                        parent_stop = reason
                        _send_all(children, _Stop(index))
            now_ns = clock.now_ns()
            if on_progress is not None and now_ns >= next_report_ns:
                next_report_ns = now_ns + PROGRESS_INTERVAL_NS
                on_progress(progress.snapshot(now_ns=now_ns, benchmark_start_ns=benchmark_start_ns))
        steps.append(merge_step(index, load, start_ns, parts, parent_stop))
    return BenchmarkResult(steps=steps, interrupted=interrupted.is_set())


def _send_all(children: list[_Child], message: object) -> None:
    for child in children:
        # A child that died cannot take it; its closed socket is reported when read.
        with contextlib.suppress(OSError):
            child.conn.send(message)


def _ready_connections(pending: dict[Connection, _Child], timeout_s: float) -> list[Connection]:
    """The connections with a message (or end of file: a child that died is read and raises)."""
    ready = wait(list(pending), timeout=timeout_s)
    connections = [item for item in ready if isinstance(item, Connection)]
    if not connections:
        for child in pending.values():
            if child.popen.poll() is not None:
                raise LoadProcessError(f"{child.name} exited with code {child.popen.returncode}")
    return connections


def _receive(conn: Connection, child: _Child) -> object:
    try:
        message: object = conn.recv()
    except (EOFError, OSError):
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.popen.wait(timeout=1.0)
        raise LoadProcessError(f"{child.name} exited with code {child.popen.returncode}") from None
    if isinstance(message, _Crashed):
        raise LoadProcessError(f"{child.name} failed:\n{message.traceback}")
    return message


def _shut_down(children: list[_Child]) -> None:
    """Tell every child to stop (it ends a step under way first) and wait until each exits."""
    _send_all(children, None)
    clock = MonotonicClock()
    deadline_ns = clock.now_ns() + round(_SHUTDOWN_TIMEOUT_S * 1e9)
    # Read until each child closes its end: one still sending a result must not block on a
    # full socket while the parent waits for it to exit.
    open_ends = {child.conn for child in children}
    while open_ends and (remaining_ns := deadline_ns - clock.now_ns()) > 0:
        for conn in wait(list(open_ends), timeout=remaining_ns / 1e9):
            assert isinstance(conn, Connection)
            try:
                conn.recv_bytes()
            except (EOFError, OSError):
                open_ends.discard(conn)
    for child in children:
        try:
            child.popen.wait(timeout=max(0.0, (deadline_ns - clock.now_ns()) / 1e9))
        except subprocess.TimeoutExpired:
            child.popen.kill()
            child.popen.wait()
        child.conn.close()


def child_main(conn: Connection) -> None:
    """The body of a load process (see `assay.scheduler.load_process`): set up from the parent's
    messages on `conn`, then run the steps it sends until it says stop."""
    # The parent decides what Ctrl-C means; a child must finish its step and report.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    process = -1
    try:
        received: object = conn.recv()
        if received is None:
            return  # the parent gave up before sending the plan (it could not pickle it)
        assert isinstance(received, tuple), f"unexpected set-up {received!r}"
        process, path = received
        # As multiprocessing does: the parent's path, so the payload's modules import here too.
        sys.path[:] = path
        plan, sink_factory = pickle.loads(conn.recv_bytes())
        run_event_loop(_child(plan, sink_factory, process, conn))
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
            if isinstance(command, _Stop):
                continue  # for a step this process had already finished
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
                watcher = group.create_task(_relay_stop(conn, command.step, step_stop))
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
            if watcher.done() and not watcher.cancelled() and watcher.result():
                return


async def _relay_stop(conn: Connection, step: int, step_stop: asyncio.Event) -> bool:
    """Set `step_stop` when the parent stops this step; True if it also said to exit (or went
    away). Reads only while the step runs: nothing else arrives then."""
    loop = asyncio.get_running_loop()
    readable = asyncio.Event()
    loop.add_reader(conn.fileno(), readable.set)
    try:
        while True:
            await readable.wait()
            readable.clear()
            while conn.poll():
                try:
                    message = conn.recv()
                except EOFError:
                    message = None
                if message is None or message == _Stop(step):
                    step_stop.set()
                    return message is None
    finally:
        loop.remove_reader(conn.fileno())


__all__ = ["LoadProcessError", "child_main", "run_event_loop", "run_in_processes"]
