"""The body of one load-generating process (`assay.engine.load_child` is its entry point).

The process talks with its parent over a socket pair (see `assay.engine.coordinator`): it takes
the plan, then runs the steps it is sent until it is told to stop. It imports only the run path,
not the parent's `__main__` script, starts no helper process, and inherits SIGINT and SIGTERM
ignored from the parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from typing import TypeVar

from assay.backend import open_backend
from assay.core import MonotonicClock
from assay.engine.coordinator import (
    Crashed,
    Done,
    Ready,
    StepCommand,
    StopStep,
    run_event_loop,
    watch_readable,
)
from assay.errors import first_assay_error
from assay.load.benchmark_plan import BenchmarkPlan, LoadSlice
from assay.load.collector import collector_on
from assay.records.sink import SinkFactory

S = TypeVar("S")


def child_main(conn: Connection) -> None:
    """The body of a load process: set up from the parent's messages on `conn`, then run the
    steps it sends until it says stop."""
    # The parent decides what Ctrl-C and SIGTERM mean (systemd sends SIGTERM to the whole
    # group); a child must finish its step and report, and it exits when the parent goes away.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
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
        collector_on()
        run_event_loop(_child(plan, sink_factory, process, conn))
    except BaseException as error:
        # One meant for the user (a full disk, say) goes along, for the parent to tell it as
        # one line; anything else is a bug, told with its traceback.
        with contextlib.suppress(OSError):
            conn.send(Crashed(process, traceback.format_exc(), first_assay_error(error)))
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
        own = LoadSlice(plan, process, sink_factory, backend.resolve, validate, clock)
        conn.send(Ready(process))
        while True:
            # Between steps this process has nothing else to do, so a blocking read is fine.
            command = conn.recv()
            if command is None:
                return
            if isinstance(command, StopStep):
                continue  # for a step this process had already finished
            assert isinstance(command, StepCommand), f"unexpected command {command!r}"
            step_stop = asyncio.Event()
            async with asyncio.TaskGroup() as group:
                watcher = group.create_task(_relay_stop(conn, command.step, step_stop))
                try:
                    result = await own.run(
                        command.step,
                        command.load,
                        command.start_ns,
                        stop=step_stop,
                        report=conn.send,
                    )
                finally:
                    watcher.cancel()
            conn.send(Done(result))
            if watcher.done() and not watcher.cancelled() and watcher.result():
                return


async def _relay_stop(conn: Connection, step: int, step_stop: asyncio.Event) -> bool:
    """Set `step_stop` when the parent stops this step; True if it also said to exit (or went
    away). Reads only while the step runs: nothing else arrives then."""
    loop = asyncio.get_running_loop()
    readable = asyncio.Event()
    watch_readable(loop, conn, readable.set)
    try:
        while True:
            await readable.wait()
            readable.clear()
            while conn.poll():
                try:
                    message = conn.recv()
                except EOFError:
                    message = None
                if message is None or message == StopStep(step):
                    step_stop.set()
                    return message is None
    finally:
        loop.remove_reader(conn.fileno())


__all__ = ["child_main"]
