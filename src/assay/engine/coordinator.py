"""Several load-generating processes: each runs its slice of every step on its own event loop.

This process runs slice 0 and coordinates: it starts `processes - 1` children, gives every
step one start time on the shared monotonic clock, merges everyone's progress, evaluates the
error constraints over all of them and sends a stop message. Children ignore SIGINT; the parent
turns Ctrl-C into that same stop, so every process still cancels, records and closes its sinks.

Each child is a fresh interpreter running `python -m assay.engine.load_child FD`, not a
multiprocessing child: it imports only the run path (never the parent's `__main__` script, say
the CLI), and nothing starts multiprocessing's resource tracker process. Everything goes over
one socket pair per child (a multiprocessing `Connection`): the parent's `sys.path`, the pickled
plan, step commands and stops one way; readiness, progress, results and crashes the other.

The step loop itself (`coordinate`) knows its peers only through an `Inbox`: the Ray engine
(`assay.engine.ray_engine`) runs the same loop, with the same accounting, over Ray actors."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import signal
import subprocess
import sys
import types
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import Connection
from typing import Any, Generic, Protocol, TypeVar

from assay.backend import open_backend
from assay.core import MonotonicClock
from assay.engine.interrupt import SigintFlag, sigint_as_flag
from assay.engine.liveness import Heartbeats
from assay.errors import AssayError, ConfigError
from assay.load.benchmark_plan import (
    BenchmarkPlan,
    BenchmarkResult,
    LoadSlice,
    LostProcess,
    StepResult,
    merge_step,
    next_load,
    step_work,
)
from assay.load.progress import (
    PROGRESS_INTERVAL_NS,
    ProgressMessage,
    ProgressSnapshot,
    StepProgress,
)
from assay.load.step_runner import ProcessStepResult, StepWork, slice_owed
from assay.load_launcher import LoadChild, LoadProcesses, send_all, start_load_processes
from assay.records.sink import SinkFactory
from assay.spec.constraints import NS_PER_S, StopReason
from assay.spec.load import StepLoad

S = TypeVar("S")
T = TypeVar("T")
P = TypeVar("P")

# Every child is idle and listening when a step is handed out; this lead lets all of them
# receive the command before the first request is due.
_START_LEAD_NS = 50_000_000
_POLL_S = 0.02
_STARTUP_TIMEOUT_S = 120.0


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
    """A child failed; its last word before it exits. `error` is set when the failure is one
    meant for the user (an `AssayError`, e.g. a full disk), to be reported as one line."""

    process: int
    traceback: str
    error: AssayError | None = None


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
        payload = pickle_for_children((plan, sink_factory))
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


def pickle_for_children(payload: object) -> bytes:
    """`payload` pickled for another interpreter, refusing what only `__main__` defines."""
    buffer = io.BytesIO()
    _ImportablePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(payload)
    return buffer.getvalue()


class _Inbox:
    """The children's messages, read by the event loop as they arrive; a crash is raised from
    `get`. `last_read_ns` says when each child's latest message came off its socket (what the
    heartbeat deadline is judged by, whether or not `get` has handed it out yet)."""

    def __init__(self, children: list[LoadChild], clock: MonotonicClock) -> None:
        self._children = children
        self._clock = clock
        self._queue: asyncio.Queue[tuple[LoadChild, object]] = asyncio.Queue()
        self.last_read_ns: dict[LoadChild, int] = {}

    def __enter__(self) -> _Inbox:
        loop = asyncio.get_running_loop()
        for child in self._children:
            watch_readable(loop, child.conn, self._read, child)
        return self

    def __exit__(self, *_: object) -> None:
        for child in self._children:
            self.forget(child)

    def _read(self, child: LoadChild) -> None:
        self.last_read_ns[child] = self._clock.now_ns()
        try:
            while child.conn.poll():
                self._queue.put_nowait((child, child.conn.recv()))
        except (EOFError, OSError):
            asyncio.get_running_loop().remove_reader(child.conn.fileno())
            self._queue.put_nowait((child, GONE))

    noun = "load process"
    nouns = "load processes"

    def forget(self, child: LoadChild) -> None:
        """Stop reading `child` (it was killed: whatever it still had to say is void)."""
        if not child.conn.closed:
            asyncio.get_running_loop().remove_reader(child.conn.fileno())

    def send(self, children: Iterable[LoadChild], message: object) -> None:
        send_all(list(children), message)

    def has_unread(self, child: LoadChild) -> bool:
        return child.conn.poll()

    def kill(self, child: LoadChild) -> None:
        child.popen.kill()  # SIGKILL ends a stopped process too
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.popen.wait(timeout=1.0)
        self.forget(child)

    def name(self, child: LoadChild) -> str:
        return child.name

    def describe_exit(self, child: LoadChild) -> str:
        """How a child that closed its socket ended: its exit code or the signal that killed it."""
        # Its socket closed: the exit status is due at once (or it is hung, and says so).
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.popen.wait(timeout=1.0)
        code = child.popen.returncode
        if code is None:
            return "closed its connection and did not exit"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by {signal.Signals(-code).name}"
            return f"was killed by signal {-code}"
        return f"exited with code {code}"

    async def get(self, timeout_s: float) -> tuple[LoadChild, object] | None:
        return await next_message(self._queue, timeout_s, self.name)


async def next_message(
    queue: asyncio.Queue[tuple[P, object]], timeout_s: float, name: Callable[[P], str]
) -> tuple[P, object] | None:
    """An inbox's next message and its sender, or None after `timeout_s` without one; a
    peer's crash is raised."""
    try:
        async with asyncio.timeout(timeout_s):
            peer, message = await queue.get()
    except TimeoutError:
        return None
    if isinstance(message, Crashed):
        if message.error is not None:
            raise message.error
        raise LoadProcessError(f"{name(peer)} failed:\n{message.traceback}")
    return peer, message


GONE = object()
"""What the inbox gives for a child whose socket closed without a word."""


class Inbox(Protocol[P]):
    """How the coordinator hears from and talks to the peers that run the other slices (load
    children, Ray actors): each engine's transport behind one set of verbs."""

    noun: str
    """What a peer is called in the run's messages ("load process", "Ray actor")."""

    nouns: str
    """The plural of `noun`."""

    last_read_ns: dict[P, int]
    """When each peer was last heard from (the heartbeat deadline is judged by it)."""

    async def get(self, timeout_s: float) -> tuple[P, object] | None:
        """The next message and its sender, `(peer, GONE)` for a peer that went away, None
        after `timeout_s` without one; a peer's crash is raised."""
        ...

    def send(self, peers: Iterable[P], message: object) -> None:
        """Send `message` to each of `peers` (one that is gone is reported when read)."""
        ...

    def has_unread(self, peer: P) -> bool:
        """Whether words of `peer` wait to be read (it is alive, only not read yet)."""
        ...

    def kill(self, peer: P) -> None:
        """End a peer that stopped answering; what it still had to say is void."""
        ...

    def name(self, peer: P) -> str:
        """The peer's name, for start-up errors."""
        ...

    def describe_exit(self, peer: P) -> str:
        """How a peer that went away ended ("was killed by SIGKILL")."""
        ...


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

    def __init__(
        self,
        index: int,
        plan: BenchmarkPlan,
        start_ns: int,
        tell_all: Callable[[object], None],
        clock: MonotonicClock,
    ):
        self.index = index
        self.progress = StepProgress(index, plan.constraints, start_ns=start_ns)
        self.stop = asyncio.Event()
        self.reason: StopReason | None = None
        self.halted_ns: int | None = None
        self._tell_all = tell_all
        self._clock = clock

    def now_ns(self) -> int:
        return self._clock.now_ns()

    def take(self, message: ProgressMessage) -> None:
        reason = self.progress.take(message)
        if reason is not None:
            self.halt(reason)

    def halt(self, reason: StopReason) -> None:
        if self.reason is None:
            self.reason = reason
            self.halted_ns = self._clock.now_ns()
            self.stop.set()
            self._tell_all(StopStep(self.index))


async def _coordinate(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    children: list[LoadChild],
    interrupted: SigintFlag,
    on_progress: Callable[[ProgressSnapshot], None] | None,
) -> BenchmarkResult[S]:
    """Run process 0's slice of every step here while following the children's."""
    clock = MonotonicClock()
    with _Inbox(children, clock) as inbox:
        async with open_backend(plan.backend_for_process(), clock) as backend:
            own = LoadSlice(plan, 0, sink_factory, backend.resolve, plan.validator_factory(), clock)
            peers = {child: process for process, child in enumerate(children, start=1)}
            return await coordinate(
                plan, peers, inbox, interrupted, on_progress, clock=clock, own=own
            )


async def coordinate(
    plan: BenchmarkPlan,
    peers: dict[P, int],
    inbox: Inbox[P],
    interrupted: SigintFlag,
    on_progress: Callable[[ProgressSnapshot], None] | None,
    *,
    clock: MonotonicClock,
    own: LoadSlice[S] | None = None,
    start_lead_ns: int = _START_LEAD_NS,
) -> BenchmarkResult[S]:
    """Run every step over `peers` (each running slice `peers[peer]`) and, with `own`, a slice
    of this process: one start time per step on `clock`, merged progress, the error
    constraints over everyone, one stop for all.

    A peer lost during a step (gone, or killed for not answering) is left out of the rest of
    it; the step ends with the others and the run ends after it.
    """
    steps: list[StepResult[S]] = []
    live = dict(peers)
    # Peers that went away between steps: their slice of the next step is lost from its start.
    departed: list[tuple[int, str]] = []
    heartbeats = Heartbeats[P](round(plan.unresponsive_after_s * NS_PER_S))
    await _peers_ready(inbox, len(peers), clock, interrupted)
    benchmark_start_ns = clock.now_ns()
    while not interrupted.is_set() and (load := next_load(plan.profile, steps)) is not None:
        index = len(steps)
        start_ns = clock.now_ns() + start_lead_ns
        inbox.send(live, StepCommand(index, load, start_ns))
        control = _StepControl(index, plan, start_ns, partial(inbox.send, list(live)), clock)
        own_part = None
        if own is not None:
            own_part = asyncio.create_task(
                own.run(index, load, start_ns, stop=control.stop, report=control.take)
            )
        follow = _Follow(inbox, control, live, departed, heartbeats, clock)
        try:
            parts = await follow.step(own_part, interrupted, on_progress, benchmark_start_ns)
        finally:
            if own_part is not None:
                if not own_part.done():
                    own_part.cancel()
                    await asyncio.wait([own_part])
                if not own_part.cancelled():
                    own_part.exception()  # retrieved: a peer's failure is the one raised
        done = parts if own_part is None else [own_part.result(), *parts]
        lost = tuple(
            LostProcess(
                process,
                reason,
                control.progress.reported(process),
                _owed(plan, step_work(plan, process, index, load, start_ns), control, done),
            )
            for process, reason in follow.lost
        )
        steps.append(merge_step(index, load, start_ns, done, control.reason, lost))
        if lost:
            break  # the rest of the run would be missing a slice of every step
    return BenchmarkResult(steps=steps, interrupted=interrupted.is_set())


def _owed(
    plan: BenchmarkPlan,
    slice_work: StepWork,
    control: _StepControl,
    done: list[ProcessStepResult[S]],
) -> int | None:
    """What a lost slice of the step owed by the time the step stopped dispatching: its share
    of the rate's schedule or of the trace, counted from `plan.source` as the slice would have."""
    budget = plan.constraints.budget(plan.source.size())
    ends = [
        end
        for end in (plan.constraints.deadline_ns(slice_work.start_ns), control.halted_ns)
        if end is not None
    ]
    if ends:
        end_ns: int | None = min(ends)
    elif budget is not None:
        end_ns = None  # the others ran their whole slices, so would it have
    else:
        # Every slice lost (none finished): the step ended when the last of them was.
        end_ns = max((part.finished_ns for part in done), default=control.now_ns())
    return slice_owed(slice_work, plan.source, budget, end_ns)


async def _peers_ready(
    inbox: Inbox[P], count: int, clock: MonotonicClock, interrupted: SigintFlag
) -> None:
    deadline_ns = clock.now_ns() + round(_STARTUP_TIMEOUT_S * 1e9)
    while count and not interrupted.is_set():
        remaining_ns = deadline_ns - clock.now_ns()
        if remaining_ns <= 0:
            raise LoadProcessError(f"{count} {inbox.nouns} did not start in time")
        received = await inbox.get(min(remaining_ns / 1e9, _POLL_S))
        if received is None:
            continue
        peer, message = received
        if message is GONE:
            raise LoadProcessError(f"{inbox.name(peer)} {inbox.describe_exit(peer)} while starting")
        if isinstance(message, Ready):
            count -= 1


@dataclass
class _Follow(Generic[P]):
    """The coordinator's watch over the peers during one step: their parts as they come, and
    the ones lost (gone, or killed after `unresponsive_after_s` of silence); the peers that
    `departed` before it are lost from its start."""

    inbox: Inbox[P]
    control: _StepControl
    live: dict[P, int]
    departed: list[tuple[int, str]]
    heartbeats: Heartbeats[P]
    clock: MonotonicClock
    lost: list[tuple[int, str]] = field(init=False)

    def __post_init__(self) -> None:
        self.lost = [*self.departed]
        self.departed.clear()

    async def step(
        self,
        own: asyncio.Task[ProcessStepResult[S]] | None,
        interrupted: SigintFlag,
        on_progress: Callable[[ProgressSnapshot], None] | None,
        benchmark_start_ns: int,
    ) -> list[ProcessStepResult[S]]:
        """The peers' parts of the step, once they and this process's own part are done."""
        control, clock = self.control, self.clock
        parts: list[ProcessStepResult[S]] = []
        waiting = dict(self.live)
        self.heartbeats.expect(waiting, clock.now_ns())
        next_report_ns = clock.now_ns() + PROGRESS_INTERVAL_NS
        while waiting or (own is not None and not own.done()):
            if interrupted.is_set():
                control.halt(StopReason.stop_signal)
            if own is not None and own.done():
                own.result()  # this process's part failed: raise it here, the peers stop
            received = await self.inbox.get(_POLL_S)
            now_ns = clock.now_ns()
            if received is not None and received[0] in self.live:
                # (What a killed peer had still sent is void: its part is lost.)
                peer, message = received
                if message is GONE:
                    self._lose(peer, waiting, self.inbox.describe_exit(peer))
                elif isinstance(message, Done):
                    parts.append(message.result)
                    waiting.pop(peer, None)
                    self.heartbeats.forget(peer)
                elif isinstance(message, ProgressMessage):
                    control.take(message)
            for peer, read_ns in self.inbox.last_read_ns.items():
                self.heartbeats.heard(peer, read_ns)
            for peer in self.heartbeats.silent(now_ns):
                if self.inbox.has_unread(peer):
                    continue  # its words are waiting to be read: it is alive
                self.inbox.kill(peer)
                seconds = self.heartbeats.timeout_ns / NS_PER_S
                self._lose(peer, waiting, f"stopped answering for {seconds:g} s and was killed")
            if on_progress is not None and now_ns >= next_report_ns:
                next_report_ns = now_ns + PROGRESS_INTERVAL_NS
                snapshot = control.progress.snapshot(
                    now_ns=now_ns, benchmark_start_ns=benchmark_start_ns
                )
                on_progress(snapshot)
        return parts

    def _lose(self, peer: P, waiting: dict[P, int], reason: str) -> None:
        process = self.live.pop(peer, None)
        self.heartbeats.forget(peer)
        if process is None:
            return
        loss = (process, f"{self.inbox.noun} {process} {reason}")
        if waiting.pop(peer, None) is not None:
            self.lost.append(loss)
        else:
            self.departed.append(loss)  # its part of this step is in: the next one lacks it


__all__ = [
    "GONE",
    "Crashed",
    "Done",
    "Inbox",
    "LoadProcessError",
    "Ready",
    "StepCommand",
    "StopStep",
    "coordinate",
    "next_message",
    "pickle_for_children",
    "run_event_loop",
    "run_in_processes",
]
