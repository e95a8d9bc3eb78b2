"""Progress of a step: per-process counters, the compact messages they send, the merged view.

A process keeps a `StepTally` and sends a `ProgressMessage` (cumulative counts plus the outcomes
finished since its last message) at most every ~250 ms. The parent merges them in a
`StepProgress`, which also evaluates the error constraints over all processes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from assay.load.error_watch import ErrorWatch
from assay.spec.constraints import NS_PER_S, Constraints, StopReason

PROGRESS_INTERVAL_NS = 250_000_000
_TOP_CODES = 3


@dataclass(frozen=True, slots=True)
class OutcomeTotals:
    """Requests of a step by outcome; `dispatched == completed + errored + cancelled` at its end.

    >>> OutcomeTotals(dispatched=3, completed=2, errored=1).in_flight
    0
    """

    dispatched: int = 0
    completed: int = 0
    errored: int = 0
    cancelled: int = 0

    @property
    def in_flight(self) -> int:
        """Dispatched and not yet finished."""
        return self.dispatched - self.completed - self.errored - self.cancelled

    def __add__(self, other: OutcomeTotals) -> OutcomeTotals:
        return OutcomeTotals(
            self.dispatched + other.dispatched,
            self.completed + other.completed,
            self.errored + other.errored,
            self.cancelled + other.cancelled,
        )


@dataclass(frozen=True, slots=True)
class ProgressMessage:
    """One process's counts for a step; `recent` holds 1 (errored) / 0 (completed) per request
    finished since the previous message, in order, for the parent's error-rate window."""

    step: int
    process: int
    totals: OutcomeTotals
    errors_by_code: dict[str, int]
    recent: bytes


@dataclass(slots=True)
class StepTally:
    """The live counters of one step in one process (runtime state, mutated per record).

    `errors_by_code` is one of four counts of diagnostic codes, each for its own reader. This
    one counts every errored record of the step in this process as it finishes, warm-up and
    cool-down included, by the code's string (it travels in progress messages): the progress
    line and the step's `errors_by_code` (`merge_step`) are made of it. The report's figure is
    `StepAggregator`'s (the measured window only) and the chart's the timeline's (every record,
    by the interval it finished in).
    """

    step: int
    process: int
    dispatched: int = 0
    completed: int = 0
    errored: int = 0
    cancelled: int = 0
    errors_by_code: dict[str, int] = field(default_factory=dict)
    recent: bytearray = field(default_factory=bytearray)

    def totals(self) -> OutcomeTotals:
        """The counts as a frozen value."""
        return OutcomeTotals(self.dispatched, self.completed, self.errored, self.cancelled)

    def message(self) -> ProgressMessage:
        """A message with the current counts; empties the recent outcomes it carries."""
        recent = bytes(self.recent)
        self.recent.clear()
        return ProgressMessage(
            self.step, self.process, self.totals(), dict(self.errors_by_code), recent
        )


def merged_codes(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Counts by diagnostic code summed, largest first (equal counts by code).

    >>> merged_codes([{"a": 1, "b": 2}, {"a": 2}])
    {'a': 3, 'b': 2}
    """
    merged: Counter[str] = Counter()
    for count in counts:
        merged.update(count)
    return dict(sorted(merged.items(), key=lambda item: (-item[1], item[0])))


@dataclass(frozen=True, slots=True)
class ProgressSnapshot:
    """What a progress display shows: the running step's merged counts and rate."""

    elapsed_s: float
    step: int
    totals: OutcomeTotals
    requests_per_s: float
    top_codes: tuple[tuple[str, int], ...]


class StepProgress:
    """The parent's merged view of one step across processes, and its error constraints.

    >>> progress = StepProgress(0, Constraints(max_errors=2), start_ns=0)
    >>> counts = OutcomeTotals(dispatched=3, completed=1, errored=2)
    >>> message = ProgressMessage(0, 0, counts, {"http_status": 2}, bytes([0, 1, 1]))
    >>> progress.take(message)
    <StopReason.max_errors: 'max_errors'>
    >>> progress.snapshot(now_ns=2 * NS_PER_S, benchmark_start_ns=0).requests_per_s
    0.5
    """

    def __init__(self, step: int, constraints: Constraints, *, start_ns: int) -> None:
        self.step = step
        self.start_ns = start_ns
        self._watch = ErrorWatch(constraints)
        self._latest: dict[int, ProgressMessage] = {}

    def take(self, message: ProgressMessage) -> StopReason | None:
        """Merge one process's message; a reason when the merged errors hit a constraint."""
        self._latest[message.process] = message
        reason: StopReason | None = None
        for flag in message.recent:
            found = self._watch.observe(errored=flag == 1)
            reason = reason or found
        return reason

    def reported(self, process: int) -> OutcomeTotals:
        """What process `process` last reported (zeros before its first message)."""
        message = self._latest.get(process)
        return OutcomeTotals() if message is None else message.totals

    def snapshot(self, *, now_ns: int, benchmark_start_ns: int) -> ProgressSnapshot:
        """The merged view as a frozen snapshot for `on_progress`: the latest message of every
        process, summed.

        Its error codes sum each process's latest `StepTally` report, so they lag by up to a
        progress interval and keep a process that was later lost; the step's own count is
        `merge_step`'s.
        """
        latest = self._latest.values()
        totals = sum((message.totals for message in latest), OutcomeTotals())
        codes = merged_codes(message.errors_by_code for message in latest)
        step_s = max(now_ns - self.start_ns, 1) / NS_PER_S
        top = tuple(codes.items())[:_TOP_CODES]
        return ProgressSnapshot(
            elapsed_s=(now_ns - benchmark_start_ns) / NS_PER_S,
            step=self.step,
            totals=totals,
            requests_per_s=totals.completed / step_s if now_ns > self.start_ns else 0.0,
            top_codes=top,
        )


__all__ = [
    "PROGRESS_INTERVAL_NS",
    "OutcomeTotals",
    "ProgressMessage",
    "ProgressSnapshot",
    "StepProgress",
    "StepTally",
    "merged_codes",
]
