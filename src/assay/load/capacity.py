"""The capacity search: which load to offer next, from the verdicts of the steps run so far.

The search is a pure function of the steps done (`next_level`), so it runs in the coordinator
between steps, whatever runs the steps (one process, several, Ray actors):

1. **bracket**: from `start`, multiply the load by `growth` while steps pass; once one fails
   (or the first does, then divide until one passes) the capacity lies in [last pass, first fail];
2. **narrow**: bisect the bracket until first fail - last pass <= `precision` x last pass
   (for concurrency: until the two are one stream apart), never offering a load already decided;
3. a step **undecided** by its verdict (`assay.load.step_verdict`) is run again at the same load
   and its requests pooled with the earlier ones (a longer step), at most `max_lengthening`
   times; still undecided then, it fails if more of its requests missed than allowed, and is
   otherwise *unresolved* (too few requests to tell): the bracket moves past it as past a pass,
   but the capacity reported is the highest load *shown* to pass;
4. a **client-bound** step (a load process read what arrived late,
   `assay.load.loop_probe.client_saturated`) measured the client's own delay with the server's:
   a load is judged on its steps whose client kept up, when it has any. A load whose every step
   was client-bound stands when it passes (the delay only added to latencies), and is run again
   as an undecided one is when it would fail; failing still once lengthened as far as allowed,
   it ends the search (`client_bound`) with the capacity shown below it, instead of placing a
   bracket the client drew;
5. no step starts that would end past `budget_s`, counted from the steps' own durations.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Literal, TypeAlias

from assay.load.slo_tally import SloMisses
from assay.load.step_verdict import SloJudgement, Verdict, combined, judge
from assay.spec.capacity import Capacity
from assay.spec.limits import MAX_RATE

MAX_STREAMS = 1_000_000
"""The most streams a concurrency search offers."""

SearchEnd: TypeAlias = Literal[
    "precise", "budget", "nothing_passed", "ceiling", "client_bound", "running"
]
"""Why a search ended: its bracket is as narrow as asked, its time ran out, even its lowest
load failed, every load up to the ceiling passed, a load failed only while the client could not
keep up, or it has not ended."""


@dataclass(frozen=True, slots=True)
class Probe:
    """One step of the search: the load it offered, its counts, how long it ran, and whether
    a load process of it was saturated (its latencies include the client's own delay)."""

    level: float
    misses: SloMisses
    seconds: float
    client_bound: bool = False


@dataclass(frozen=True, slots=True)
class LevelVerdict:
    """A load with its steps pooled (those whose client kept up, when it has any: see the
    module), its verdict, and how many of its steps were client-bound."""

    level: float
    steps: int
    misses: SloMisses
    judgements: tuple[SloJudgement, ...]
    verdict: Verdict
    client_bound_steps: int = 0

    @property
    def passes(self) -> bool:
        """Whether the load was shown to pass."""
        return self.verdict == "pass"


@dataclass(frozen=True, slots=True)
class SearchState:
    """Where the search stands: every load judged, the bracket, and what comes next."""

    levels: tuple[LevelVerdict, ...]
    last_pass: LevelVerdict | None
    first_fail: LevelVerdict | None
    next_level: float | None
    end: SearchEnd

    @property
    def capacity(self) -> float | None:
        """The highest load shown to pass below the first failing one."""
        return None if self.last_pass is None else self.last_pass.level

    def failed_slo(self) -> tuple[int, SloJudgement] | None:
        """The SLO that failed at the first failing load (index in the profile's list), the one
        furthest over its allowance; None when no load failed."""
        if self.first_fail is None:
            return None
        ranked = sorted(
            enumerate(self.first_fail.judgements),
            key=lambda item: (item[1].verdict != "fail", -_overshoot(item[1])),
        )
        return ranked[0] if ranked else None


def _overshoot(judgement: SloJudgement) -> float:
    return judgement.miss_fraction / judgement.allowed if judgement.allowed > 0 else 0.0


def judge_levels(profile: Capacity, probes: list[Probe]) -> tuple[LevelVerdict, ...]:
    """Every load offered, in the order first offered, its steps pooled and judged: those whose
    client kept up, when it has any, else all of them."""
    steps_at: dict[float, list[Probe]] = {}
    for probe in probes:
        steps_at.setdefault(probe.level, []).append(probe)
    levels = []
    for level, steps in steps_at.items():
        clean = [probe for probe in steps if not probe.client_bound]
        misses = functools.reduce(operator.add, (probe.misses for probe in clean or steps))
        judgements = tuple(
            judge(misses.attempted, missed, slo.allowed_miss_fraction, profile.confidence)
            for slo, missed in zip(profile.slos, misses.missed, strict=True)
        )
        verdict = combined([judgement.verdict for judgement in judgements])
        bound_steps = len(steps) - len(clean)
        levels.append(LevelVerdict(level, len(steps), misses, judgements, verdict, bound_steps))
    return tuple(levels)


def search_state(profile: Capacity, probes: list[Probe]) -> SearchState:
    """The search after `probes` (the steps done, in order): the bracket and the next load.

    >>> from assay.spec.capacity import SloTarget
    >>> profile = Capacity(slos=(SloTarget.parse("ttft_ms=500@p90"),), start=10)
    >>> search_state(profile, []).next_level
    10.0
    >>> search_state(profile, [Probe(10.0, SloMisses(100, (0,)), 5.0)]).next_level
    20.0
    """
    levels = judge_levels(profile, probes)
    if not probes:
        return SearchState((), None, None, profile.first_load, "running")
    last = next(level for level in levels if level.level == probes[-1].level)
    fails = [level for level in levels if _failing(profile, level)]
    first_fail = min(fails, key=lambda level: level.level) if fails else None
    below = [
        level
        for level in levels
        if not _failing(profile, level) and (first_fail is None or level.level < first_fail.level)
    ]
    passes = [level for level in below if level.passes]
    last_pass = max(passes, key=lambda level: level.level) if passes else None
    floor = max(below, key=lambda level: level.level) if below else None
    next_level: float | None
    end: SearchEnd
    if not _settled(profile, last):
        next_level, end = last.level, "running"  # lengthen the undecided step
    elif _client_bound_fail(profile, last):
        next_level, end = None, "client_bound"
    else:
        next_level, end = _next_level(profile, None if floor is None else floor.level, first_fail)
    if next_level is not None and _over_budget(profile, probes):
        next_level, end = None, "budget"
    return SearchState(levels, last_pass, first_fail, next_level, end)


def _next_level(
    profile: Capacity, floor: float | None, first_fail: LevelVerdict | None
) -> tuple[float | None, SearchEnd]:
    """With every load so far settled: grow past the highest load not failing, shrink below
    the first failing one, or bisect between the two."""
    if first_fail is None:
        assert floor is not None  # some load was offered, none failing
        grown = _level(profile, floor * profile.growth)
        return (None, "ceiling") if grown <= floor else (grown, "running")
    high = first_fail.level
    if floor is None:
        shrunk = _level(profile, high / profile.growth)
        if shrunk >= high or high <= profile.lowest_load:
            return None, "nothing_passed"
        return shrunk, "running"
    if high - floor <= profile.precision * floor:
        return None, "precise"
    middle = _level(profile, (floor + high) / 2)
    if not floor < middle < high:
        return None, "precise"  # one stream apart: as narrow as concurrency goes
    return middle, "running"


def _settled(profile: Capacity, level: LevelVerdict) -> bool:
    """Whether a load's verdict is final: decided by steps whose client kept up, or lengthened
    as far as allowed."""
    if level.verdict == "undecided" or _client_suspect(level):
        return level.steps > profile.max_lengthening
    return True


def _misses_over(level: LevelVerdict) -> bool:
    """Whether a load fails as judged, or would once settled: decided so, or undecided with
    more of its requests missing some SLO than it allows."""
    if level.verdict == "undecided":
        return any(judgement.miss_fraction > judgement.allowed for judgement in level.judgements)
    return level.verdict == "fail"


def _client_suspect(level: LevelVerdict) -> bool:
    """Whether a load would fail on client-bound steps alone: not the server's failure to be
    sure of."""
    return level.client_bound_steps == level.steps and _misses_over(level)


def _client_bound_fail(profile: Capacity, level: LevelVerdict) -> bool:
    """Whether a settled load still fails on client-bound steps alone: no bracket ends there."""
    return _client_suspect(level) and _settled(profile, level)


def _failing(profile: Capacity, level: LevelVerdict) -> bool:
    """Whether a settled load counts as the server's failure: decided so, or left undecided
    with more of its requests missing some SLO than it allows, judged on steps whose client
    kept up."""
    return _settled(profile, level) and not _client_suspect(level) and _misses_over(level)


def _over_budget(profile: Capacity, probes: list[Probe]) -> bool:
    budget = profile.budget_s
    if budget is None:
        return False
    return sum(probe.seconds for probe in probes) + profile.step_s > budget


def _level(profile: Capacity, value: float) -> float:
    """A load the axis can offer: a rate to the millisecond within bounds, whole streams."""
    match profile.axis:
        case "rate":
            return min(MAX_RATE, max(profile.lowest_load, round(value, 3)))
        case "concurrency":
            return float(min(MAX_STREAMS, max(1, round(value))))


__all__ = [
    "MAX_STREAMS",
    "LevelVerdict",
    "Probe",
    "SearchEnd",
    "SearchState",
    "judge_levels",
    "search_state",
]
