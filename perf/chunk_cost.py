"""Nanoseconds per SSE chunk for parse + accumulate, on vLLM-style chat and completions streams.

Run with `python -m perf.chunk_cost`; prints one JSON object. Each figure is the best of
several rounds (the least disturbed by other work on the machine) of parsing a whole stream in
network-sized pieces, feeding every event to a fresh accumulator and compiling the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson
from pydantic import JsonValue

from assay import Endpoint, GenerationRequest
from assay.testing.bench import SseParser, StreamAccumulator, Transfer, handler_for

_ROUNDS = 5
_TARGET_CHUNKS = 40_000  # per round, so each round takes tens of milliseconds
_PIECE = 1_024  # bytes per network read


def _chat_chunk(delta: dict[str, JsonValue], finish: str | None = None) -> bytes:
    return _frame({"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish})


def _completion_chunk(text: str, finish: str | None = None) -> bytes:
    return _frame({"index": 0, "text": text, "logprobs": None, "finish_reason": finish})


def _frame(choice: dict[str, JsonValue]) -> bytes:
    chunk = {
        "id": "chatcmpl-a8e0",
        "object": "chat.completion.chunk",
        "created": 1796201699,
        "model": "tiny-llama",
        "choices": [{**choice, "stop_reason": None, "token_ids": None}],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _tail() -> bytes:
    usage = {"prompt_tokens": 21, "total_tokens": 24, "completion_tokens": 3}
    return b"data: " + orjson.dumps({"choices": [], "usage": usage}) + b"\n\ndata: [DONE]\n\n"


def chat_stream(tokens: int) -> bytes:
    """A vLLM chat stream: role chunk, `tokens` content chunks, usage chunk, `[DONE]`."""
    body = [_chat_chunk({"role": "assistant", "content": ""})]
    body += [_chat_chunk({"content": " tok"}) for _ in range(tokens - 1)]
    body.append(_chat_chunk({"content": " end"}, "length"))
    return b"".join(body) + _tail()


def completions_stream(tokens: int) -> bytes:
    """A vLLM completions stream: `tokens` text chunks, usage chunk, `[DONE]`."""
    body = [_completion_chunk(" tok") for _ in range(tokens - 1)]
    body.append(_completion_chunk(" end", "length"))
    return b"".join(body) + _tail()


def _run_once(open_accumulator: Callable[[], StreamAccumulator], pieces: list[bytes]) -> int:
    parser = SseParser()
    accumulator = open_accumulator()
    events = 0
    for read, piece in enumerate(pieces):
        frames = parser.feed(piece)
        accumulator.feed_all(frames, read)
        events += len(frames)
    frames = parser.close()
    accumulator.feed_all(frames, len(pieces))
    events += len(frames)
    accumulator.finish(Transfer(send_ns=0, end_ns=len(pieces)))
    return events


def chunk_cost_ns(endpoint: Endpoint, raw: bytes) -> float:
    """Best-of-rounds nanoseconds per SSE event for one stream, parse + accumulate + finish."""
    request = GenerationRequest(request_id="b", endpoint=endpoint, model="tiny-llama", prompt="p")
    handler = handler_for(endpoint)
    pieces = [raw[i : i + _PIECE] for i in range(0, len(raw), _PIECE)]

    def open_accumulator() -> StreamAccumulator:
        return handler.open_accumulator(request, 0)

    per_stream = _run_once(open_accumulator, pieces)
    streams = max(1, _TARGET_CHUNKS // per_stream)
    best = float("inf")
    for _ in range(_ROUNDS):
        start = time.process_time_ns()
        for _ in range(streams):
            _run_once(open_accumulator, pieces)
        best = min(best, (time.process_time_ns() - start) / (streams * per_stream))
    return best


def main() -> None:
    """Print the per-chunk cost of each accumulator at 16 and 256 tokens per response."""
    figures: dict[str, float] = {}
    for tokens in (16, 256):
        chat = chunk_cost_ns(Endpoint.chat, chat_stream(tokens))
        completions = chunk_cost_ns(Endpoint.completions, completions_stream(tokens))
        figures[f"chat_{tokens}_tokens_ns_per_chunk"] = round(chat)
        figures[f"completions_{tokens}_tokens_ns_per_chunk"] = round(completions)
    print(orjson.dumps(figures, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
