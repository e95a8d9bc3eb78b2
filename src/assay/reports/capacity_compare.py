"""`assay compare` on capacity runs: each run's capacity against the first run's.

The noise rule for capacities: each search brackets its capacity in [last pass, first fail],
every verdict in it taken at its stated confidence, so two capacities differ only when their
brackets do not overlap: a run whose first fail is at or below the baseline's capacity is
worse, one whose capacity is at or above the baseline's first fail is better, and overlapping
brackets are "~" (within the searches' precision). A bracket without a first fail reaches up
without bound; runs of different SLOs or axes are not judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from assay.reports.capacity import CapacityReport
from assay.reports.report import Report

CapacityChange = Literal["better", "worse", "~", "not comparable"]


def _bracket(report: CapacityReport) -> tuple[float, float]:
    low = report.capacity if report.capacity is not None else 0.0
    high = report.first_fail if report.first_fail is not None else math.inf
    return low, high


def capacity_change(base: CapacityReport, other: CapacityReport) -> CapacityChange:
    """How `other`'s capacity stands against `base`'s, by the noise rule above.

    >>> def run(low, high):
    ...     return CapacityReport(axis="rate", slos=("ttft_ms=500@p99",), confidence=0.95,
    ...         precision=0.05, capacity=low, first_fail=high, end="precise", levels=())
    >>> capacity_change(run(80, 84), run(60, 63)), capacity_change(run(80, 84), run(82, 86))
    ('worse', '~')
    """
    if base.slos != other.slos or base.axis != other.axis:
        return "not comparable"
    base_low, base_high = _bracket(base)
    low, high = _bracket(other)
    if high <= base_low:
        return "worse"
    if low >= base_high:
        return "better"
    return "~"


def _describe(report: CapacityReport) -> str:
    if report.capacity is None:
        return "none found"
    high = "-" if report.first_fail is None else f"{report.first_fail:g}"
    return f"{report.capacity:g} {report.unit} [{report.capacity:g}, {high}]"


def capacity_lines(reports: Sequence[Report]) -> list[str]:
    """The comparison of the runs' capacities, one line per run; empty unless the first run
    and another searched for capacity."""
    base = reports[0].capacity if reports else None
    if base is None or all(report.capacity is None for report in reports[1:]):
        return []
    lines = [f"Capacity (SLOs {', '.join(base.slos)}; brackets that overlap are ~):"]
    lines.append(f"  run 1: {_describe(base)} (baseline)")
    for number, report in enumerate(reports[1:], start=2):
        capacity = report.capacity
        if capacity is None:
            lines.append(f"  run {number}: not a capacity search")
            continue
        change = capacity_change(base, capacity)
        lines.append(f"  run {number}: {_describe(capacity)} {change}")
    return lines


__all__ = ["CapacityChange", "capacity_change", "capacity_lines"]
