"""One Ray actor: what a load child does, over Ray method calls instead of a socket pair.

The driver (`assay.engine.ray_engine`) sets the actor up with the pickled plan, hands it
each step (`start_step`), may stop it (`stop_step`), and long-polls `drain` for what the actor
has to say: its progress, its records' lines, its part of a step, a crash. This module imports
no Ray: the driver wraps the class with `ray.remote` when Ray is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import pickle
import time
import traceback
from dataclasses import dataclass
from typing import Any

from assay.backend import open_backend
from assay.core import MonotonicClock
from assay.engine.coordinator import Crashed, Done, Ready, StepCommand
from assay.errors import first_assay_error
from assay.load.benchmark_plan import LoadSlice
from assay.records.sink import (
    RecordSink,
    SpooledSinkFactory,
    SpoolingSink,
    StepContext,
)


@dataclass(frozen=True, slots=True)
class RecordLines:
    """Records of slice `process` in step `step`, as the lines records.jsonl holds."""

    step: int
    process: int
    lines: bytes


@dataclass(frozen=True, slots=True)
class DriverClock:
    """The driver's monotonic and wall clocks read at one instant, and the driver's node."""

    monotonic_ns: int
    wall_ns: int
    node_id: str


class OffsetClock(MonotonicClock):
    """This process's monotonic clock shifted onto the driver's: durations are measured here,
    on this clock alone; the offset is fixed once, so it never bends them.

    On the driver's node the offset is 0 (one monotonic clock per machine). Elsewhere it comes
    from the wall clocks: the step starts the driver broadcasts then land on this node as far
    apart from the driver's as the two wall clocks are (NTP keeps that to about a millisecond).

    >>> clock = OffsetClock(offset_ns=10**12)
    >>> before_ns = time.perf_counter_ns()
    >>> clock.now_ns() - before_ns >= 10**12
    True
    """

    __slots__ = ("offset_ns",)

    def __init__(self, offset_ns: int) -> None:
        self.offset_ns = offset_ns

    def now_ns(self) -> int:
        return time.perf_counter_ns() + self.offset_ns


def offset_to(driver: DriverClock, node_id: str) -> int:
    """What to add to this process's monotonic clock to read the driver's.

    >>> offset_to(DriverClock(monotonic_ns=5, wall_ns=9, node_id="a"), "a")
    0
    """
    if node_id == driver.node_id:
        return 0
    here_ns = time.perf_counter_ns() - time.time_ns()
    return (driver.monotonic_ns - driver.wall_ns) - here_ns


class LoadSliceActor:
    """A Ray actor that runs one slice of every step, as a load child does."""

    def __init__(self) -> None:
        self._outbox: list[object] = []
        self._news: asyncio.Event | None = None
        self._resources = contextlib.AsyncExitStack()
        self._slice: LoadSlice[Any] | None = None
        self._sink: SpoolingSink[Any] | None = None
        self._step: int | None = None
        self._stop: asyncio.Event | None = None
        self._running: asyncio.Task[None] | None = None
        self._process = -1

    async def setup(self, process: int, payload: bytes, driver: DriverClock) -> Ready:
        """Unpickle the plan, open the HTTP session, and say so."""
        import ray  # an actor runs under Ray: it is there

        node_id = ray.get_runtime_context().get_node_id()
        self._process = process
        self._news = asyncio.Event()
        plan, sink_factory = pickle.loads(payload)
        clock = OffsetClock(offset_to(driver, node_id))
        backend = await self._resources.enter_async_context(
            open_backend(plan.backend_for_process(), clock)
        )
        factory = sink_factory
        if isinstance(sink_factory, SpooledSinkFactory):
            factory = functools.partial(self._spooling_sink, sink_factory)
        validate = plan.validator_factory()
        self._slice = LoadSlice(plan, process, factory, backend.resolve, validate, clock)
        return Ready(process)

    def _spooling_sink(
        self, spooled: SpooledSinkFactory[Any], context: StepContext
    ) -> RecordSink[Any]:
        self._sink = spooled.spooling(context)
        return self._sink

    async def start_step(self, command: StepCommand) -> None:
        """Start this slice of a step; its part comes out of `drain` when it ends."""
        self._step, self._stop = command.step, asyncio.Event()
        # Kept here and never failing: `_run` turns any error into a `Crashed` message.
        self._running = asyncio.ensure_future(self._run(command, self._stop))

    async def stop_step(self, step: int) -> None:
        """Stop step `step` now (ignored when this slice has already finished it)."""
        if self._step == step and self._stop is not None:
            self._stop.set()

    async def drain(self, wait_s: float) -> list[object]:
        """What this actor has said since the last call, waiting up to `wait_s` for something
        (an empty answer is still a heartbeat: the driver knows the actor is alive)."""
        news = self._news
        if news is not None and not self._outbox:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_s):
                    await news.wait()
        if news is not None:
            news.clear()
        said = self._take_lines()
        said.extend(self._outbox)
        self._outbox.clear()
        return said

    async def close(self) -> None:
        """Stop a step still running, close the HTTP session and end this actor's process."""
        if self._stop is not None:
            self._stop.set()
        if self._running is not None:
            await asyncio.wait([self._running])
        await self._resources.aclose()
        import ray

        # An orderly exit (Ray ends the worker as a process exits, running its exit hooks),
        # where a kill would end it at once.
        ray.actor.exit_actor()  # type: ignore[no-untyped-call]  # Ray leaves it unannotated

    async def _run(self, command: StepCommand, stop: asyncio.Event) -> None:
        assert self._slice is not None
        try:
            result = await self._slice.run(
                command.step, command.load, command.start_ns, stop=stop, report=self._say
            )
            # The sink is closed: its last lines go before the part that counts them.
            self._outbox.extend(self._take_lines(final=True))
            self._sink = None
            self._say(Done(result))
        except Exception as error:
            self._say(Crashed(self._process, traceback.format_exc(), first_assay_error(error)))

    def _take_lines(self, *, final: bool = False) -> list[object]:
        sink, step = self._sink, self._step
        if sink is None or step is None:
            return []
        lines = sink.spooled()
        # The last batch goes even when empty: the driver then has a shard for every part.
        if not lines and not final:
            return []
        return [RecordLines(step, self._process, lines)]

    def _say(self, message: object) -> None:
        self._outbox.append(message)
        if self._news is not None:
            self._news.set()


__all__ = ["DriverClock", "LoadSliceActor", "OffsetClock", "RecordLines", "offset_to"]
