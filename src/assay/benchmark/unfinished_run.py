"""The report of a run that ended without writing its own: a crash of assay, or a kill.

Such a run leaves its records in `shards/` (one file per step and load process, flushed as it
goes). Here they are merged into records.jsonl, every whole record line kept and a line cut off
when its process stopped dropped and counted, and a partial report is built from the records:
report.json, summary.csv and report.html, marked `crashed` or `unfinished` (`Incomplete`) and
never valid. `assay run` does it when it crashes; `assay report RUN_DIR` for a folder a run left
without its report (an older assay's crash, a SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import IO, Final

import orjson
from pydantic import ValidationError

from assay.benchmark.chain_spec import ChainSpec, slo_of
from assay.benchmark.shard_sink import (
    ShardSinkFactory,
    add_to_groups,
    model_snapshots,
    turn_snapshots,
)
from assay.config import RunConfig
from assay.config.limits import load_processes
from assay.errors import DataError
from assay.file_writes import open_new
from assay.load.benchmark_plan import next_load
from assay.metrics import StepAggregator, Timeline
from assay.records.jsonl import MAX_RECORD_LINE_BYTES, read_records, record_from_line
from assay.records.sink import StepContext
from assay.reports import REPORT_FILE, Report, StepReport, build_report, write_report
from assay.reports.definitions import with_found
from assay.reports.html import write_html
from assay.reports.readback import read_back
from assay.reports.report import Incomplete
from assay.run_folder import RECORDS_FILE, SHARDS_DIR, shard_files
from assay.spec.load import (
    Concurrent,
    Profile,
    StepLoad,
    Sweep,
    Synchronous,
    Throughput,
)
from assay.spec.run import RunEcho
from assay.spec.sections import Validation

_UNKNOWN_PROFILE: Final = "unknown"


@dataclass(frozen=True, slots=True)
class MergedShards:
    """What merging a run's shards into records.jsonl did: `shards` files read, `records`
    whole records written, `lines_dropped` lines that were not a whole record, and the shards
    `kept` in place (one holding a dropped line, or one that grew while it was read)."""

    shards: int
    records: int
    lines_dropped: int
    kept: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class UnfinishedRun:
    """The partial report written for a run that did not finish, and how its records got there
    (`merged` None when the run had merged them itself before it crashed); `page_problem` says
    why report.html could not be written, when it could not (report.json and summary.csv were).
    """

    report: Report
    output_dir: Path
    merged: MergedShards | None
    page_problem: str | None = None

    @property
    def files(self) -> str:
        """The report files written, for a console line: "report.json, summary.csv, ..."."""
        page = "" if self.page_problem is not None else ", report.html"
        return f"report.json, summary.csv{page}"


def merge_shards(run_dir: Path) -> MergedShards:
    """Merge the shards of `run_dir` into a new `run_dir/records.jsonl` and delete the ones
    merged whole.

    Every line that is a whole record is kept, in step and process order; a line that is not
    (cut off without its newline, or unreadable) is dropped and counted, never raised. The file
    is created exclusively; if the merge fails it is removed again and every shard stays.
    """
    shards = shard_files(run_dir)
    target = run_dir / RECORDS_FILE
    records = dropped = 0
    kept: list[Path] = []
    read: list[tuple[Path, int]] = []
    created = False
    try:
        with open_new(target) as out:
            created = True
            for shard in shards:
                with shard.open("rb") as lines:
                    whole, cut = _copy_whole_records(lines, out)
                    size = lines.tell()
                records += whole
                dropped += cut
                if cut:
                    kept.append(shard)  # its dropped bytes stay where they were
                else:
                    read.append((shard, size))
            out.flush()
            os.fsync(out.fileno())  # on disk before any shard is deleted
    except BaseException:
        if created:  # only the file this merge created, never one that held the name
            with contextlib.suppress(OSError):
                target.unlink()
        raise
    for shard, size in read:
        # A process still writing (a driver killed before its load processes) keeps its shard.
        if shard.stat().st_size == size:
            shard.unlink(missing_ok=True)
        else:
            kept.append(shard)
    with contextlib.suppress(OSError):
        (run_dir / SHARDS_DIR).rmdir()
    return MergedShards(len(shards), records, dropped, tuple(kept))


def _copy_whole_records(lines: IO[bytes], out: IO[bytes]) -> tuple[int, int]:
    """Copy the whole record lines of `lines` to `out`: (records copied, lines dropped)."""
    whole = dropped = 0
    while True:
        raw = lines.readline(MAX_RECORD_LINE_BYTES + 1)
        if not raw:
            return whole, dropped
        if len(raw) > MAX_RECORD_LINE_BYTES:
            # Longer than any record assay writes: dropped without being held whole.
            dropped += 1
            while raw and not raw.endswith(b"\n"):
                raw = lines.readline(1 << 20)
            continue
        if not raw.endswith(b"\n"):
            dropped += 1  # cut off when its process stopped
            continue
        if not raw.strip():
            continue
        try:
            record_from_line(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError, ValueError):
            dropped += 1
            continue
        out.write(raw)
        whole += 1


def finish_unfinished_run(
    run_dir: Path,
    *,
    crash_file: str | None,
    config: RunConfig | None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
) -> UnfinishedRun:
    """Merge what a run that did not finish left in `run_dir` and write its partial report.

    The run is `crashed` when `crash_file` names its traceback, else `unfinished`. `config` is
    its settings when known (a crash of this process); without them the report's `run_config`
    is empty and its steps are named by index. Times not given are estimated from the records
    and the files: the last write is the end, the records' span before it the start.

    Raises `DataError` when there is nothing to report on, or the folder already has a report.
    """
    if (run_dir / REPORT_FILE).exists():
        raise DataError(f"{run_dir} already has its report ({REPORT_FILE})")
    records = run_dir / RECORDS_FILE
    last_write = _last_write(run_dir)
    merged = None
    if not records.exists():
        if not shard_files(run_dir):
            raise DataError(f"{run_dir}: no {REPORT_FILE}, no {RECORDS_FILE} and no shards")
        merged = merge_shards(run_dir)
    spans = _step_spans(records)
    if finished_at is None:
        finished_at = datetime.fromtimestamp(last_write, UTC)
    if started_at is None:
        first = min((span[0] for span in spans.values()), default=0)
        last = max((span[1] for span in spans.values()), default=0)
        started_at = finished_at - timedelta(microseconds=(last - first) // 1000)
    incomplete = Incomplete(
        state="unfinished" if crash_file is None else "crashed",
        crash_file=crash_file,
        shards_merged=0 if merged is None else merged.shards,
        lines_dropped=0 if merged is None else merged.lines_dropped,
        settings_known=config is not None,
    )
    steps = _steps(records, spans, config, run_dir)
    validation = Validation() if config is None else config.validation
    report = build_report(
        run_config=RunEcho() if config is None else _echo(config),
        steps=steps,
        started_at=started_at,
        finished_at=finished_at,
        max_error_rate=validation.max_error_rate,
        max_not_sent_rate=validation.max_not_sent_rate,
        incomplete=incomplete,
    )
    # records.jsonl read back once: the peers' figures and the page's latency samples.
    found = read_back(run_dir / RECORDS_FILE, report)
    report = with_found(report, found.definitions)
    write_report(report, run_dir)
    try:
        write_html(run_dir, report, new=True, samples=found.samples)
    except Exception as error:
        # The page is a view of report.json, which is written: `assay report` can retry it.
        return UnfinishedRun(report, run_dir, merged, f"{type(error).__name__}: {error}")
    return UnfinishedRun(report, run_dir, merged)


def _echo(config: RunConfig) -> RunEcho:
    """The settings of a run that crashed, as far as they do not depend on how far it got."""
    return config.echo(
        validator_chain=ChainSpec.of(config.validation, config.target.endpoint).describe(),
        resolved_target=config.target.url,
        resolved_model=config.target.model,
        processes=load_processes(config),
        interrupted=False,
        degraded=False,
    )


def _step_spans(records: Path) -> dict[int, tuple[int, int]]:
    """Per step, the earliest targeted start and the latest finish of its records (ns)."""
    spans: dict[int, tuple[int, int]] = {}
    for record in read_records(records):
        start, end = spans.get(record.step, (record.targeted_start_ns, record.finished_ns))
        spans[record.step] = (
            min(start, record.targeted_start_ns),
            max(end, record.finished_ns),
        )
    return spans


def _steps(
    records: Path,
    spans: dict[int, tuple[int, int]],
    config: RunConfig | None,
    run_dir: Path,
) -> list[StepReport]:
    """A report entry per step that left records, aggregated from records.jsonl.

    A step's start is its earliest targeted start (where its schedule began, as near as the
    records tell); the measured window of a warmup or cooldown is placed from it.
    """
    constraints = None if config is None else config.constraints_in_force()
    sinks = ShardSinkFactory(
        run_dir / SHARDS_DIR,
        slo=None if config is None else slo_of(config.validation),
        windowed=constraints is not None
        and bool(constraints.warmup_seconds or constraints.cooldown_seconds),
    )
    aggregators: dict[int, StepAggregator] = {}
    timelines: dict[int, Timeline] = {}
    contexts: dict[int, StepContext] = {}
    # By step: a sessions run's records by turn, a traffic mix's by model (as the run's sinks).
    turns: dict[int, dict[int, StepAggregator]] = {}
    models: dict[int, dict[str, StepAggregator]] = {}
    for step, (start_ns, _) in spans.items():
        context = StepContext(
            step=step,
            process=0,
            processes=1,
            start_ns=start_ns,
            measured_window=(start_ns, None)
            if constraints is None
            else constraints.measured_window(start_ns),
        )
        aggregators[step] = sinks.aggregator_for(context)
        timelines[step] = Timeline(origin_ns=start_ns)
        contexts[step] = context
    for record in read_records(records):
        aggregators[record.step].add(record)
        timelines[record.step].add(record)
        add_to_groups(
            turns.setdefault(record.step, {}),
            models.setdefault(record.step, {}),
            record,
            partial(sinks.aggregator_for, contexts[record.step]),
        )
    profile = None if config is None else config.load
    steps = []
    for index in sorted(aggregators):
        name, load = (_UNKNOWN_PROFILE, None) if profile is None else _step_load(profile, index)
        steps.append(
            StepReport.of(
                index,
                name if load is None else load,
                aggregators[index].snapshot(),
                timeline=timelines[index].snapshot(),
                turns=turn_snapshots(turns.get(index)),
                models=model_snapshots(models.get(index, {})),
            )
        )
    return steps


def _step_load(profile: Profile, index: int) -> tuple[str, StepLoad | None]:
    """The kind of load step `index` of `profile` offered, and the load itself where it does not
    depend on results the run did not keep (a sweep places its rates by its first two steps)."""
    match profile:
        case Sweep(concurrencies=levels) if levels:
            if index < len(levels):
                return "concurrent", Concurrent(streams=levels[index])
            return _UNKNOWN_PROFILE, None
        case Sweep(max_concurrency=limit):
            if index == 0:
                return "synchronous", Synchronous()
            if index == 1:
                return "throughput", Throughput(max_concurrency=limit)
            return "constant", None  # at a rate placed by the first two steps' results
        case _:  # a single-step load
            load = next_load(profile, []) if index == 0 else None
            return (_UNKNOWN_PROFILE, None) if load is None else (load.kind, load)


def _last_write(run_dir: Path) -> float:
    """When the run last wrote a record, as the files tell (seconds since the epoch)."""
    times = [path.stat().st_mtime for path in shard_files(run_dir)]
    records = run_dir / RECORDS_FILE
    if not times and records.exists():
        times.append(records.stat().st_mtime)
    return max(times, default=datetime.now(UTC).timestamp())
