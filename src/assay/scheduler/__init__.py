"""Load generation: profiles, constraints, pacing, and execution over one or several processes.

Records leave through a sink the caller provides (`SinkFactory`), so aggregation and file
writing stay above this layer; `run_benchmark` returns each step's counts and sink summaries.
"""

from assay.load_launcher import LoadProcesses, start_load_processes
from assay.scheduler.benchmark_plan import BenchmarkPlan, BenchmarkResult, StepResult
from assay.scheduler.constraints import Constraints, StopReason
from assay.scheduler.coordinator import LoadProcessError
from assay.scheduler.entry_points import run_benchmark, run_benchmark_async
from assay.scheduler.profiles import (
    Concurrent,
    Constant,
    Poisson,
    Profile,
    StepLoad,
    Sweep,
    Synchronous,
    Throughput,
)
from assay.scheduler.progress import OutcomeTotals, ProgressSnapshot
from assay.scheduler.ray_engine import RayActors, start_ray_actors
from assay.scheduler.record_sink import (
    CountingSink,
    OutcomeCounts,
    RecordSink,
    SinkFactory,
    StepContext,
    counting_sink,
)

__all__ = [
    "BenchmarkPlan",
    "BenchmarkResult",
    "Concurrent",
    "Constant",
    "Constraints",
    "CountingSink",
    "LoadProcessError",
    "LoadProcesses",
    "OutcomeCounts",
    "OutcomeTotals",
    "Poisson",
    "Profile",
    "ProgressSnapshot",
    "RayActors",
    "RecordSink",
    "SinkFactory",
    "StepContext",
    "StepLoad",
    "StepResult",
    "StopReason",
    "Sweep",
    "Synchronous",
    "Throughput",
    "counting_sink",
    "run_benchmark",
    "run_benchmark_async",
    "start_load_processes",
    "start_ray_actors",
]
