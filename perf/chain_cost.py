"""Cost of applying each default validator chain to a typical completed chat response.

Run with `python -m perf.chain_cost`; prints one JSON object of ns per response (best of
several repeats) for the non-strict and strict chains, plus a bare 5-validator `.bind` chain as
the baseline the design cites.
"""

from __future__ import annotations

import json
import platform
import time

from returns.result import Result, Success

from assay import (
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    UnusableResponse,
    Usage,
    Validator,
    chain,
    default_chain,
)
from assay.testing.bench import EmbeddingSummary, RequestEcho, TextAnswer, TokenSource, Vectors

MS = 1_000_000
TOKENS = 64


def typical_chat() -> GenerationResponse:
    """A completed streamed chat answer: 64 one-token chunks, finish_reason, usage, [DONE]."""
    times = tuple(40 * MS + k * 10 * MS for k in range(TOKENS))
    return GenerationResponse(
        request_id="bench-1",
        endpoint=Endpoint.chat,
        streamed=True,
        echo=RequestEcho(max_output_tokens=TOKENS),
        model="tiny-llama",
        answer=TextAnswer(text="The quick brown fox jumps over the lazy dog. " * 6),
        finish_reason="length",
        usage=Usage(prompt_tokens=128, completion_tokens=TOKENS, total_tokens=128 + TOKENS),
        content_chunks=TOKENS,
        streamed_tokens=TOKENS,
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(
            send_ns=0,
            first_byte_ns=times[0],
            first_token_ns=times[0],
            last_token_ns=times[-1],
            end_ns=times[-1] + MS,
            chunk_times_ns=times,
            chunk_tokens=(1,) * TOKENS,
        ),
    )


def typical_embeddings() -> GenerationResponse:
    """A usable embeddings answer: 4 vectors of dimension 384 for 4 inputs."""
    return GenerationResponse(
        request_id="bench-2",
        endpoint=Endpoint.embeddings,
        streamed=False,
        echo=RequestEcho(expected_embeddings=4),
        answer=Vectors(summary=EmbeddingSummary(count=4, dimension=384, all_finite=True)),
        usage=Usage(prompt_tokens=40, total_tokens=40),
        timing=ResponseTiming(send_ns=0, end_ns=5 * MS),
    )


def _accept(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    return Success(response)


def ns_per_response(
    validate: Validator[GenerationResponse],
    response: GenerationResponse,
    count: int,
    repeats: int,
) -> float:
    """Best-of-`repeats` mean cost of one application, in nanoseconds."""
    assert isinstance(validate(response), Success), "the benchmark response must pass the chain"
    best = None
    for _ in range(repeats):
        started = time.process_time_ns()
        for _ in range(count):
            validate(response)
        elapsed = time.process_time_ns() - started
        best = elapsed if best is None else min(best, elapsed)
    assert best is not None
    return round(best / count, 1)


def main(count: int = 50_000, repeats: int = 5) -> None:
    chat = typical_chat()
    figures = {
        "chat_default_ns": ns_per_response(default_chain(Endpoint.chat), chat, count, repeats),
        "chat_strict_ns": ns_per_response(
            default_chain(Endpoint.chat, strict=True), chat, count, repeats
        ),
        "embeddings_default_ns": ns_per_response(
            default_chain(Endpoint.embeddings), typical_embeddings(), count, repeats
        ),
        "baseline_5_accepting_binds_ns": ns_per_response(
            chain(*[_accept] * 5), chat, count, repeats
        ),
    }
    print(
        json.dumps(
            {
                "responses_per_repeat": count,
                "repeats": repeats,
                "python": platform.python_version(),
                **figures,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
