"""Shard sinks that stamp each record with a model of a mix, as a run that sends several models
writes them: the per-model figures can be tested through the engines before runs send mixes.
Importable, so the factory pickles into load processes and Ray actors."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Final

from assay.benchmark.shard_sink import ShardSink, ShardSinkFactory, ShardSummary
from assay.core import GenerationResponse
from assay.records import RequestRecord
from assay.records.sink import StepContext

MODELS: Final = ("adapter-a", "adapter-b", "base")


def model_of(request_id: str) -> str:
    """The model a request of the mix named: a pure function of its id."""
    return MODELS[zlib.crc32(request_id.encode()) % len(MODELS)]


class StampingSink:
    """A `ShardSink` whose records name the model `model_of` their id."""

    def __init__(self, sink: ShardSink) -> None:
        self._sink = sink

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        self._sink.add(record.model_copy(update={"model": model_of(record.request_id)}))

    def spooled(self) -> bytes:
        return self._sink.spooled()

    def close(self) -> ShardSummary:
        return self._sink.close()


@dataclass(frozen=True, slots=True)
class MixedSinks(ShardSinkFactory):
    """A `ShardSinkFactory` whose sinks stamp every record with a model of `MODELS`."""

    def __call__(self, context: StepContext) -> StampingSink:  # type: ignore[override]  # a wrapper of its sink, the same protocol
        return StampingSink(ShardSink(context, self))

    def spooling(self, context: StepContext) -> StampingSink:  # type: ignore[override]  # as above
        return StampingSink(ShardSink(context, self, spool=True))
