"""Where a run's records go: a JSONL shard and a metrics aggregator per step and process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.core import GenerationResponse
from assay.data.session import turn_of
from assay.metrics import Slo, StepAggregator, TimeWindow
from assay.records import RequestRecord
from assay.records.jsonl import RecordWriter
from assay.scheduler.sink import StepContext


@dataclass(slots=True)
class ShardSummary:
    """What one process gives back for one step: its aggregator and the shard it wrote."""

    step: int
    process: int
    aggregator: StepAggregator
    shard: Path
    records: int
    # Session turns aggregated by turn index (1 = first), when the step ran sessions.
    turns: dict[int, StepAggregator] | None = None


class ShardSink:
    """Writes every record to a shard and aggregates those in the measured window.

    The aggregator counts records outside the warmup/cooldown window as `excluded`; the shard
    keeps every record, so nothing dispatched is missing from records.jsonl.
    """

    __slots__ = ("_aggregator", "_context", "_slo", "_turns", "_window", "_writer")

    def __init__(
        self, context: StepContext, directory: Path, slo: Slo | None, windowed: bool
    ) -> None:
        self._context = context
        begin, end = context.measured_window
        # Warmup and cooldown need max_seconds (the config checks it), so their window has an
        # end. Without them no window is set: the step's duration is then first dispatch to
        # last finish, right also for a step that ends early (max_requests, errors).
        window = TimeWindow(start_ns=begin, end_ns=end) if windowed and end is not None else None
        self._aggregator = StepAggregator(slo=slo, window=window)
        self._slo, self._window = slo, window
        self._turns: dict[int, StepAggregator] | None = None
        path = directory / f"records.step{context.step:03d}.p{context.process:03d}.jsonl"
        self._writer = RecordWriter(path)
        self._writer.open()

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        self._writer.write(record)
        self._aggregator.add(record)
        turn = turn_of(record.request_id)
        if turn is not None:
            turns = self._turns
            if turns is None:
                turns = self._turns = {}
            aggregator = turns.get(turn)
            if aggregator is None:
                aggregator = turns[turn] = StepAggregator(slo=self._slo, window=self._window)
            aggregator.add(record)

    def close(self) -> ShardSummary:
        self._writer.close()
        return ShardSummary(
            self._context.step,
            self._context.process,
            self._aggregator,
            self._writer.path,
            self._writer.written,
            self._turns,
        )


@dataclass(frozen=True, slots=True)
class ShardSinkFactory:
    """Builds a `ShardSink` per step and process; plain data, so it pickles into workers."""

    directory: Path
    slo: Slo | None = None
    windowed: bool = False

    def __call__(self, context: StepContext) -> ShardSink:
        return ShardSink(context, self.directory, self.slo, self.windowed)
