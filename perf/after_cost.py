"""Cost per record of what follows the verdict: the shard sink, the record line, aggregation.

`ShardSink.add` holds the other two (it writes the line, then aggregates the record into the
step's aggregator and timeline), so its figure is the whole per-record cost after the verdict;
`record_line` and `StepAggregator.add` are its two largest parts, timed alone. `snapshot_ms` is
one step's `snapshot()` after the records of a round were added.

Run with `python -m perf.after_cost`; prints one JSON object of nanoseconds per record (best and
median of several rounds) on typical completed 16-token streamed chat records.
"""

from __future__ import annotations

import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from assay import Completed, GenerationResponse
from assay.testing.bench import (
    RequestRecord,
    ShardSinkFactory,
    Slo,
    StepAggregator,
    StepContext,
    record_line,
)
from perf.aggregation_cost import typical_records as records_with_uneven_times

ROUNDS = 7
COUNT = 20_000
SLO = Slo(ttft_ms=100, tpot_ms=20)
MS = 1_000_000

Records = Sequence[RequestRecord[GenerationResponse]]


def typical_records(count: int) -> list[RequestRecord[GenerationResponse]]:
    """Completed streamed chat answers of 16 one-token chunks 9 to 12 ms apart, usage reported.

    Those of `perf.aggregation_cost` with their chunk times in order, as a stream's are (theirs
    step back now and then, which takes the aggregator's path for uneven reads).
    """
    records = []
    for index, record in enumerate(records_with_uneven_times(count)):
        assert isinstance(record.outcome, Completed)
        response = record.outcome.response
        timing = response.timing
        first = timing.chunk_times_ns[0]
        gaps = [(9 + (index + k) % 4) * MS for k in range(1, len(timing.chunk_times_ns))]
        times = tuple(itertools.accumulate(gaps, initial=first))
        timing = timing.model_copy(
            update={"chunk_times_ns": times, "last_token_ns": times[-1], "end_ns": times[-1] + MS}
        )
        response = response.model_copy(update={"timing": timing})
        records.append(
            record.model_copy(
                update={"finished_ns": timing.end_ns, "outcome": Completed(response=response)}
            )
        )
    return records


def rounds_ns_per_record(
    round_of: Callable[[], Callable[[Records], None]], records: Records
) -> list[float]:
    """Nanoseconds per record of each round; `round_of()` sets up a round (untimed) and returns
    the work that takes every record."""
    figures = []
    for _ in range(ROUNDS):
        work = round_of()
        started = time.process_time_ns()
        work(records)
        figures.append((time.process_time_ns() - started) / len(records))
    return figures


def shard_sink_round(directory: Path) -> Callable[[], Callable[[Records], None]]:
    """A fresh sink per round, writing its shard in `directory`."""
    factory = ShardSinkFactory(directory, slo=SLO)
    step = iter(range(1_000))

    def round_of() -> Callable[[Records], None]:
        sink = factory(StepContext(next(step), 0, 1, 0, (0, None)))

        def work(records: Records) -> None:
            add = sink.add
            for record in records:
                add(record)
            sink.close()

        return work

    return round_of


def record_line_round() -> Callable[[Records], None]:
    def work(records: Records) -> None:
        dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        for record in records:
            dumps(record_line(record), option=newline)

    return work


def aggregator_round() -> Callable[[Records], None]:
    aggregator = StepAggregator(slo=SLO)

    def work(records: Records) -> None:
        add = aggregator.add
        for record in records:
            add(record)

    return work


def snapshot_ms(records: Records) -> list[float]:
    """Milliseconds of one `snapshot()` of an aggregator that took every record, per round."""
    figures = []
    for _ in range(ROUNDS):
        aggregator = StepAggregator(slo=SLO)
        for record in records:
            aggregator.add(record)
        started = time.process_time_ns()
        aggregator.snapshot()
        figures.append((time.process_time_ns() - started) / 1e6)
    return figures


def best_and_median(figures: list[float], digits: int = 0) -> dict[str, float]:
    return {
        "best": round(min(figures), digits),
        "median": round(statistics.median(figures), digits),
    }


def main() -> None:
    records = typical_records(COUNT)
    with tempfile.TemporaryDirectory() as work:
        sink_ns = rounds_ns_per_record(shard_sink_round(Path(work)), records)
    figures = {
        "records": COUNT,
        "rounds": ROUNDS,
        "shard_sink_add_ns": best_and_median(sink_ns),
        "record_line_ns": best_and_median(rounds_ns_per_record(record_line_round, records)),
        "aggregator_add_ns": best_and_median(rounds_ns_per_record(aggregator_round, records)),
        "snapshot_ms": best_and_median(snapshot_ms(records), 3),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
