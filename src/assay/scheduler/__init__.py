"""Load generation: profiles, constraints, pacing, and execution over one or several processes.

Records leave through a sink the caller provides (`SinkFactory`), so aggregation and file
writing stay above this layer; `run_benchmark` returns each step's counts and sink summaries.

Its names are imported on first use: `assay.reports` needs only `StopReason` from this layer
and must not pay for the backend and aiohttp that the rest of it imports.
"""

from assay.lazy_exports import lazy_exports as _lazy_exports

# `typing.TYPE_CHECKING` without importing typing (20 ms); type checkers take it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from assay.load_launcher import LoadProcesses as LoadProcesses
    from assay.load_launcher import start_load_processes as start_load_processes
    from assay.scheduler.benchmark_plan import BenchmarkPlan as BenchmarkPlan
    from assay.scheduler.benchmark_plan import BenchmarkResult as BenchmarkResult
    from assay.scheduler.benchmark_plan import StepResult as StepResult
    from assay.scheduler.constraints import Constraints as Constraints
    from assay.scheduler.constraints import StopReason as StopReason
    from assay.scheduler.coordinator import LoadProcessError as LoadProcessError
    from assay.scheduler.entry_points import run_benchmark as run_benchmark
    from assay.scheduler.entry_points import run_benchmark_async as run_benchmark_async
    from assay.scheduler.profiles import Concurrent as Concurrent
    from assay.scheduler.profiles import Constant as Constant
    from assay.scheduler.profiles import Poisson as Poisson
    from assay.scheduler.profiles import Profile as Profile
    from assay.scheduler.profiles import StepLoad as StepLoad
    from assay.scheduler.profiles import Sweep as Sweep
    from assay.scheduler.profiles import Synchronous as Synchronous
    from assay.scheduler.profiles import Throughput as Throughput
    from assay.scheduler.progress import OutcomeTotals as OutcomeTotals
    from assay.scheduler.progress import ProgressSnapshot as ProgressSnapshot
    from assay.scheduler.ray_engine import RayActors as RayActors
    from assay.scheduler.ray_engine import start_ray_actors as start_ray_actors
    from assay.scheduler.record_sink import CountingSink as CountingSink
    from assay.scheduler.record_sink import OutcomeCounts as OutcomeCounts
    from assay.scheduler.record_sink import RecordSink as RecordSink
    from assay.scheduler.record_sink import SinkFactory as SinkFactory
    from assay.scheduler.record_sink import StepContext as StepContext
    from assay.scheduler.record_sink import counting_sink as counting_sink

_HOMES = {
    "BenchmarkPlan": "assay.scheduler.benchmark_plan",
    "BenchmarkResult": "assay.scheduler.benchmark_plan",
    "Concurrent": "assay.scheduler.profiles",
    "Constant": "assay.scheduler.profiles",
    "Constraints": "assay.scheduler.constraints",
    "CountingSink": "assay.scheduler.record_sink",
    "LoadProcessError": "assay.scheduler.coordinator",
    "LoadProcesses": "assay.load_launcher",
    "OutcomeCounts": "assay.scheduler.record_sink",
    "OutcomeTotals": "assay.scheduler.progress",
    "Poisson": "assay.scheduler.profiles",
    "Profile": "assay.scheduler.profiles",
    "ProgressSnapshot": "assay.scheduler.progress",
    "RayActors": "assay.scheduler.ray_engine",
    "RecordSink": "assay.scheduler.record_sink",
    "SinkFactory": "assay.scheduler.record_sink",
    "StepContext": "assay.scheduler.record_sink",
    "StepLoad": "assay.scheduler.profiles",
    "StepResult": "assay.scheduler.benchmark_plan",
    "StopReason": "assay.scheduler.constraints",
    "Sweep": "assay.scheduler.profiles",
    "Synchronous": "assay.scheduler.profiles",
    "Throughput": "assay.scheduler.profiles",
    "counting_sink": "assay.scheduler.record_sink",
    "run_benchmark": "assay.scheduler.entry_points",
    "run_benchmark_async": "assay.scheduler.entry_points",
    "start_load_processes": "assay.load_launcher",
    "start_ray_actors": "assay.scheduler.ray_engine",
}

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

if not TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
