"""Where records leave the load: a sink per step and process, built by a picklable factory.

Aggregation and file writing stay with the caller: the step runner (`assay.load`) hands every
record to the sink, and the engine (`assay.engine`) returns what each sink's `close()` gave
back (a small picklable summary `S`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias, TypeVar, runtime_checkable

from assay.core import GenerationResponse
from assay.records import Cancelled, Completed, Errored, RequestRecord

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


@dataclass(frozen=True, slots=True)
class StepContext:
    """What a sink knows about the step it receives records for.

    `measured_window` is the targeted-start interval `[start_ns, end_ns)` (end None = open) whose
    requests count; records outside it (warmup, cooldown) still arrive and are the sink's to keep
    apart.
    """

    step: int
    process: int
    processes: int
    start_ns: int
    measured_window: tuple[int, int | None]

    def in_window(self, targeted_start_ns: int) -> bool:
        """Whether a request targeted at `targeted_start_ns` falls in the measured window.

        >>> StepContext(0, 0, 1, 0, (10, 20)).in_window(20)
        False
        """
        begin, end = self.measured_window
        return targeted_start_ns >= begin and (end is None or targeted_start_ns < end)


class RecordSink(Protocol[S_co]):
    """Receives every record of one step in one process, then gives back a summary."""

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        """Take one finished record (called on the event loop: keep it cheap)."""
        ...

    def close(self) -> S_co:
        """Finish and return the summary that goes back to the caller (picklable)."""
        ...


SinkFactory: TypeAlias = Callable[[StepContext], RecordSink[S]]
"""Builds the sink of one step in one process; picklable when processes > 1."""


class SpoolingSink(RecordSink[S_co], Protocol):
    """A sink that keeps its records' serialized lines for someone else to write."""

    def spooled(self) -> bytes:
        """The lines of the records added since the last call (also after `close`)."""
        ...


@runtime_checkable
class SpooledSinkFactory(Protocol[S_co]):
    """A sink factory whose records can travel: a Ray actor on another node cannot reach the
    driver's files, so its sink aggregates where it runs and spools its records' lines, which
    the driver writes where the factory's own sinks would have."""

    def spooling(self, context: StepContext) -> SpoolingSink[S_co]:
        """The sink of one step of a slice that runs elsewhere."""
        ...

    def write_spooled(self, step: int, process: int, lines: bytes) -> None:
        """Write lines a spooling sink gave (called in the driver, in order)."""
        ...


@dataclass(frozen=True, slots=True)
class OutcomeCounts:
    """How many records of each outcome a sink saw, inside and outside the measured window.

    The outcomes count every record, warm-up and cool-down included, as the step's `totals`
    do; `outside_window` says how many of them the report's aggregator would leave out.
    """

    completed: int = 0
    errored: int = 0
    cancelled: int = 0
    outside_window: int = 0

    @property
    def total(self) -> int:
        """Every record seen."""
        return self.completed + self.errored + self.cancelled


class CountingSink:
    """A sink that only counts outcomes: the smallest useful sink, and picklable by factory.

    >>> sink = counting_sink(StepContext(0, 0, 1, 0, (0, None)))
    >>> sink.close()
    OutcomeCounts(completed=0, errored=0, cancelled=0, outside_window=0)
    """

    __slots__ = ("_cancelled", "_completed", "_context", "_errored", "_outside")

    def __init__(self, context: StepContext) -> None:
        self._context = context
        self._completed = self._errored = self._cancelled = self._outside = 0

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        if not self._context.in_window(record.targeted_start_ns):
            self._outside += 1
        match record.outcome:
            case Completed():
                self._completed += 1
            case Errored():
                self._errored += 1
            case Cancelled():
                self._cancelled += 1

    def close(self) -> OutcomeCounts:
        return OutcomeCounts(self._completed, self._errored, self._cancelled, self._outside)


def counting_sink(context: StepContext) -> CountingSink:
    """A `SinkFactory` for `CountingSink` (a module-level function, so it pickles)."""
    return CountingSink(context)


__all__ = [
    "CountingSink",
    "OutcomeCounts",
    "RecordSink",
    "SinkFactory",
    "SpooledSinkFactory",
    "SpoolingSink",
    "StepContext",
    "counting_sink",
]
