"""What to run (`BenchmarkPlan`) and what came of it (`BenchmarkResult` of `StepResult`s).

Every engine runs a step's slice the same way (the single process, the coordinating parent,
each load child and each Ray actor), so one process's share of a plan (`LoadSlice`, its
`StepWork` and its `run_step` call) is made here and nowhere else.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from assay.backend import BackendSettings
from assay.core import Clock, GenerationResponse
from assay.data.source import RequestSource
from assay.load.capacity import Probe, search_state
from assay.load.loop_probe import ClientLoad, client_saturated
from assay.load.machine import usable_cpus
from assay.load.progress import OutcomeTotals, ProgressMessage, merged_codes
from assay.load.sessions import SessionCounts
from assay.load.slo_tally import SloMisses
from assay.load.step_runner import ProcessStepResult, Resolve, StepWork, not_sent, run_step
from assay.records.sink import SinkFactory
from assay.spec.capacity import Capacity
from assay.spec.constraints import NS_PER_S, Constraints, StopReason
from assay.spec.load import (
    Concurrent,
    Constant,
    Poisson,
    Profile,
    StepLoad,
    Sweep,
    Synchronous,
    Throughput,
    requested_concurrency,
    requested_rate,
    sweep_rates,
)
from assay.validators.chain import Validator

S = TypeVar("S")
C = TypeVar("C", SessionCounts, SloMisses)


class BenchmarkPlan(BaseModel):
    """Everything a benchmark needs; picklable when `processes > 1` (it crosses into them).

    `validator_factory` builds the validator in each process (e.g. a `functools.partial` of
    `default_chain`); `seed` seeds what the profile does not seed itself (Poisson arrivals).
    With `processes == 1` the run stays in the calling process and nothing needs to pickle.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    profile: Profile
    constraints: Constraints = Constraints()
    # One per CPU this process may run on (its affinity, which containers narrow).
    processes: int = Field(default_factory=usable_cpus, gt=0)
    # A protocol (structural type): pydantic cannot check it, the type checker does.
    source: SkipValidation[RequestSource]
    backend: BackendSettings
    validator_factory: Callable[[], Validator[GenerationResponse]]
    seed: int = 0
    # A load process that sends nothing for this long during a step is taken as frozen: it is
    # killed and the step finishes without it. It reports every 250 ms while a step runs.
    unresponsive_after_s: float = Field(default=10.0, gt=0)

    def backend_for_process(self) -> BackendSettings:
        """The backend settings with a pool large enough for one process's share of the load."""
        limit = _concurrency_limit(self.profile)
        if limit is None:
            return self.backend
        return self.backend.sized_for(-(-limit // self.processes))


def _concurrency_limit(profile: Profile) -> int | None:
    match profile:
        case Sweep(concurrencies=levels) if levels:
            return max(levels)
        case Sweep(max_concurrency=limit):
            return limit
        case Capacity():
            return None  # its levels are found as it runs
        case _:  # a single-step load
            return requested_concurrency(profile)


def step_work(
    plan: BenchmarkPlan, process: int, step: int, load: StepLoad, start_ns: int
) -> StepWork:
    """What slice `process` of `plan` runs in step `step`, which starts at `start_ns`.

    >>> plan = BenchmarkPlan.model_construct(processes=2, seed=7, profile=Constant(rate=5))
    >>> work = step_work(plan, 1, 0, Constant(rate=5), start_ns=10)
    >>> (work.process, work.processes, work.seed, work.start_ns)
    (1, 2, 7, 10)
    """
    # The percentile SLOs whose misses each step counts: a capacity search's.
    slos = plan.profile.slos if isinstance(plan.profile, Capacity) else ()
    return StepWork(
        step, load, plan.constraints, plan.seed, process, plan.processes, start_ns, slos
    )


@dataclass(frozen=True, slots=True)
class LoadSlice(Generic[S]):
    """Slice `process` of `plan`, with what it sends, judges and records its requests with."""

    plan: BenchmarkPlan
    process: int
    sink_factory: SinkFactory[S]
    resolve: Resolve
    validate: Validator[GenerationResponse]
    clock: Clock

    async def run(
        self,
        step: int,
        load: StepLoad,
        start_ns: int,
        *,
        stop: asyncio.Event,
        report: Callable[[ProgressMessage], None] | None = None,
    ) -> ProcessStepResult[S]:
        """Run this slice of step `step` (see `run_step`)."""
        return await run_step(
            step_work(self.plan, self.process, step, load, start_ns),
            source=self.plan.source,
            resolve=self.resolve,
            validate=self.validate,
            sink_factory=self.sink_factory,
            clock=self.clock,
            stop=stop,
            report=report,
        )


@dataclass(frozen=True, slots=True)
class LostProcess:
    """A load process that died or stopped answering during a step: its part never came back.

    `reported` is what its last progress message said it had dispatched and finished;
    `scheduled` what its slice of an open-loop schedule owed by the end of the step (None for
    a closed loop). Records it wrote before it was lost may survive wherever its sink put them.
    """

    process: int
    reason: str
    reported: OutcomeTotals
    scheduled: int | None


@dataclass(frozen=True, slots=True)
class StepResult(Generic[S]):
    """One step: what it asked for, when it ran, how its requests ended, what stopped it.

    `sink_results` holds what each process's sink returned, in process order, for the
    processes that finished the step; `lost_processes` the ones that did not (their counts are
    not in `totals`). `scheduled` is what an open-loop schedule owed the finished processes by
    the time dispatching stopped (None for closed loops); `not_sent` the part never dispatched.
    `errors_by_code` counts as `totals` does (see `merge_step`), not as the report does.
    """

    index: int
    load: StepLoad
    started_ns: int
    finished_ns: int
    totals: OutcomeTotals
    errors_by_code: dict[str, int]
    stopped_by: StopReason | None
    sink_results: list[S]
    scheduled: int | None = None
    lost_processes: tuple[LostProcess, ...] = ()

    @property
    def kind(self) -> str:
        """The kind of load the step offered."""
        return self.load.kind

    @property
    def rate(self) -> float | None:
        """The rate the step asked for, None for closed loops (and a ramp, whose rate moved)."""
        return requested_rate(self.load)

    @property
    def concurrency(self) -> int | None:
        """The concurrency the step asked for, None for open loops."""
        return requested_concurrency(self.load)

    @property
    def not_sent(self) -> int:
        """Requests the finished processes' schedules owed and never dispatched."""
        return not_sent(self.scheduled, self.totals)

    # How the step's sessions went when it ran sessions (turns not sent among them).
    sessions: SessionCounts | None = None
    # Attempted requests and each percentile SLO's misses, when the step counted them (a
    # capacity search's step), requests never sent not included.
    slo_misses: SloMisses | None = None
    # How busy each finished process was while it measured, in process order.
    client: tuple[ClientLoad, ...] = ()

    @property
    def duration_s(self) -> float:
        """Seconds from the step's start to its last request's end."""
        return (self.finished_ns - self.started_ns) / NS_PER_S

    @property
    def usable_rate(self) -> float:
        """Completed requests per second over the step (what a sweep places its rates by)."""
        duration = self.duration_s
        return self.totals.completed / duration if duration > 0 else 0.0


@dataclass(frozen=True, slots=True)
class BenchmarkResult(Generic[S]):
    """Every step that ran; `interrupted` when a stop signal (Ctrl-C, SIGTERM) cut the run
    short. A run that lost a load process ends after that step, `degraded`."""

    steps: list[StepResult[S]]
    interrupted: bool

    @property
    def degraded(self) -> bool:
        """Whether a load process was lost in some step (its part of the load is missing)."""
        return any(step.lost_processes for step in self.steps)


def merge_step(
    index: int,
    load: StepLoad,
    started_ns: int,
    parts: list[ProcessStepResult[S]],
    parent_stop: StopReason | None,
    lost: tuple[LostProcess, ...] = (),
) -> StepResult[S]:
    """One step's result from every process's part, in process order.

    The step's stop reason is the parent's when it stopped the step (merged error constraints,
    Ctrl-C), else the first a process hit, a constraint before the request budget running out.

    Its `errors_by_code` sums the finished processes' `StepTally` counts: every errored record
    of the step, warm-up and cool-down included, a lost process's left out (as from `totals`).
    It is what a library caller of `run_benchmark` reads; the report counts again from the
    records, in the measured window only (`StepAggregator`) and per interval (the timeline),
    with the records a lost process's shard kept.
    """
    ordered = sorted(parts, key=lambda part: part.process)
    reasons = [part.stopped_by for part in ordered if part.stopped_by is not None]
    constraint = next((r for r in reasons if r is not StopReason.max_requests), None)
    stopped_by = parent_stop or constraint or (reasons[0] if reasons else None)
    owed = [part.scheduled for part in ordered if part.scheduled is not None]
    return StepResult(
        index=index,
        load=load,
        started_ns=started_ns,
        finished_ns=max((part.finished_ns for part in ordered), default=started_ns),
        totals=sum((part.totals for part in ordered), OutcomeTotals()),
        errors_by_code=merged_codes(part.errors_by_code for part in ordered),
        stopped_by=stopped_by,
        sink_results=[part.summary for part in ordered],
        scheduled=sum(owed) if owed else None,
        lost_processes=tuple(sorted(lost, key=lambda loss: loss.process)),
        sessions=_sum_present(part.sessions for part in ordered),
        slo_misses=_sum_present(part.slo_misses for part in ordered),
        client=tuple(part.client for part in ordered if part.client is not None),
    )


def _sum_present(counts: Iterable[C | None]) -> C | None:
    """The sum of the processes' counts that are there; None when none is."""
    present = [count for count in counts if count is not None]
    return functools.reduce(lambda total, count: total + count, present) if present else None


def next_load(profile: Profile, done: list[StepResult[S]]) -> StepLoad | None:
    """The load of the next step given the steps done so far; None when the profile is done.

    A sweep runs synchronous, then throughput, then its constant rates placed between the two
    usable rates measured; with no usable rate measured there is nothing to place, so it ends.
    A sweep over concurrency levels runs one concurrent step per level, in the order given.

    >>> next_load(Synchronous(), [])
    Synchronous(kind='synchronous')
    >>> next_load(Sweep(concurrencies=(1, 4)), [])
    Concurrent(kind='concurrent', streams=1)
    """
    match profile:
        case Sweep(concurrencies=levels) if levels:
            return Concurrent(streams=levels[len(done)]) if len(done) < len(levels) else None
        case Sweep(rates=count, max_concurrency=limit):
            if not done:
                return Synchronous()
            if len(done) == 1:
                return Throughput(max_concurrency=limit)
            position = len(done) - 2
            low, high = done[0].usable_rate, done[1].usable_rate
            if position >= count or max(low, high) <= 0:
                return None
            return Constant(rate=sweep_rates(low, high, count)[position])
        case Capacity():
            level = search_state(profile, [probe_of(profile, step) for step in done]).next_level
            return None if level is None else load_at(profile, level)
        case _:  # a single-step load
            return None if done else profile


def load_at(profile: Capacity, level: float) -> StepLoad:
    """The step load of a capacity search at `level` (a rate, or a count of streams).

    >>> from assay.spec.capacity import SloTarget
    >>> load_at(Capacity(slos=(SloTarget.parse("e2e_ms=900"),), axis="concurrency"), 8.0)
    Concurrent(kind='concurrent', streams=8)
    """
    match profile.axis:
        case "concurrency":
            return Concurrent(streams=max(1, round(level)))
        case "rate" if profile.arrivals == "poisson":
            return Poisson(rate=level)
        case "rate":
            return Constant(rate=level)


def probe_of(profile: Capacity, step: StepResult[S]) -> Probe:
    """A capacity step as the search reads it: the requests it never sent are attempted and
    missed every SLO; client-bound when a load process of it was saturated."""
    level = step.rate if step.rate is not None else float(step.concurrency or 0)
    misses = step.slo_misses or SloMisses(0, (0,) * len(profile.slos))
    bound = any(client_saturated(load) for load in step.client)
    return Probe(level, misses.with_not_sent(step.not_sent), step.duration_s, bound)


__all__ = [
    "BenchmarkPlan",
    "BenchmarkResult",
    "LoadSlice",
    "LostProcess",
    "StepResult",
    "merge_step",
    "load_at",
    "next_load",
    "probe_of",
    "step_work",
]
