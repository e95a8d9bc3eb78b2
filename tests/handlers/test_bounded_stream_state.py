"""What an answer in flight keeps is bounded by its text, not by its chunk count (issue 37.12:
an endless stream cost ~33 MB while it lasted, 1 GB at 32 in flight). Each streamed piece was
kept as its own string, about 60 bytes of object for a few characters; the pieces are joined
when the chunk times are folded, so the kept state is about a byte a character of text plus at
most `MAX_KEPT_CHUNK_TIMES` loose pieces and chunk times."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest

from assay.core import Endpoint, GenerationRequest
from assay.core.response import MAX_KEPT_CHUNK_TIMES
from assay.handlers import SseParser, Transfer, handler_for
from tests.handlers.handler_results import fault, ok

CHAT = GenerationRequest(
    request_id="r", endpoint=Endpoint.chat, model="m", messages=({"role": "user", "content": "x"},)
)
CHUNKS = 12 * MAX_KEPT_CHUNK_TIMES  # 196,608 chunks: ~32 MiB of body, 983,040 characters
# The kept state's bound: the text itself (ASCII, a byte a character) and, at most, the loose
# pieces and chunk times between two folds (each under 150 bytes). Kept one string a piece,
# the same stream held 13.0 MB.
BOUND = 5 * CHUNKS + 2 * MAX_KEPT_CHUNK_TIMES * 150


def _frame(body: dict[str, object]) -> bytes:
    return b"data: " + orjson.dumps(body) + b"\n\n"


def _content(piece: str) -> dict[str, object]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
    }


def _reasoning(piece: str) -> dict[str, object]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"reasoning_content": piece, "content": None}}],
    }


@pytest.mark.parametrize("kind", ["content", "reasoning"])
@pytest.mark.parametrize("ending", [b"data: [DONE]\n\n", b"event: error\ndata: {}\n\n"])
def test_an_endless_stream_keeps_about_its_text_not_an_object_per_chunk(
    kind: str, ending: bytes
) -> None:
    one = _frame(_content("word ") if kind == "content" else _reasoning("word "))
    accumulator = handler_for(Endpoint.chat).open_accumulator(CHAT, send_ns=0)
    parser = SseParser()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        now = 0
        for _ in range(CHUNKS):
            for event in parser.feed(one):
                now += 1_000
                accumulator.feed(event, now)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < BOUND, f"{kept:,} bytes kept over {CHUNKS:,} chunks"
    # The verdict and the answer are those of the stream kept piece by piece.
    for event in parser.feed(ending):
        accumulator.feed(event, now)
    result = accumulator.finish(Transfer(send_ns=0, end_ns=now + 1_000))
    response = ok(result) if b"DONE" in ending else fault(result).evidence.partial
    assert response is not None
    answer = response.text if kind == "content" else response.reasoning
    assert answer == "word " * CHUNKS
    assert response.streamed_tokens == CHUNKS
