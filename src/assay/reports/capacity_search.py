"""A capacity search's report, built from the run's steps (kept apart from
`assay.reports.capacity`: reading a report must not import the load generation's plan)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from assay.load.benchmark_plan import StepResult, probe_of
from assay.load.capacity import LevelVerdict, SearchState, search_state
from assay.load.step_verdict import SloJudgement
from assay.reports.capacity import CapacityLevel, CapacityReport, SloVerdict
from assay.spec.capacity import Capacity, SloTarget

S = TypeVar("S")


def capacity_report(
    profile: Capacity,
    steps: Sequence[StepResult[S]],
    goodput_by_step: Sequence[float | None] = (),
) -> CapacityReport:
    """The search's result after `steps`; `goodput_by_step[i]` is step i's goodput (requests/s
    meeting every SLO limit), when the run measured it."""
    done = list(steps)
    state = search_state(profile, [probe_of(profile, step) for step in done])
    positions: dict[float, list[int]] = {}
    for step in done:
        positions.setdefault(probe_of(profile, step).level, []).append(step.index)
    levels = tuple(_level(profile, level, positions[level.level]) for level in state.levels)
    goodput = None
    if state.last_pass is not None and goodput_by_step:
        # The goodput of the last step run at the capacity (a lengthened load has several).
        last = max(
            position
            for position, step in enumerate(done)
            if probe_of(profile, step).level == state.last_pass.level
        )
        goodput = goodput_by_step[last] if last < len(goodput_by_step) else None
    return CapacityReport(
        axis=profile.axis,
        slos=tuple(map(str, profile.slos)),
        confidence=profile.confidence,
        precision=profile.precision,
        capacity=state.capacity,
        first_fail=None if state.first_fail is None else state.first_fail.level,
        end=state.end,
        failed_slo=_failed_slo(profile, state),
        goodput_at_capacity=goodput,
        levels=levels,
    )


def _level(profile: Capacity, level: LevelVerdict, steps: list[int]) -> CapacityLevel:
    return CapacityLevel(
        level=level.level,
        steps=tuple(steps),
        attempted=level.misses.attempted,
        verdict=level.verdict,
        slos=tuple(
            _slo_verdict(slo, judgement)
            for slo, judgement in zip(profile.slos, level.judgements, strict=True)
        ),
        client_bound_steps=level.client_bound_steps,
    )


def _slo_verdict(slo: SloTarget, judgement: SloJudgement) -> SloVerdict:
    return SloVerdict(
        slo=str(slo),
        missed=judgement.missed,
        allowed=judgement.allowed,
        lower=judgement.lower,
        upper=judgement.upper,
        verdict=judgement.verdict,
    )


def _failed_slo(profile: Capacity, state: SearchState) -> SloVerdict | None:
    failed = state.failed_slo()
    if failed is None:
        return None
    index, judgement = failed
    return _slo_verdict(profile.slos[index], judgement)


def capacity_of(
    profile: object, steps: Sequence[StepResult[S]], goodput_by_step: Sequence[float | None]
) -> CapacityReport | None:
    """The capacity search's report of a run of `profile`, None when it was not a search."""
    if not isinstance(profile, Capacity):
        return None
    return capacity_report(profile, steps, goodput_by_step)


__all__ = ["capacity_of", "capacity_report"]
