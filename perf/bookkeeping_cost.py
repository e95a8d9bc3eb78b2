"""CPU per request of the bookkeeping around each request: its deadline timer, the timeline's
buckets, the concurrency cells, the tokens-by-second count, and building a synthetic request
with its random stream.

Run with `python -m perf.bookkeeping_cost`; prints one JSON object of nanoseconds per call
(process CPU, best of several rounds), each on a 16-token streamed chat answer.
"""

from __future__ import annotations

import asyncio
import json

from assay import Completed, Endpoint, ResponseTiming
from assay.testing.bench import (
    ConcurrencyTracker,
    DeadlineWatch,
    FixedCount,
    RequestRecord,
    SyntheticSource,
    Timeline,
    Timeouts,
    add_arrivals,
    index_rng,
)
from perf.dispatch_cost import completed_chat
from perf.request_costs import best_ns_per_call


async def _deadline_ns() -> float:
    """One request's watch: made, armed and stopped, as the backend does around an exchange."""
    loop = asyncio.get_running_loop()
    timeouts = Timeouts()
    task = asyncio.current_task()
    assert task is not None

    def watch(_: int) -> None:
        made = DeadlineWatch(timeouts, loop)
        made.start(task)
        made.stop()

    return best_ns_per_call(watch)


def main() -> None:
    """Print ns per call of each unit."""
    # The 16 one-token chunks 20 µs apart, a second into the step, as a streamed answer brings.
    origin = 10**9
    chunks = tuple(origin + 50_000 + 20_000 * i for i in range(16))
    timing = ResponseTiming(
        send_ns=origin,
        first_token_ns=chunks[0],
        last_token_ns=chunks[-1],
        end_ns=chunks[-1] + 1_000,
        chunk_times_ns=chunks,
        chunk_tokens=(1,) * len(chunks),
    )
    response = completed_chat().model_copy(update={"timing": timing})
    record = RequestRecord(
        request_id=response.request_id,
        targeted_start_ns=origin,
        dispatched_ns=origin,
        finished_ns=timing.end_ns,
        outcome=Completed(response=response),
    )
    timeline = Timeline(origin_ns=origin)
    tracker = ConcurrencyTracker()
    buckets: dict[int, int] = {}
    source = SyntheticSource(
        model="assay-mock",
        endpoint=Endpoint.chat,
        prompt_tokens=FixedCount(value=32),
        output_tokens=FixedCount(value=16),
    )
    figures = {
        "deadline_watch_ns": asyncio.run(_deadline_ns()),
        "timeline_add_ns": best_ns_per_call(lambda _: timeline.add(record)),
        "concurrency_add_ns": best_ns_per_call(
            lambda i: tracker.add(origin + i * 1_000, origin + i * 1_000 + 500_000)
        ),
        "arrivals_ns": best_ns_per_call(
            lambda _: add_arrivals(buckets, origin, timing, response.output_tokens, True)
        ),
        "synthetic_request_ns": best_ns_per_call(source.request),
        "index_rng_ns": best_ns_per_call(lambda i: index_rng(0, i)),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
