"""The learned-chunk fast path on the wire: a later chunk that keeps the learned chunk's bytes
around a piece of the same length but changes `finish_reason` or adds `usage` is parsed, never
read as the learned chunk with another piece."""

from __future__ import annotations

import asyncio

import orjson
from returns.result import Success

from assay.backend import BackendSettings
from assay.core import outcome
from assay.handlers.choice_stream import _delta_piece, _put_delta_piece
from assay.handlers.chunk_template import ChunkTemplate
from tests.backend.backend_loopback import chat_chunk
from tests.backend.test_h1_transport import head, serve_kept_alive
from tests.backend.test_transport_faults import resolve_once

USAGE = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}


def frame_of(event: bytes) -> bytes:
    return event.removeprefix(b"data: ").rstrip(b"\n")


def with_usage(content: str, finish_reason: str) -> bytes:
    chunk = orjson.loads(frame_of(chat_chunk(content, finish_reason)))
    chunk["usage"] = USAGE
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def learned() -> ChunkTemplate:
    frame = frame_of(chat_chunk("Rivers"))
    template = ChunkTemplate.learn(
        frame, orjson.loads(frame), "Rivers", _delta_piece, _put_delta_piece
    )
    assert template is not None
    return template


def piece(template: ChunkTemplate, frame: bytes) -> str | None:
    """The piece `template` reads from `frame` alone, or None."""
    found = template.pieces([frame], 0, 1)
    return found[0] if found else None


def test_a_chunk_whose_bytes_around_the_piece_differ_is_not_read_by_the_template() -> None:
    template = learned()
    assert piece(template, frame_of(chat_chunk(" run"))) == " run"
    # Same piece, another finish reason or a usage: other bytes around it, so parsed.
    assert piece(template, frame_of(chat_chunk(" run", "stop"))) is None
    assert piece(template, frame_of(with_usage(" run", "stop"))) is None
    # A "piece" that would close the string and rewrite the tail is never plain.
    plain = frame_of(chat_chunk("x"))
    at = plain.index(b'"x"') + 1
    forged = plain[:at] + b'x"},"finish_reason":"length","delta":{"content":"y' + plain[at + 1 :]
    assert piece(template, forged) is None


async def test_finish_reason_and_usage_after_learned_chunks_are_counted() -> None:
    events = [chat_chunk("Rivers"), chat_chunk(" run"), chat_chunk(" on")]
    events += [with_usage(".", "length"), b"data: [DONE]\n\n"]
    body = b"".join(events)

    async def answer(request_head: str, writer: asyncio.StreamWriter) -> None:
        writer.write(head(content_length=str(len(body))) + body)

    async with serve_kept_alive(answer) as server:
        result = await resolve_once(BackendSettings(base_url=server.url))
    match outcome(result):
        case Success(response):
            assert response.text == "Rivers run on."
            assert response.finish_reason == "length"
            assert response.usage is not None
            assert response.usage.completion_tokens == 4
        case _:
            raise AssertionError(result)
