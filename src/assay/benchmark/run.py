"""Run a benchmark from a `RunConfig`: start the target, run the plan, write the report.

This is the library entry point behind `assay run`; it returns the report and leaves printing
and exit codes to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from assay.backend import split_endpoint_path
from assay.backend.probe import probe_endpoint
from assay.backend.proxies import seen_proxy
from assay.backend.readiness import wait_for_model
from assay.backend.served_models import ServedModel
from assay.backend.settings import BackendSettings, settings_for
from assay.benchmark.chain_spec import ChainSpec, slo_of
from assay.benchmark.gpu_observation import observe_gpus
from assay.benchmark.preflight import check_before_start
from assay.benchmark.server_observation import observe_server, server_metrics_report
from assay.benchmark.shard_sink import ShardSinkFactory, ShardSummary, merged_models, merged_turns
from assay.benchmark.source_ahead import (
    ReadAhead,
    SourceAhead,
    read_ahead,
    rows_to_list,
    with_model,
)
from assay.config import RunConfig, check_machine_limits
from assay.config.limits import load_processes
from assay.data.context_fit import ContextWindow, check_fits_context
from assay.data.describe import describe_source
from assay.data.source import RequestSource
from assay.data.source_config import source_of
from assay.engine import (
    BenchmarkPlan,
    BenchmarkResult,
    ProgressSnapshot,
    RayActors,
    StepContext,
    StepResult,
    run_benchmark,
    start_load_processes,
    start_ray_actors,
)
from assay.engine.interrupt import SigintFlag, sigint_as_flag
from assay.errors import OutputError
from assay.load_launcher import LoadProcesses
from assay.metrics import Goodput
from assay.records.shards import concatenate_shards
from assay.reports import Report, StepReport, build_report, write_report
from assay.reports.capacity_search import capacity_of
from assay.reports.definitions import with_found
from assay.reports.html import write_html
from assay.reports.readback import read_back
from assay.reports.report import SessionSummary
from assay.run_folder import RECORDS_FILE, RunFolder, claim_run_folder
from assay.server_metrics import accounting_notes, accounting_of
from assay.spec.constraints import StopReason
from assay.spec.model_mix import ModelMix
from assay.spec.proxy import SeenProxy
from assay.spec.target import Target

if TYPE_CHECKING:
    from assay.mock import MockConfig


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a finished (or interrupted) run produced."""

    report: Report
    output_dir: Path
    interrupted: bool
    target: str


def mock_config_of(config: RunConfig) -> MockConfig:
    """The embedded mock: a model that mostly talks until max_tokens, with the given latencies,
    serving every model of a traffic mix."""
    # Imported here, not at module level: a run with --target never loads the mock server
    # (aiohttp.web and friends), which saves 60-80 ms of every run's start-up.
    from assay.mock import Fixed, LatencyModel, MockConfig, Normal
    from assay.mock.capacity import ServerModel
    from assay.mock.config import spread_models

    mock = config.mock
    latency = LatencyModel(
        time_to_first_token=Fixed(value=mock.ttft_ms / 1000),
        inter_token_latency=Fixed(value=mock.itl_ms / 1000),
        output_tokens=Normal(mean=400, stdev=150, min=1, max=2048),
    )
    # A traffic mix is served whole: the first model is the mock's own, the others beside it,
    # each slower than the one before (`spread_models`), so per-model figures differ.
    mix = config.target.mix()
    served = MockConfig(
        latency=latency,
        fault_rates=mock.injected_faults(),
        seed=config.seed,
        record_requests=mock.record_requests,
        gpu_watts=mock.gpu_watts,
        server=ServerModel.of(mock),
    )
    if mix is None:
        return served
    models = spread_models(mix.names, latency)
    return served.model_copy(update={"model_name": mix.names[0], "models": models[1:]})


def injected_faults_caught(report: Report) -> str | None:
    """One line on the embedded mock's injected faults and how many of them assay caught, for a
    run against the embedded mock that injected any; None otherwise.

    The faults are part of the demonstration: each is an answer a real server can give, and
    each errored request carrying a fault's code is one that assay refused to count as served.
    """
    echo = report.run_config
    faults = {name: rate for name, rate in echo.mock_faults.items() if rate > 0}
    if echo.target is not None or not faults:
        return None
    # The mock is loaded already: it served the run.
    from assay.mock.faults import FAULTS

    codes = {FAULTS[name].code for name in faults if name in FAULTS}
    caught = {
        str(code): summary.count
        for code, summary in report.totals.errors_by_code.items()
        if code in codes
    }
    rates = ", ".join(f"{name}={rate:g}" for name, rate in faults.items())
    total = sum(faults.values())
    found = ", ".join(f"{code} {count}" for code, count in sorted(caught.items()))
    count = sum(caught.values())
    return (
        f"Injected faults: the embedded mock injects {total * 100:.3g} % faults to show what "
        f"assay catches ({rates}); {count} injected fault{'' if count == 1 else 's'} caught"
        + (f" ({found})" if found else "")
        + ". --mock-fault NAME=0 turns them off."
    )


@contextmanager
def open_target(
    config: RunConfig,
    note: Callable[[str], None],
    interrupted: Callable[[], bool] = lambda: False,
) -> Iterator[str]:
    """The base URL to benchmark: `--target`, or an embedded mock started for the run
    (KeyboardInterrupt when `interrupted()` turns true while it starts)."""
    if config.target.url is not None:
        base, dropped = split_endpoint_path(config.target.url)
        if dropped is not None:
            note(
                f"target: dropped {dropped} from the URL; assay adds each endpoint's path "
                "itself (choose it with --endpoint)"
            )
        yield base.rstrip("/")
        return
    from assay.mock import start_mock_processes

    mock = mock_config_of(config)
    faults = ", ".join(f"{name}={rate:g}" for name, rate in mock.fault_rates.items()) or "none"
    with start_mock_processes(mock, workers=config.mock.workers, interrupted=interrupted) as url:
        note(f"target: embedded mock server at {url} (injected faults: {faults})")
        yield url


def proxy_in_front(
    target: Target, backend: BackendSettings, note: Callable[[str], None]
) -> SeenProxy | None:
    """The known proxy answering at a real target (issue 38: through LiteLLM cut streams
    completed, VALID, exit 0, and assay said nothing), noted in the run's notes; None for the
    embedded mock, with `--no-probe` (no request before the load), or when none is seen."""
    if target.url is None or not target.probe:
        return None
    proxy = seen_proxy(backend, target.endpoint)
    if proxy is not None:
        note(proxy.note())
    return proxy


def run_from_config(
    config: RunConfig,
    *,
    note: Callable[[str], None] = lambda _: None,
    on_progress: Callable[[ProgressSnapshot], None] | None = None,
    started: LoadProcesses | RayActors | None = None,
    folder: RunFolder | None = None,
    ahead: ReadAhead | None = None,
) -> RunOutcome:
    """Run the benchmark `config` describes and write its files; see `RunOutcome`.

    `started` are its load processes (or Ray actors) when the caller started them ahead (the
    CLI starts load processes before it imports this module, so the imports overlap);
    otherwise they start here, first: `config.engine` says which.
    `folder` is the run folder when the caller claimed it ahead (see `claim_run_folder`).
    `ahead` is the data or trace file when the caller read it ahead (see `read_ahead`).

    Raises `AssayError` subclasses for bad input (data files, validators, an unreachable
    target) before any load is sent; the run folder is then removed again if still empty.
    """
    started_at = datetime.now(UTC)
    claimed = None
    try:
        chain = ChainSpec.of(config.validation, config.target.endpoint)
        chain()  # build once here so a bad --validator fails before any load is sent
        check_machine_limits(config)
        mock_check = None if config.target.url is not None else lambda: mock_config_of(config)
        check_before_start(config, mock_check)
        # A data or trace file is read and checked now, before a target starts or a request is
        # sent: a bad row is refused in the time its read takes.
        if ahead is None:
            ahead = read_ahead(config)
        if folder is None:
            folder = claimed = claim_run_folder(config.output.dir, started_at)
        return _run(config, folder, chain, started_at, note, on_progress, started, ahead.source)
    except BaseException:
        # A start that failed leaves no empty run folder; one with records keeps them.
        if folder is not None:
            folder.remove_if_empty()
        raise
    finally:
        if claimed is not None:
            claimed.release()  # a caller's folder is the caller's to let go


def _run(
    config: RunConfig,
    folder: RunFolder,
    chain: ChainSpec,
    started_at: datetime,
    note: Callable[[str], None],
    on_progress: Callable[[ProgressSnapshot], None] | None,
    started: LoadProcesses | RayActors | None,
    ahead: SourceAhead | None = None,
) -> RunOutcome:
    # From here on Ctrl-C is a flag, never a KeyboardInterrupt raised mid-start-up: the run
    # then ends cleanly with what it has (the scheduler handles it while the load runs).
    with contextlib.ExitStack() as stack:
        interrupted = stack.enter_context(sigint_as_flag())
        # The load processes start first: their imports overlap the target's start and check.
        started = _start_engine(config, stack, started, note)
        url = stack.enter_context(open_target(config, note, interrupted.is_set))
        if isinstance(started, RayActors):
            started.check_can_reach(url)
        backend = settings_for(config.target, url, seed=config.seed)
        model, source = _ready_source(config, backend, chain, interrupted, note, ahead)
        proxy = proxy_in_front(config.target, backend, note)
        plan = BenchmarkPlan(
            profile=config.load_in_force(),
            constraints=config.constraints_in_force(),
            processes=(
                started.processes if isinstance(started, RayActors) else load_processes(config)
            ),
            source=source,
            backend=backend,
            validator_factory=chain,
            seed=config.seed,
        )
        sinks = ShardSinkFactory(
            folder.shards,
            slo=slo_of(config.validation),
            windowed=bool(plan.constraints.warmup_seconds or plan.constraints.cooldown_seconds),
        )
        # The DCGM exporter's first scrape comes before the server's, its last after (bracketing).
        gpus = stack.enter_context(observe_gpus(config.server_metrics, backend, note))
        observer = stack.enter_context(observe_server(config.server_metrics, backend, note))
        first = observer.samples[-1] if observer is not None and observer.samples else None
        result: BenchmarkResult[ShardSummary] = BenchmarkResult(steps=[], interrupted=True)
        if not interrupted.is_set():
            result = run_benchmark(plan, sinks, on_progress=on_progress, started=started)
        was_interrupted = result.interrupted or interrupted.is_set()
        recovered = recover_lost_shards(result, sinks, plan)
        steps = [
            step_report(step, recovered.get(step.index, []), data_rows=source.size())
            for step in result.steps
        ]
        server = server_metrics_report(observer, first, steps, accounting_of(config), gpus)
    _write_records(folder, result, recovered)
    report = build_report(
        run_config=config.echo(
            validator_chain=chain.describe(),
            resolved_target=url,
            resolved_model=model,
            processes=plan.processes,
            interrupted=was_interrupted,
            degraded=result.degraded,
            proxy=proxy,
        ),
        steps=steps,
        server_metrics=server,
        capacity=capacity_of(
            plan.profile, result.steps, [_goodput(step.metrics.goodput) for step in steps]
        ),
        started_at=started_at,
        finished_at=datetime.now(UTC),
        max_error_rate=config.validation.max_error_rate,
        max_not_sent_rate=config.validation.max_not_sent_rate,
    )
    try:
        # records.jsonl read back once: the peers' figures and the page's latency samples.
        found = read_back(folder.path / RECORDS_FILE, report)
        report = with_found(report, found.definitions)
        write_report(report, folder.path)
        write_html(folder.path, report, new=True, samples=found.samples)
    except OSError as error:
        raise OutputError(
            f"cannot write the report into {folder.path}: {error.strerror or error}"
        ) from None
    return RunOutcome(report, folder.path, was_interrupted, url)


def _goodput(goodput: Goodput | None) -> float | None:
    return None if goodput is None else goodput.requests_per_s


def _start_engine(
    config: RunConfig,
    stack: contextlib.ExitStack,
    started: LoadProcesses | RayActors | None,
    note: Callable[[str], None],
) -> LoadProcesses | RayActors:
    """The load processes or Ray actors the run's engine runs its load slices in."""
    if started is not None:
        return started
    engine = config.engine
    if engine.kind == "local":
        return stack.enter_context(start_load_processes(load_processes(config)))
    actors = stack.enter_context(start_ray_actors(engine.ray_address, engine.ray_workers))
    if actors.leftovers_ended is not None:
        note(actors.leftovers_ended)
    note(f"engine: {actors.processes} Ray actors on {actors.nodes} nodes")
    return actors


def _ready_source(
    config: RunConfig,
    backend: BackendSettings,
    chain: ChainSpec,
    interrupted: SigintFlag,
    note: Callable[[str], None],
    ahead: SourceAhead | None = None,
) -> tuple[str, RequestSource]:
    """The model once the target serves it, and the requests to send it (`ahead`, the data
    file read before the start, given that model), checked against its context window and, on
    a real target, probed with the first one; KeyboardInterrupt on a Ctrl-C while waiting
    (nothing was sent, nothing to report)."""
    target = config.target
    mix = target.mix()
    ready = asyncio.run(
        wait_for_model(
            backend,
            target.model if mix is None else mix.names[0],
            wait_s=target.wait_ready,
            interrupted=interrupted.is_set,
            note=note,
            mix=() if mix is None else mix.names,
            rows=rows_to_list(config, ahead),
        )
    )
    if ready is None:
        raise KeyboardInterrupt
    window = context_window_of(config, ready)
    said = "" if window is None else f"; context window {window.tokens:,} ({window.origin})"
    named = ready.id if mix is None else _mix_text(mix)
    note(f"model: {named}{said}; validators: {chain.describe()}")
    if ready.window_problem is not None and window is None:
        note(
            f"model: {ready.window_problem}: requests are not checked against a context window "
            "(--context-window N states it)"
        )
    source: RequestSource = (
        source_of(config.source, config.request, target.endpoint, ready.id, config.seed, mix)
        if ahead is None
        else with_model(ahead, ready.id)
    )
    for line in (*describe_source(source), *accounting_notes(config)):
        note(line)
    if window is not None:
        check_fits_context(source, window)
    # Built once, before any load: it loads the tokenizer (a bad one fails here) and is the
    # probe a real target gets, so a wrong endpoint stops the run here, not after it.
    first_request = None if source.size() == 0 else source.request(0)
    if (
        first_request is not None
        and target.url is not None
        and target.probe
        and not asyncio.run(probe_endpoint(backend, first_request, interrupted=interrupted.is_set))
    ):
        raise KeyboardInterrupt
    return ready.id if mix is None else target.model or ready.id, source


def _mix_text(mix: ModelMix) -> str:
    """How the run's notes name a traffic mix: each model with its share, and the order.

    >>> _mix_text(ModelMix.of("a=3,b=1"))
    'mix of a 75 %, b 25 % (random, seeded by --seed)'
    """
    shares = ", ".join(f"{name} {share * 100:.3g} %" for name, share in mix.shares().items())
    how = "random, seeded by --seed" if mix.order == "random" else "round-robin"
    return f"mix of {shares} ({how})"


def _write_records(
    folder: RunFolder,
    result: BenchmarkResult[ShardSummary],
    recovered: dict[int, list[ShardSummary]],
) -> None:
    """Concatenate every shard, step by step and in process order, into records.jsonl (removed
    again if that fails: the shards stay whole for `assay report`), then drop them."""
    records = folder.path / RECORDS_FILE
    shards = [
        summary.shard
        for step in result.steps
        for summary in sorted(
            [*step.sink_results, *recovered.get(step.index, [])],
            key=lambda summary: summary.process,
        )
    ]
    try:
        concatenate_shards(records, shards)
    except OSError as error:
        raise OutputError(
            f"cannot write {records}: {error.strerror or error}; the records are whole in "
            f"{folder.shards}: free some space, then `assay report {folder.path}` writes the report"
        ) from None
    folder.drop_shards(shards)


def context_window_of(config: RunConfig, served: ServedModel) -> ContextWindow | None:
    """The window every request must fit: `--context-window`, else what `/v1/models` named;
    None when neither says (or `--context-window 0` turned the check off).

    >>> context_window_of(RunConfig(), ServedModel("m", 4096))
    ContextWindow(tokens=4096, origin='max_model_len of /v1/models')
    >>> off = RunConfig.model_validate({"context_window": 0})
    >>> context_window_of(off, ServedModel("m", 4096)) is None
    True
    """
    tokens = config.target.context_window
    if tokens == 0:
        return None
    if tokens is not None:
        return ContextWindow(tokens, "--context-window")
    if served.context_window is None:
        return None
    return ContextWindow(served.context_window, "max_model_len of /v1/models")


def recover_lost_shards(
    result: BenchmarkResult[ShardSummary], sinks: ShardSinkFactory, plan: BenchmarkPlan
) -> dict[int, list[ShardSummary]]:
    """Per step, the records each lost load process left in its shard (see `recover`)."""
    recovered: dict[int, list[ShardSummary]] = {}
    for step in result.steps:
        for lost in step.lost_processes:
            context = StepContext(
                step=step.index,
                process=lost.process,
                processes=plan.processes,
                start_ns=step.started_ns,
                measured_window=plan.constraints.measured_window(step.started_ns),
            )
            recovered.setdefault(step.index, []).append(sinks.recover(context))
    return recovered


def step_report(
    step: StepResult[ShardSummary],
    recovered: list[ShardSummary] | None = None,
    *,
    data_rows: int | None = None,
) -> StepReport:
    """One step's report entry from the aggregators of every process.

    `data_rows` (the source's size) is kept when the step ended because the data ran out.

    A lost process counts with the records its shard kept; what it had dispatched beyond them
    (by its last progress report) is `lost`, and what its slice owed beyond that, `not_sent`.
    """
    recovered = recovered or []
    summaries = [*step.sink_results, *recovered]
    aggregator = summaries[0].aggregator
    timeline = summaries[0].timeline
    for summary in summaries[1:]:
        aggregator.merge(summary.aggregator)
        timeline.merge(summary.timeline)
    scheduled, not_sent, lost = step.scheduled, step.not_sent, 0
    kept = {summary.process: summary.records for summary in recovered}
    for process in step.lost_processes:
        sent = max(process.reported.dispatched, kept.get(process.process, 0))
        lost += sent - kept.get(process.process, 0)
        if process.scheduled is not None:
            scheduled = (scheduled or 0) + process.scheduled
            not_sent += max(0, process.scheduled - sent)
    sessions = step.sessions
    return StepReport.of(
        step.index,
        step.load,
        aggregator.snapshot(),
        stopped_by=step.stopped_by,
        timeline=timeline.snapshot(),
        scheduled=scheduled,
        not_sent=not_sent,
        lost=lost,
        lost_processes=tuple(process.reason for process in step.lost_processes),
        sessions=None if sessions is None else SessionSummary.model_validate(asdict(sessions)),
        turns=merged_turns(summaries),
        models=merged_models(summaries),
        data_rows=data_rows if step.stopped_by is StopReason.data_exhausted else None,
        client_load=step.client,
    )
