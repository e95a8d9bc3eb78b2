"""Where a run's records go: a JSONL shard and a metrics aggregator per step and process."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson
from pydantic import ValidationError

from assay.core import GenerationResponse
from assay.errors import OutputError
from assay.file_writes import open_append, open_new
from assay.metrics import Slo, StepAggregator, Timeline, TimeWindow
from assay.records import RequestRecord
from assay.records.jsonl import RecordWriter, record_from_line, record_line
from assay.records.sink import StepContext

FLUSH_EVERY_NS = 1_000_000_000


@dataclass(slots=True)
class ShardSummary:
    """What one process gives back for one step: its aggregates and the shard it wrote."""

    step: int
    process: int
    aggregator: StepAggregator
    shard: Path
    records: int
    timeline: Timeline
    # Session turns aggregated by turn index (1 = first), when the step ran sessions.
    turns: dict[int, StepAggregator] | None = None


class ShardSink:
    """Writes every record to a shard and aggregates those in the measured window.

    The aggregator counts records outside the warmup/cooldown window as `excluded`; the shard
    keeps every record, so nothing dispatched is missing from records.jsonl. A shard that
    cannot be written (a full disk) raises `OutputError`, which stops the run. The shard is
    flushed at least every `FLUSH_EVERY_NS`, so a process killed mid-step leaves its records
    of all but the last second behind.
    """

    __slots__ = (
        "_aggregator",
        "_context",
        "_flushed_ns",
        "_slo",
        "_timeline",
        "_turns",
        "_window",
        "_writer",
    )

    def __init__(
        self, context: StepContext, factory: ShardSinkFactory, *, spool: bool = False
    ) -> None:
        self._context = context
        self._aggregator = factory.aggregator_for(context)
        self._timeline = Timeline(origin_ns=context.start_ns)
        self._slo, self._window = factory.slo, factory.window_for(context)
        self._turns: dict[int, StepAggregator] | None = None
        path = factory.shard_path(context.step, context.process)
        self._writer: RecordWriter | _Spool = (
            _Spool(path) if spool else RecordWriter(path, opener=factory.open_shard)
        )
        try:
            self._writer.open()
        except OSError as error:
            raise _output_error(self._writer.path, error) from None
        self._flushed_ns = time.monotonic_ns()

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        try:
            self._writer.write(record)
            now_ns = time.monotonic_ns()
            if now_ns - self._flushed_ns >= FLUSH_EVERY_NS:
                self._flushed_ns = now_ns
                self._writer.flush()
        except OSError as error:
            raise _output_error(self._writer.path, error) from None
        self._aggregator.add(record)
        self._timeline.add(record)
        turn = record.turn
        if turn is not None:
            turns = self._turns
            if turns is None:
                turns = self._turns = {}
            aggregator = turns.get(turn)
            if aggregator is None:
                aggregator = turns[turn] = StepAggregator(
                    slo=self._slo, window=self._window, origin_ns=self._context.start_ns
                )
            aggregator.add(record)

    def spooled(self) -> bytes:
        """The records' lines since the last call, when this sink spools (else nothing)."""
        return self._writer.take() if isinstance(self._writer, _Spool) else b""

    def close(self) -> ShardSummary:
        try:
            self._writer.close()
        except OSError as error:
            raise _output_error(self._writer.path, error) from None
        return ShardSummary(
            self._context.step,
            self._context.process,
            self._aggregator,
            self._writer.path,
            self._writer.written,
            self._timeline,
            self._turns,
        )


class _Spool:
    """A `RecordWriter` that keeps the lines in memory for the driver to write: the shard
    `path` is the driver's, where they end up."""

    __slots__ = ("_lines", "path", "written")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[bytes] = []
        self.written = 0

    def open(self) -> None:
        pass

    def write(self, record: RequestRecord[GenerationResponse]) -> None:
        self._lines.append(orjson.dumps(record_line(record), option=orjson.OPT_APPEND_NEWLINE))
        self.written += 1

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        lines = b"".join(self._lines)
        self._lines.clear()
        return lines


def _output_error(path: Path, error: OSError) -> OutputError:
    return OutputError(
        f"cannot write records to {path}: {error.strerror or error}; the run stopped "
        f"(the records written so far are in {path.parent})"
    )


@dataclass(frozen=True, slots=True)
class ShardSinkFactory:
    """Builds a `ShardSink` per step and process; plain data, so it pickles into workers."""

    directory: Path
    slo: Slo | None = None
    windowed: bool = False
    # How a shard is created: exclusively (see `assay.file_writes`); a test puts a full disk here.
    open_shard: Callable[[Path], IO[bytes]] = open_new

    def __call__(self, context: StepContext) -> ShardSink:
        return ShardSink(context, self)

    def spooling(self, context: StepContext) -> ShardSink:
        """The sink of a slice that runs elsewhere (a Ray actor): it aggregates there and
        spools its records' lines, which `write_spooled` puts in the shard here."""
        return ShardSink(context, self, spool=True)

    def write_spooled(self, step: int, process: int, lines: bytes) -> None:
        """Append lines spooled by slice `process` of step `step` to its shard (created even
        for none, so every finished slice has one)."""
        path = self.shard_path(step, process)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open_append(path) as shard:
                shard.write(lines)
        except OSError as error:
            raise _output_error(path, error) from None

    def shard_path(self, step: int, process: int) -> Path:
        """Where process `process` writes the records of step `step`."""
        return self.directory / f"records.step{step:03d}.p{process:03d}.jsonl"

    def window_for(self, context: StepContext) -> TimeWindow | None:
        """The step's measured window, when warmup or cooldown set one."""
        begin, end = context.measured_window
        # Warmup and cooldown need max_seconds (the config checks it), so their window has an
        # end. Without them no window is set: the step's duration is then first dispatch to
        # last finish, right also for a step that ends early (max_requests, errors).
        use_window = self.windowed and end is not None
        return TimeWindow(start_ns=begin, end_ns=end) if use_window and end else None

    def aggregator_for(self, context: StepContext) -> StepAggregator:
        """An empty aggregator for one step and process, with the step's measured window."""
        return StepAggregator(
            slo=self.slo, window=self.window_for(context), origin_ns=context.start_ns
        )

    def recover(self, context: StepContext) -> ShardSummary:
        """The summary a lost process's sink never returned, rebuilt from its shard.

        Every whole record the process wrote before it was lost is kept; a line it was cut off
        in the middle of is dropped, and the shard is truncated to the records kept.
        """
        path = self.shard_path(context.step, context.process)
        aggregator = self.aggregator_for(context)
        timeline = Timeline(origin_ns=context.start_ns)
        kept = whole_bytes = 0
        if path.is_file():
            with path.open("rb") as shard:
                for raw in shard:
                    if not raw.endswith(b"\n"):
                        break
                    try:
                        record = record_from_line(orjson.loads(raw))
                    except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError):
                        break
                    aggregator.add(record)
                    timeline.add(record)
                    kept += 1
                    whole_bytes += len(raw)
            with path.open("r+b") as shard:
                shard.truncate(whole_bytes)
        else:
            path.touch()
        return ShardSummary(context.step, context.process, aggregator, path, kept, timeline)
