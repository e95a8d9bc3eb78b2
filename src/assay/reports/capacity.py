"""What a capacity search found, as report.json keeps it and the console says it.

Built once from the run's steps (`assay.reports.capacity_search`), stored whole in report.json
(`capacity`), so the console, report.html and `assay compare` read it back without records.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.load.capacity import SearchEnd
from assay.load.step_verdict import Verdict
from assay.spec.capacity import CapacityAxis


class SloVerdict(BaseModel):
    """One SLO at one load: its misses among the attempted requests and the bounds of the miss
    fraction that decided it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slo: str
    missed: int
    allowed: float
    lower: float
    upper: float
    verdict: Verdict


class CapacityLevel(BaseModel):
    """A load the search offered: the steps run at it (pooled), and its verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: float
    steps: tuple[int, ...]
    attempted: int
    verdict: Verdict
    slos: tuple[SloVerdict, ...]
    # How many of its steps a saturated client ran (`assay.load.capacity`): judged without
    # them when any other step kept up. Left out when none, as in reports written before.
    client_bound_steps: int = Field(default=0, exclude_if=lambda steps: steps == 0)

    @property
    def client_bound(self) -> bool:
        """Whether every step at this load was run by a client that could not keep up."""
        return self.client_bound_steps == len(self.steps)


class CapacityReport(BaseModel):
    """The search's answer: the capacity (the highest load shown to pass), its bracket [last
    pass, first fail], the SLO that failed first at the fail point, the goodput at capacity,
    why the search ended, and every load it offered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    axis: CapacityAxis
    slos: tuple[str, ...]
    confidence: float
    precision: float
    capacity: float | None
    first_fail: float | None
    end: SearchEnd
    failed_slo: SloVerdict | None = None
    goodput_at_capacity: float | None = None
    levels: tuple[CapacityLevel, ...]

    @property
    def unit(self) -> Literal["req/s", "streams"]:
        """The unit of a load on the axis searched."""
        match self.axis:
            case "rate":
                return "req/s"
            case "concurrency":
                return "streams"


def passing_steps(report: CapacityReport) -> frozenset[int]:
    """The indices of the steps run at loads shown to pass up to the capacity: a capacity run's
    validity is judged on them (its failing steps are overloaded on purpose)."""
    capacity = report.capacity
    if capacity is None:
        return frozenset()
    return frozenset(
        index
        for level in report.levels
        if level.verdict == "pass" and level.level <= capacity
        for index in level.steps
    )


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.3g} %"


def level_line(report: CapacityReport, level: CapacityLevel) -> str:
    """One load of the search: the load, its verdict, the figure that decided it.

    The deciding figure is the SLO furthest from its allowance: missed / attempted against the
    allowed fraction, with the bound that decided (upper for a pass, lower for a fail).
    """
    steps = "+".join(str(index + 1) for index in level.steps)
    deciding = max(level.slos, key=lambda slo: slo.missed / max(1, level.attempted) - slo.allowed)
    observed = deciding.missed / level.attempted if level.attempted else 0.0
    bound = deciding.lower if level.verdict == "fail" else deciding.upper
    which = "lower" if level.verdict == "fail" else "upper"
    bound_steps = level.client_bound_steps
    client = f"; {bound_steps} of {len(level.steps)} client-bound" if bound_steps else ""
    return (
        f"  step {steps}: {level.level:g} {report.unit}  {level.verdict.upper():<9}  "
        f"{deciding.slo}: {deciding.missed} of {level.attempted} missed ({_percent(observed)}; "
        f"allowed {_percent(deciding.allowed)}, {which} bound {_percent(bound)}{client})"
    )


def answer_line(report: CapacityReport) -> str:
    """The search's answer in one line."""
    unit = report.unit
    if report.capacity is None:
        reason = {
            "nothing_passed": "no load tried passed",
            "budget": "the time budget ran out before a load passed",
            "client_bound": "the load that failed was run by a client that could not keep up",
        }.get(report.end, "no load was shown to pass")
        return f"capacity: none found ({reason}; SLOs {', '.join(report.slos)})"
    high = "not reached" if report.first_fail is None else f"{report.first_fail:g}"
    if report.first_fail is None and any(
        level.client_bound and level.verdict != "pass" for level in report.levels
    ):
        high = "not shown"  # a load above failed only where the client fell behind
    parts = [f"capacity: {report.capacity:g} {unit} (bracket [{report.capacity:g}, {high}])"]
    failed = report.failed_slo
    if failed is not None and report.first_fail is not None:
        parts.append(
            f"first failed at {report.first_fail:g}: {failed.slo}, "
            f"{_percent(failed.missed / max(1, _attempted_at(report, report.first_fail)))} "
            f"missed of {_percent(failed.allowed)} allowed"
        )
    if report.goodput_at_capacity is not None:
        parts.append(f"goodput at capacity {report.goodput_at_capacity:.4g} req/s")
    parts.append(_end_words(report.end))
    return "; ".join(parts)


def _attempted_at(report: CapacityReport, level: float) -> int:
    return next((item.attempted for item in report.levels if item.level == level), 0)


def _end_words(end: SearchEnd) -> str:
    match end:
        case "precise":
            return "as precise as asked"
        case "budget":
            return "stopped by the time budget (the bracket is wider than asked)"
        case "nothing_passed":
            return "even the lowest load failed"
        case "ceiling":
            return "every load up to the ceiling passed"
        case "client_bound":
            return "stopped at a load that failed while the client could not keep up (client-bound)"
        case "running":
            return "the search did not finish"


def capacity_lines(report: CapacityReport) -> list[str]:
    """The console's account: the search step by step, then the answer."""
    header = (
        f"capacity search over {report.axis} (SLOs {', '.join(report.slos)}; each load judged "
        f"at {report.confidence:.0%} confidence over every attempted request)"
    )
    return [header, *(level_line(report, level) for level in report.levels), answer_line(report)]


__all__ = [
    "CapacityLevel",
    "CapacityReport",
    "SloVerdict",
    "answer_line",
    "capacity_lines",
    "level_line",
    "passing_steps",
]
