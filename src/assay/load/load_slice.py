"""One process's (or Ray actor's) share of a plan: the one place a step's work is built.

Every engine runs a step's slice the same way — the single process, the coordinating parent,
each load child and each Ray actor — so the `StepWork` and the `run_step` call are made here
and nowhere else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from assay.core import Clock, GenerationResponse
from assay.load.benchmark_plan import BenchmarkPlan
from assay.load.progress import ProgressMessage
from assay.load.step_runner import ProcessStepResult, Resolve, StepWork, run_step
from assay.records.sink import SinkFactory
from assay.spec.capacity import Capacity
from assay.spec.load import StepLoad
from assay.validators.chain import Validator

S = TypeVar("S")


def step_work(
    plan: BenchmarkPlan, process: int, step: int, load: StepLoad, start_ns: int
) -> StepWork:
    """What slice `process` of `plan` runs in step `step`, which starts at `start_ns`.

    >>> from assay.spec.load import Constant
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


__all__ = ["LoadSlice", "step_work"]
