"""The engine that runs a benchmark's load slices: in this process, in local load processes,
or in Ray actors, with one coordinator for all three.

What the load is (profiles, constraints) is `assay.spec`; how one slice of one step runs is
`assay.load`. Records leave through a sink the caller provides (`SinkFactory`, in
`assay.records.sink`), so aggregation and file writing stay above this layer; `run_benchmark`
returns each step's counts and sink summaries.

Its names are imported on first use: a load process imports `assay.benchmark`, which names
this package, and must not pay for Ray and the coordinator before it needs them.
"""

from assay.lazy_exports import lazy_exports as _lazy_exports

# `typing.TYPE_CHECKING` without importing typing (20 ms); type checkers take it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from assay.engine.coordinator import LoadProcessError as LoadProcessError
    from assay.engine.entry_points import run_benchmark as run_benchmark
    from assay.engine.entry_points import run_benchmark_async as run_benchmark_async
    from assay.engine.ray_engine import RayActors as RayActors
    from assay.engine.ray_engine import start_ray_actors as start_ray_actors
    from assay.load.benchmark_plan import BenchmarkPlan as BenchmarkPlan
    from assay.load.benchmark_plan import BenchmarkResult as BenchmarkResult
    from assay.load.benchmark_plan import StepResult as StepResult
    from assay.load.progress import OutcomeTotals as OutcomeTotals
    from assay.load.progress import ProgressSnapshot as ProgressSnapshot
    from assay.load_launcher import LoadProcesses as LoadProcesses
    from assay.load_launcher import start_load_processes as start_load_processes
    from assay.records.sink import CountingSink as CountingSink
    from assay.records.sink import OutcomeCounts as OutcomeCounts
    from assay.records.sink import RecordSink as RecordSink
    from assay.records.sink import SinkFactory as SinkFactory
    from assay.records.sink import StepContext as StepContext
    from assay.records.sink import counting_sink as counting_sink
    from assay.spec.constraints import Constraints as Constraints
    from assay.spec.constraints import StopReason as StopReason
    from assay.spec.load import Concurrent as Concurrent
    from assay.spec.load import Constant as Constant
    from assay.spec.load import Poisson as Poisson
    from assay.spec.load import Profile as Profile
    from assay.spec.load import RampUp as RampUp
    from assay.spec.load import RateRamp as RateRamp
    from assay.spec.load import StepLoad as StepLoad
    from assay.spec.load import Sweep as Sweep
    from assay.spec.load import Synchronous as Synchronous
    from assay.spec.load import Throughput as Throughput

_HOMES = {
    "LoadProcessError": "assay.engine.coordinator",
    **dict.fromkeys(("run_benchmark", "run_benchmark_async"), "assay.engine.entry_points"),
    **dict.fromkeys(("RayActors", "start_ray_actors"), "assay.engine.ray_engine"),
    **dict.fromkeys(
        ("BenchmarkPlan", "BenchmarkResult", "StepResult"), "assay.load.benchmark_plan"
    ),
    **dict.fromkeys(("OutcomeTotals", "ProgressSnapshot"), "assay.load.progress"),
    **dict.fromkeys(("LoadProcesses", "start_load_processes"), "assay.load_launcher"),
    **dict.fromkeys(
        (
            "counting_sink",
            "CountingSink",
            "OutcomeCounts",
            "RecordSink",
            "SinkFactory",
            "StepContext",
        ),
        "assay.records.sink",
    ),
    **dict.fromkeys(("Constraints", "StopReason"), "assay.spec.constraints"),
    **dict.fromkeys(
        (
            "Concurrent",
            "Constant",
            "Poisson",
            "Profile",
            "RampUp",
            "RateRamp",
            "StepLoad",
            "Sweep",
            "Synchronous",
            "Throughput",
        ),
        "assay.spec.load",
    ),
}

__all__ = sorted(_HOMES)

if not TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
