"""Per-request costs outside the stream: building a synthetic request and writing its record,
and building a synthetic prompt per token at 8k and 32k tokens (a cost that grows with the work).

Run with `python -m perf.request_costs`; prints one JSON object of nanoseconds per
request (best of several rounds). Together with the chunk, chain and aggregation figures these
account for what assay adds to each request over a bare HTTP loop.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import orjson

from assay import Endpoint
from assay.testing.bench import (
    BuiltinTokenizer,
    FixedCount,
    RecordWriter,
    SyntheticSource,
    handler_for,
)
from perf.aggregation_cost import typical_records

ROUNDS = 5
COUNT = 5_000


def best_ns_per_call(work: Callable[[int], object], count: int = COUNT) -> float:
    """Best-of-rounds mean nanoseconds of `work(i)` for i in range(count)."""
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.process_time_ns()
        for index in range(count):
            work(index)
        best = min(best, (time.process_time_ns() - started) / count)
    return round(best)


def main() -> None:
    """Print ns per synthetic request, per request body, per JSONL record line, and per prompt
    token of a long synthetic prompt."""
    source = SyntheticSource(
        model="assay-mock",
        endpoint=Endpoint.chat,
        prompt_tokens=FixedCount(value=32),
        output_tokens=FixedCount(value=16),
    )
    handler = handler_for(Endpoint.chat)
    requests = [source.request(index) for index in range(COUNT)]
    records = typical_records(COUNT)
    with (
        tempfile.TemporaryDirectory() as work,
        RecordWriter(Path(work) / "records.jsonl") as writer,
    ):
        record_ns = best_ns_per_call(lambda index: writer.write(records[index]))
    figures = {
        "synthetic_request_ns": best_ns_per_call(source.request),
        "request_body_ns": best_ns_per_call(
            lambda index: orjson.dumps(handler.build_body(requests[index]))
        ),
        "record_line_ns": record_ns,
    }
    tokenizer = BuiltinTokenizer()
    rng = random.Random(0)
    for n_tokens, label in ((8_192, "8k"), (32_768, "32k")):
        prompt = partial(tokenizer.sample_text, n_tokens, rng)
        per_prompt = best_ns_per_call(lambda _: prompt(), count=200)  # noqa: B023 (called here)
        figures[f"prompt_ns_per_token_{label}"] = round(per_prompt / n_tokens, 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
