"""The internals the performance suite (`perf/`) measures, and the only door it has into assay.

Beyond the public `assay` names, `perf/` imports assay through this module alone (an
import-linter contract holds it to that), so a refactoring of assay sees here everything the
suite depends on. Each name is imported on first use, as `perf/` imported it before: a suite
part that measures a lean process does not pay for the mock or the command line.
"""

from assay.lazy_exports import lazy_exports as _lazy_exports

# `typing.TYPE_CHECKING` without importing typing; type checkers take it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from assay.backend import BackendSettings as BackendSettings
    from assay.backend import Timeouts as Timeouts
    from assay.backend import client as client
    from assay.backend import open_backend as open_backend
    from assay.backend.deadlines import DeadlineWatch as DeadlineWatch
    from assay.backend.exchange import Exchange as Exchange
    from assay.benchmark.shard_sink import ShardSinkFactory as ShardSinkFactory
    from assay.cli.app import main as main
    from assay.core import EmbeddingSummary as EmbeddingSummary
    from assay.core import MonotonicClock as MonotonicClock
    from assay.core import RequestEcho as RequestEcho
    from assay.core import TextAnswer as TextAnswer
    from assay.core import TokenSource as TokenSource
    from assay.core import Vectors as Vectors
    from assay.core.timer_fd import TimerFdWaiter as TimerFdWaiter
    from assay.data import FixedCount as FixedCount
    from assay.data import SyntheticSource as SyntheticSource
    from assay.data.source import index_rng as index_rng
    from assay.data.tokenizer import BuiltinTokenizer as BuiltinTokenizer
    from assay.handlers import SseParser as SseParser
    from assay.handlers import StreamAccumulator as StreamAccumulator
    from assay.handlers import Transfer as Transfer
    from assay.handlers import handler_for as handler_for
    from assay.handlers.base import EndpointHandler as EndpointHandler
    from assay.load.ahead import RequestBuilds as RequestBuilds
    from assay.load.step_runner import StepWork as StepWork
    from assay.load.step_runner import run_step as run_step
    from assay.metrics import ConcurrencyTracker as ConcurrencyTracker
    from assay.metrics import Slo as Slo
    from assay.metrics import StepAggregator as StepAggregator
    from assay.metrics import Timeline as Timeline
    from assay.metrics.arrivals import add_arrivals as add_arrivals
    from assay.mock import MockConfig as MockConfig
    from assay.mock import start_mock_processes as start_mock_processes
    from assay.records import RecordWriter as RecordWriter
    from assay.records import RequestRecord as RequestRecord
    from assay.records import record_line as record_line
    from assay.records.sink import StepContext as StepContext
    from assay.records.sink import counting_sink as counting_sink
    from assay.reports.loader import load_report as load_report
    from assay.reports.readback import read_back as read_back
    from assay.spec.constraints import Constraints as Constraints
    from assay.spec.load import Synchronous as Synchronous
    from assay.worker import execute as execute

# Each name and the module it is imported from on first use.
_HOMES = {
    **dict.fromkeys(("BackendSettings", "client", "open_backend", "Timeouts"), "assay.backend"),
    "DeadlineWatch": "assay.backend.deadlines",
    "Exchange": "assay.backend.exchange",
    "ShardSinkFactory": "assay.benchmark.shard_sink",
    "main": "assay.cli.app",
    **dict.fromkeys(
        ("EmbeddingSummary", "MonotonicClock", "RequestEcho", "TokenSource"), "assay.core"
    ),
    **dict.fromkeys(("TextAnswer", "Vectors"), "assay.core"),
    "TimerFdWaiter": "assay.core.timer_fd",
    **dict.fromkeys(("FixedCount", "SyntheticSource"), "assay.data"),
    "index_rng": "assay.data.source",
    "BuiltinTokenizer": "assay.data.tokenizer",
    **dict.fromkeys(
        ("handler_for", "SseParser", "StreamAccumulator", "Transfer"), "assay.handlers"
    ),
    "EndpointHandler": "assay.handlers.base",
    "RequestBuilds": "assay.load.ahead",
    **dict.fromkeys(("run_step", "StepWork"), "assay.load.step_runner"),
    **dict.fromkeys(("ConcurrencyTracker", "Slo", "StepAggregator", "Timeline"), "assay.metrics"),
    "add_arrivals": "assay.metrics.arrivals",
    **dict.fromkeys(("MockConfig", "start_mock_processes"), "assay.mock"),
    **dict.fromkeys(("record_line", "RecordWriter", "RequestRecord"), "assay.records"),
    **dict.fromkeys(("counting_sink", "StepContext"), "assay.records.sink"),
    "read_back": "assay.reports.readback",
    "load_report": "assay.reports.loader",
    "Constraints": "assay.spec.constraints",
    "Synchronous": "assay.spec.load",
    "execute": "assay.worker",
}

__all__ = sorted(_HOMES)

if not TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
