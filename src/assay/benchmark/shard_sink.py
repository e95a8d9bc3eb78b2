"""Where a run's records go: a shard (`assay.records.shards`) and a metrics aggregator per step
and process."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, TypeVar

from assay.core import GenerationResponse
from assay.file_writes import open_new
from assay.metrics import Slo, StepAggregator, StepMetrics, Timeline, TimeWindow
from assay.metrics.model_bound import MAX_MODELS, OTHER_MODELS
from assay.records import RequestRecord
from assay.records.jsonl import RecordWriter
from assay.records.shards import FLUSH_EVERY_NS, Spool, append_to_shard, recover_shard, shard_error
from assay.records.sink import StepContext
from assay.run_folder import shard_name


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
    # Records aggregated by the model their request named, when the run sent several models.
    models: dict[str, StepAggregator] | None = None


_Key = TypeVar("_Key", bound=Hashable)


def model_key(models: dict[str, StepAggregator], model: str) -> str:
    """The key of `models` a record naming `model` is aggregated under: its own while fewer
    than `MAX_MODELS` models have one (or it has one already), else `OTHER_MODELS`.

    >>> model_key({}, "a"), model_key(dict.fromkeys(map(str, range(MAX_MODELS))), "a")
    ('a', '(other models)')
    """
    return model if model in models or len(models) < MAX_MODELS else OTHER_MODELS


def merged_models(summaries: Iterable[ShardSummary]) -> dict[str, StepMetrics] | None:
    """Each model's figures over every process of a step, by model name; None when no record
    named a model (a run that sent one). Past `MAX_MODELS` models over the processes, those
    with the fewest records (then the last by name) are merged under `OTHER_MODELS`."""
    return model_snapshots(_merged(summary.models for summary in summaries))


def merged_turns(summaries: Iterable[ShardSummary]) -> dict[int, StepMetrics] | None:
    """Each session turn's figures over every process of a step, by turn index; None for a
    step that ran no sessions."""
    return turn_snapshots(_merged(summary.turns for summary in summaries))


def _merged(groups: Iterable[dict[_Key, StepAggregator] | None]) -> dict[_Key, StepAggregator]:
    """The processes' aggregators of one group key merged into one (the first one kept)."""
    merged: dict[_Key, StepAggregator] = {}
    for group in groups:
        for key, part in (group or {}).items():
            if key in merged:
                merged[key].merge(part)
            else:
                merged[key] = part
    return merged


def _bounded(models: dict[str, StepAggregator]) -> dict[str, StepMetrics]:
    """Each model's snapshot, at most `MAX_MODELS` named ones beside `OTHER_MODELS`."""
    snapshots = {name: models[name].snapshot() for name in models}
    named = [name for name in snapshots if name != OTHER_MODELS]
    if len(named) <= MAX_MODELS:
        return snapshots
    named.sort(key=lambda name: (-snapshots[name].outcomes.dispatched, name))
    folded = [models[name] for name in named[MAX_MODELS:]]
    if OTHER_MODELS in models:
        folded.append(models[OTHER_MODELS])
    other = folded[0]
    for part in folded[1:]:
        other.merge(part)
    kept = {name: snapshots[name] for name in named[:MAX_MODELS]}
    return {**kept, OTHER_MODELS: other.snapshot()}


def model_snapshots(models: dict[str, StepAggregator]) -> dict[str, StepMetrics] | None:
    """Each model's figures by name, in name order (at most `MAX_MODELS` and `OTHER_MODELS`,
    see `merged_models`); None for none."""
    if not models:
        return None
    snapshots = _bounded(models)
    return {name: snapshots[name] for name in sorted(snapshots)}


def turn_snapshots(turns: dict[int, StepAggregator] | None) -> dict[int, StepMetrics] | None:
    """Each session turn's figures, by turn index; None for a step that ran no sessions."""
    return {turn: turns[turn].snapshot() for turn in sorted(turns)} if turns else None


def add_to_group(
    groups: dict[_Key, StepAggregator],
    key: _Key,
    record: RequestRecord[GenerationResponse],
    fresh: Callable[[], StepAggregator],
) -> None:
    """Add `record` to the aggregator of `key` in `groups`, made by `fresh` at its first."""
    aggregator = groups.get(key)
    if aggregator is None:
        aggregator = groups[key] = fresh()
    aggregator.add(record)


def add_to_groups(
    turns: dict[int, StepAggregator],
    models: dict[str, StepAggregator],
    record: RequestRecord[GenerationResponse],
    fresh: Callable[[], StepAggregator],
) -> None:
    """Add `record` to the aggregator of its session turn and of the model it named (see
    `model_key`), where it has them; a group's aggregator is made by `fresh` at its first."""
    if record.turn is not None:
        add_to_group(turns, record.turn, record, fresh)
    if record.model is not None:  # set only when the run sends several models
        add_to_group(models, model_key(models, record.model), record, fresh)


class ShardSink:
    """Writes every record to a shard and aggregates those in the measured window.

    The aggregator counts records outside the warmup/cooldown window as `excluded`; the shard
    keeps every record, so nothing dispatched is missing from records.jsonl (see
    `assay.records.shards` for how it is written and flushed).
    """

    __slots__ = (
        "_aggregator",
        "_context",
        "_flushed_ns",
        "_fresh",
        "_models",
        "_timeline",
        "_turns",
        "_writer",
    )

    def __init__(
        self, context: StepContext, factory: ShardSinkFactory, *, spool: bool = False
    ) -> None:
        self._context = context
        self._aggregator = factory.aggregator_for(context)
        self._timeline = Timeline(origin_ns=context.start_ns)
        self._fresh = partial(factory.aggregator_for, context)
        self._turns: dict[int, StepAggregator] = {}
        self._models: dict[str, StepAggregator] = {}
        path = factory.shard_path(context.step, context.process)
        self._writer: RecordWriter | Spool = (
            Spool(path) if spool else RecordWriter(path, opener=factory.open_shard)
        )
        try:
            self._writer.open()
        except OSError as error:
            raise shard_error(self._writer.path, error) from None
        self._flushed_ns = time.monotonic_ns()

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        try:
            self._writer.write(record)
            now_ns = time.monotonic_ns()
            if now_ns - self._flushed_ns >= FLUSH_EVERY_NS:
                self._flushed_ns = now_ns
                self._writer.flush()
        except OSError as error:
            raise shard_error(self._writer.path, error) from None
        self._aggregator.add(record)
        self._timeline.add(record)
        if record.turn is not None or record.model is not None:  # most runs: neither
            add_to_groups(self._turns, self._models, record, self._fresh)

    def spooled(self) -> bytes:
        """The records' lines since the last call, when this sink spools (else nothing)."""
        return self._writer.take() if isinstance(self._writer, Spool) else b""

    def close(self) -> ShardSummary:
        try:
            self._writer.close()
        except OSError as error:
            raise shard_error(self._writer.path, error) from None
        return ShardSummary(
            self._context.step,
            self._context.process,
            self._aggregator,
            self._writer.path,
            self._writer.written,
            self._timeline,
            self._turns or None,
            self._models or None,
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
        append_to_shard(self.shard_path(step, process), lines)

    def shard_path(self, step: int, process: int) -> Path:
        """Where process `process` writes the records of step `step`."""
        return self.directory / shard_name(step, process)

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
        in the middle of is dropped, and the shard is truncated to the records kept. Its turns
        and models are aggregated again as its sink did.
        """
        path = self.shard_path(context.step, context.process)
        aggregator = self.aggregator_for(context)
        timeline = Timeline(origin_ns=context.start_ns)
        turns: dict[int, StepAggregator] = {}
        models: dict[str, StepAggregator] = {}
        fresh = partial(self.aggregator_for, context)

        def keep(record: RequestRecord[GenerationResponse]) -> None:
            aggregator.add(record)
            timeline.add(record)
            add_to_groups(turns, models, record, fresh)

        kept = recover_shard(path, keep)
        return ShardSummary(
            context.step,
            context.process,
            aggregator,
            path,
            kept,
            timeline,
            turns or None,
            models or None,
        )
