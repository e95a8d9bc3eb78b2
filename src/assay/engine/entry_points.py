"""Entry points: run a `BenchmarkPlan` step after step, in this process or in several.

`run_benchmark` is for the CLI and scripts (it owns the event loop and turns Ctrl-C into a clean
stop with partial results); `run_benchmark_async` runs in the caller's loop, in one process.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TypeVar

from assay.backend import open_backend
from assay.core import Clock, MonotonicClock
from assay.engine.coordinator import run_event_loop, run_in_processes
from assay.engine.interrupt import STOP_SIGNALS
from assay.engine.ray_engine import RayActors, run_on_ray
from assay.errors import ConfigError
from assay.load.benchmark_plan import (
    BenchmarkPlan,
    BenchmarkResult,
    LoadSlice,
    StepResult,
    merge_step,
    next_load,
)
from assay.load.progress import ProgressMessage, ProgressSnapshot, StepProgress
from assay.load_launcher import LoadProcesses
from assay.records.sink import SinkFactory

S = TypeVar("S")


def run_benchmark(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    *,
    on_progress: Callable[[ProgressSnapshot], None] | None = None,
    started: LoadProcesses | RayActors | None = None,
) -> BenchmarkResult[S]:
    """Run every step of `plan` and return the steps' results; Ctrl-C stops it cleanly.

    With `processes > 1` each process runs its slice on its own event loop and HTTP session, and
    `plan` and `sink_factory` must pickle, with their functions and classes in importable modules
    (not the script being run: the load processes do not run it). Ctrl-C (or SIGTERM) stops
    dispatching, cancels what is in flight (recorded as cancelled), closes every sink and
    returns the partial result with `interrupted=True`. A load process that dies or stops
    answering mid-step is left out of that step, which the others finish; the run then ends
    (`degraded`), its part listed in `StepResult.lost_processes`. `on_progress` is called in
    this process about every 250 ms.
    `started` are load processes from `start_load_processes(plan.processes)`, started while the
    caller prepared the run, so their start-up overlaps it; or Ray actors from
    `start_ray_actors`, one per slice, which then run every slice (`run_on_ray`).

    >>> from functools import partial
    >>> from assay.backend import BackendSettings
    >>> from assay.core import Endpoint
    >>> from assay.data import SyntheticSource
    >>> from assay.engine import Constraints, Synchronous, counting_sink
    >>> from assay.validators import default_chain
    >>> plan = BenchmarkPlan(
    ...     profile=Synchronous(), constraints=Constraints(max_requests=2), processes=1,
    ...     source=SyntheticSource(model="m"),
    ...     backend=BackendSettings(base_url="http://127.0.0.1:9"),  # nothing listens there
    ...     validator_factory=partial(default_chain, Endpoint.chat))
    >>> step = run_benchmark(plan, counting_sink).steps[0]
    >>> step.totals.errored, step.errors_by_code
    (2, {'connect_error': 2})
    """
    if isinstance(started, RayActors):
        return run_on_ray(plan, sink_factory, started, on_progress=on_progress)
    if plan.processes == 1 and (started is None or started.processes == 1):
        return run_event_loop(_run_interruptible(plan, sink_factory, on_progress))
    return run_in_processes(plan, sink_factory, on_progress=on_progress, started=started)


async def run_benchmark_async(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    *,
    on_progress: Callable[[ProgressSnapshot], None] | None = None,
    clock: Clock | None = None,
    stop: asyncio.Event | None = None,
) -> BenchmarkResult[S]:
    """Run every step of `plan` in the running event loop (one process: `plan.processes == 1`).

    Setting `stop` ends the run like Ctrl-C: in-flight requests are cancelled and recorded, and
    the partial result comes back with `interrupted=True`. Nothing here needs to pickle.
    """
    if plan.processes != 1:
        raise ConfigError(
            f"run_benchmark_async runs in one process, the plan asks for {plan.processes}; "
            "use run_benchmark for several processes"
        )
    clock = clock or MonotonicClock()
    stop = stop or asyncio.Event()
    validate = plan.validator_factory()
    benchmark_start_ns = clock.now_ns()
    steps: list[StepResult[S]] = []
    async with open_backend(plan.backend_for_process(), clock) as backend:
        own = LoadSlice(plan, 0, sink_factory, backend.resolve, validate, clock)
        while not stop.is_set() and (load := next_load(plan.profile, steps)) is not None:
            index = len(steps)
            start_ns = clock.now_ns()
            report = None
            if on_progress is not None:
                report = _progress_reporter(
                    StepProgress(index, plan.constraints, start_ns=start_ns),
                    clock,
                    benchmark_start_ns,
                    on_progress,
                )
            # One process sees every request, so its own error watch is exact: no parent stop.
            part = await own.run(index, load, start_ns, stop=stop, report=report)
            steps.append(merge_step(index, load, start_ns, [part], parent_stop=None))
    return BenchmarkResult(steps=steps, interrupted=stop.is_set())


def _progress_reporter(
    progress: StepProgress,
    clock: Clock,
    benchmark_start_ns: int,
    on_progress: Callable[[ProgressSnapshot], None],
) -> Callable[[ProgressMessage], None]:
    def report(message: ProgressMessage) -> None:
        progress.take(message)
        on_progress(progress.snapshot(now_ns=clock.now_ns(), benchmark_start_ns=benchmark_start_ns))

    return report


async def _run_interruptible(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    on_progress: Callable[[ProgressSnapshot], None] | None,
) -> BenchmarkResult[S]:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    handled: list[signal.Signals] = []
    try:
        for number in STOP_SIGNALS:
            loop.add_signal_handler(number, stop.set)
            handled.append(number)
    except (NotImplementedError, RuntimeError, ValueError):
        # Not the main thread, or a platform without loop signal handlers: signals stay default.
        pass
    try:
        return await run_benchmark_async(plan, sink_factory, on_progress=on_progress, stop=stop)
    finally:
        for number in handled:
            loop.remove_signal_handler(number)
            # The loop resets the signal to Python's default; the caller's handler comes back.
            handler = previous[number]
            if handler is not None:
                signal.signal(number, handler)


__all__ = ["run_benchmark", "run_benchmark_async"]
