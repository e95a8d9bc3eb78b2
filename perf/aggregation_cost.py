"""Cost of `StepAggregator.add` per record on typical completed 16-token streamed records.

Run with `python -m perf.aggregation_cost`; prints one JSON object.
"""

from __future__ import annotations

import itertools
import json
import time

from assay import Completed, Endpoint, GenerationResponse, ResponseTiming, Usage
from assay.testing.bench import RequestRecord, Slo, StepAggregator, TextAnswer, TokenSource

MS = 1_000_000
TOKENS = 16


def typical_records(count: int) -> list[RequestRecord[GenerationResponse]]:
    """Completed streamed chat answers: 16 one-token chunks ~10 ms apart, usage reported."""
    records = []
    for i in range(count):
        send = i * 5 * MS
        first = send + (40 + i % 17) * MS
        # Gaps of 9 to 12 ms, in order, as a server's chunks arrive.
        gaps = ((9 + (i + k) % 4) * MS for k in range(1, TOKENS))
        times = tuple(itertools.accumulate(gaps, initial=first))
        response = GenerationResponse(
            request_id=f"r{i}",
            endpoint=Endpoint.chat,
            streamed=True,
            answer=TextAnswer(text="x" * TOKENS),
            finish_reason="length",
            usage=Usage(prompt_tokens=128, completion_tokens=TOKENS, total_tokens=128 + TOKENS),
            content_chunks=TOKENS,
            streamed_tokens=TOKENS,
            streamed_token_source=TokenSource.stream,
            terminal_seen=True,
            timing=ResponseTiming(
                send_ns=send,
                first_byte_ns=first,
                first_token_ns=first,
                last_token_ns=times[-1],
                end_ns=times[-1] + MS,
                chunk_times_ns=times,
                chunk_tokens=(1,) * TOKENS,
            ),
        )
        records.append(
            RequestRecord[GenerationResponse](
                request_id=f"r{i}",
                targeted_start_ns=send - MS // 10,
                dispatched_ns=send,
                finished_ns=times[-1] + MS,
                outcome=Completed(response=response),
            )
        )
    return records


def main(count: int = 20_000, repeats: int = 5) -> None:
    records = typical_records(count)
    best_ns = None
    aggregator = StepAggregator()
    for _ in range(repeats):
        aggregator = StepAggregator(slo=Slo(ttft_ms=100, tpot_ms=20))
        started = time.process_time_ns()
        for record in records:
            aggregator.add(record)
        elapsed = time.process_time_ns() - started
        best_ns = elapsed if best_ns is None else min(best_ns, elapsed)
    assert best_ns is not None
    started = time.process_time_ns()
    aggregator.snapshot()
    snapshot_ns = time.process_time_ns() - started
    print(
        json.dumps(
            {
                "records": count,
                "tokens_per_record": TOKENS,
                "repeats": repeats,
                "add_ns_per_record_best": round(best_ns / count),
                "snapshot_ms": round(snapshot_ns / 1e6, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
