"""CPU per request around the network: building a synthetic request, judging its answer, and
one turn of a closed loop that does both against a server that answers at once.

Run with `python -m perf.dispatch_cost`; prints one JSON object of nanoseconds per request
(best of several rounds). The closed-loop turn includes the other two, plus executing the
request, building its record and counting it: what one synchronous stream costs the client
per request when the server takes no time.
"""

from __future__ import annotations

import asyncio
import json
import time

from returns.result import Result, Success

from assay import (
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    ResponseTiming,
    UnusableResponse,
    Usage,
    default_chain,
    judge,
)
from assay.testing.bench import (
    Constraints,
    FixedCount,
    MonotonicClock,
    RequestEcho,
    StepWork,
    Synchronous,
    SyntheticSource,
    TextAnswer,
    TokenSource,
    counting_sink,
    run_step,
)
from perf.request_costs import COUNT, ROUNDS, best_ns_per_call

TOKENS = 16


def completed_chat() -> GenerationResponse:
    """A completed streamed chat answer of 16 one-token chunks, with usage and [DONE]."""
    return GenerationResponse(
        request_id="req-00000000",
        endpoint=Endpoint.chat,
        streamed=True,
        echo=RequestEcho(max_output_tokens=TOKENS),
        model="assay-mock",
        answer=TextAnswer(text="The quick brown fox jumps over the lazy dog again and again"),
        finish_reason="length",
        usage=Usage(prompt_tokens=32, completion_tokens=TOKENS, total_tokens=32 + TOKENS),
        content_chunks=TOKENS,
        streamed_tokens=TOKENS,
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(send_ns=0, first_token_ns=1, last_token_ns=2, end_ns=3),
    )


def source_of(endpoint: Endpoint) -> SyntheticSource:
    return SyntheticSource(
        model="assay-mock",
        endpoint=endpoint,
        prompt_tokens=FixedCount(value=32),
        output_tokens=FixedCount(value=TOKENS),
    )


def closed_loop_ns(count: int = COUNT) -> float:
    """Best-of-rounds nanoseconds per request of one synchronous stream of `count` requests."""
    source = source_of(Endpoint.chat)
    answer: Result[GenerationResponse, UnusableResponse] = Success(completed_chat())

    async def resolve(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
        return answer

    async def one_step() -> int:
        clock = MonotonicClock()
        work = StepWork(
            step=0,
            load=Synchronous(),
            constraints=Constraints(max_requests=count),
            seed=0,
            process=0,
            processes=1,
            start_ns=clock.now_ns(),
        )
        started = time.process_time_ns()
        result = await run_step(
            work,
            source=source,
            resolve=resolve,
            validate=default_chain(Endpoint.chat),
            sink_factory=counting_sink,
            clock=clock,
            stop=asyncio.Event(),
        )
        elapsed = time.process_time_ns() - started
        assert result.summary.completed == count, "every request of the loop must complete"
        return elapsed

    return round(min(asyncio.run(one_step()) for _ in range(ROUNDS)) / count)


def main() -> None:
    """Print ns per synthetic request, per judged answer and per closed-loop turn."""
    chat, completions = source_of(Endpoint.chat), source_of(Endpoint.completions)
    chain = default_chain(Endpoint.chat)
    answer: Result[GenerationResponse, UnusableResponse] = Success(completed_chat())
    assert judge(answer, chain).status == "completed", "the benchmark answer must complete"
    figures = {
        "synthetic_chat_request_ns": best_ns_per_call(chat.request),
        "synthetic_completions_request_ns": best_ns_per_call(completions.request),
        "judge_chat_default_ns": best_ns_per_call(lambda _: judge(answer, chain)),
        "closed_loop_request_ns": closed_loop_ns(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
