"""Run a benchmark from a `RunConfig`: start the target, run the plan, write the report.

This is the library entry point behind `assay run`; it returns the report and leaves printing
and exit codes to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import JsonValue

from assay.backend import check_ready
from assay.benchmark.plan import (
    backend_settings_of,
    chain_of,
    plan_of,
    slo_of,
    source_of,
)
from assay.benchmark.sink import ShardSinkFactory, ShardSummary
from assay.config import RunConfig
from assay.data.dataset_files import is_hf_spec
from assay.data.describe import describe_source
from assay.errors import DataError
from assay.launch import LoadProcesses
from assay.metrics import StepAggregator
from assay.reports import Report, StepReport, build_report, write_report
from assay.reports.report import SessionSummary
from assay.scheduler import (
    BenchmarkResult,
    ProgressSnapshot,
    StepResult,
    run_benchmark,
    start_load_processes,
)
from assay.scheduler.interrupt import sigint_as_flag

if TYPE_CHECKING:
    from assay.mock import MockConfig

RECORDS_FILE: Final = "records.jsonl"

# What the embedded mock injects when the user names no faults: a few percent of the failures
# real servers produce, so a first run shows what assay catches (and stays a valid run).
DEMO_FAULTS: Final = {"empty_stream": 0.01, "truncated_stream": 0.005, "inband_error": 0.005}


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a finished (or interrupted) run produced."""

    report: Report
    output_dir: Path
    interrupted: bool
    target: str


def default_output_dir(now: datetime) -> Path:
    """`assay-results/run-YYYYmmdd-HHMMSS` (UTC).

    >>> default_output_dir(datetime(2026, 12, 2, 9, 5, 1, tzinfo=UTC)).as_posix()
    'assay-results/run-20261202-090501'
    """
    return Path("assay-results") / f"run-{now:%Y%m%d-%H%M%S}"


def mock_config_of(config: RunConfig) -> MockConfig:
    """The embedded mock: a model that mostly talks until max_tokens, with the given latencies."""
    # Imported here, not at module level: a run with --target never loads the mock server
    # (aiohttp.web and friends), which saves 60-80 ms of every run's start-up.
    from assay.mock import Fixed, LatencyModel, MockConfig, Normal

    return MockConfig(
        latency=LatencyModel(
            time_to_first_token=Fixed(value=config.mock_ttft_ms / 1000),
            inter_token_latency=Fixed(value=config.mock_itl_ms / 1000),
            output_tokens=Normal(mean=400, stdev=150, min=1, max=2048),
        ),
        fault_rates=config.mock_faults if config.mock_faults else DEMO_FAULTS,
        seed=config.seed,
        record_requests=config.mock_record_requests,
    )


@contextmanager
def open_target(config: RunConfig, note: Callable[[str], None]) -> Iterator[str]:
    """The base URL to benchmark: `--target`, or an embedded mock started for the run."""
    if config.target is not None:
        yield config.target.rstrip("/")
        return
    from assay.mock import start_mock_processes

    mock = mock_config_of(config)
    faults = ", ".join(f"{name}={rate:g}" for name, rate in mock.fault_rates.items()) or "none"
    with start_mock_processes(mock, workers=config.mock_workers) as url:
        note(f"target: embedded mock server at {url} (injected faults: {faults})")
        yield url


def run_from_config(
    config: RunConfig,
    *,
    note: Callable[[str], None] = lambda _: None,
    on_progress: Callable[[ProgressSnapshot], None] | None = None,
    started: LoadProcesses | None = None,
) -> RunOutcome:
    """Run the benchmark `config` describes and write its files; see `RunOutcome`.

    `started` are its load processes when the caller started them ahead (the CLI does, before
    it imports this module, so the imports overlap); otherwise they start here, first.

    Raises `AssayError` subclasses for bad input (data files, validators, an unreachable
    target) before any load is sent.
    """
    started_at = datetime.now(UTC)
    output_dir = config.output_dir or default_output_dir(started_at)
    shard_dir = output_dir / "shards"
    chain = chain_of(config)
    chain()  # build once here so a bad --validator fails before any load is sent
    if config.data is not None and not is_hf_spec(config.data) and not config.data.is_file():
        raise DataError(f"{config.data}: no such prompt file")
    # From here on Ctrl-C is a flag, never a KeyboardInterrupt raised mid-start-up: the run
    # then ends cleanly with what it has (the scheduler handles it while the load runs).
    with contextlib.ExitStack() as stack:
        interrupted = stack.enter_context(sigint_as_flag())
        # The load processes start first: their imports overlap the target's start and check.
        if started is None:
            started = stack.enter_context(start_load_processes(config.load_processes))
        url = stack.enter_context(open_target(config, note))
        backend = backend_settings_of(config, url)
        model = asyncio.run(check_ready(backend, config.model))
        note(f"model: {model}; validators: {chain.describe()}")
        source = source_of(config, model)
        for line in describe_source(source):
            note(line)
        plan = plan_of(config, source, backend, chain)
        shard_dir.mkdir(parents=True, exist_ok=True)
        sinks = ShardSinkFactory(
            shard_dir,
            slo=slo_of(config),
            windowed=bool(config.warmup_seconds or config.cooldown_seconds),
        )
        result: BenchmarkResult[ShardSummary] = BenchmarkResult(steps=[], interrupted=True)
        if not interrupted.is_set():
            result = run_benchmark(plan, sinks, on_progress=on_progress, started=started)
        was_interrupted = result.interrupted or interrupted.is_set()
    finished_at = datetime.now(UTC)
    _merge_shards(result, output_dir / RECORDS_FILE)
    shutil.rmtree(shard_dir, ignore_errors=True)
    run_config: dict[str, JsonValue] = {
        **config.model_dump(mode="json"),
        "resolved_target": url if config.target is None else config.target,
        "resolved_model": model,
        "validator_chain": chain.describe(),
        "processes": plan.processes,
        "constraints": plan.constraints.model_dump(mode="json"),
        "interrupted": was_interrupted,
    }
    report = build_report(
        run_config=run_config,
        steps=[step_report(step) for step in result.steps],
        started_at=started_at,
        finished_at=finished_at,
        max_error_rate=config.max_error_rate,
    )
    write_report(report, output_dir)
    return RunOutcome(report, output_dir, was_interrupted, url)


def step_report(step: StepResult[ShardSummary]) -> StepReport:
    """One step's report entry from the aggregators of every process."""
    aggregator = step.sink_results[0].aggregator
    for summary in step.sink_results[1:]:
        aggregator.merge(summary.aggregator)
    turns: dict[int, StepAggregator] = {}
    for summary in step.sink_results:
        for turn, part in (summary.turns or {}).items():
            if turn in turns:
                turns[turn].merge(part)
            else:
                turns[turn] = part
    sessions = step.sessions
    return StepReport.of(
        step.index,
        step.kind,
        aggregator.snapshot(),
        requested_rate=step.rate,
        requested_concurrency=step.concurrency,
        stopped_by=None if step.stopped_by is None else step.stopped_by.value,
        sessions=None if sessions is None else SessionSummary.model_validate(asdict(sessions)),
        turns={turn: turns[turn].snapshot() for turn in sorted(turns)} if turns else None,
    )


def _merge_shards(result: BenchmarkResult[ShardSummary], target: Path) -> None:
    """Concatenate every shard, step by step, into one records.jsonl."""
    with target.open("wb") as out:
        for step in result.steps:
            for summary in step.sink_results:
                with summary.shard.open("rb") as shard:
                    shutil.copyfileobj(shard, out, 1 << 20)
