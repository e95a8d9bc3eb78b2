"""The x axis of the "Across steps" charts: what the steps varied. A concurrency sweep varied
the requests in flight, so its charts put the concurrency levels on the axis (issue 38: they put
the offered rate there, a figure the sweep did not set); every other series its offered rate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from assay.reports.report import StepReport
from assay.spec.load import Concurrent, Constant, Poisson, RampUp, Replay, Synchronous, Throughput


@dataclass(frozen=True, slots=True)
class SweepAxis:
    """The steps in axis order, their x values, the axis title and its words in chart titles."""

    steps: list[StepReport]
    x: list[JsonValue]
    title: str
    words: str


def concurrency_of(step: StepReport) -> int | None:
    """The requests a step kept in flight, when that is what it set (a concurrent step).

    >>> from assay.metrics import StepAggregator
    >>> concurrency_of(StepReport.of(0, Concurrent(streams=4), StepAggregator().snapshot()))
    4
    >>> concurrency_of(StepReport.of(0, Constant(rate=5), StepAggregator().snapshot())) is None
    True
    """
    match step.load:
        case Concurrent(streams=streams):
            return streams
        case Synchronous() | Throughput() | Poisson() | RampUp() | Constant() | Replay() | None:
            return None


def offered_rate(step: StepReport) -> float:
    """The load a step offered: its requested rate, else the rate it dispatched at."""
    if step.requested_rate is not None:
        return step.requested_rate
    return step.metrics.throughput.attempted_requests_per_s


def sweep_axis(steps: Sequence[StepReport]) -> SweepAxis:
    """Concurrency levels when every step set one, else the offered rate."""
    levels = [concurrency_of(step) for step in steps]
    if steps and all(level is not None for level in levels):
        ordered = sorted(steps, key=lambda step: concurrency_of(step) or 0)
        return SweepAxis(
            ordered,
            [concurrency_of(step) for step in ordered],
            "concurrency (requests in flight)",
            "concurrency",
        )
    ordered = sorted(steps, key=offered_rate)
    return SweepAxis(
        ordered, [offered_rate(step) for step in ordered], "offered rate (req/s)", "offered rate"
    )


__all__ = ["SweepAxis", "concurrency_of", "offered_rate", "sweep_axis"]
