"""After `[DONE]` nothing is part of the answer (issue 9): trailing chunks are ignored and
counted, and a server that holds the connection open after `[DONE]` does not time the answer
out. Also: invalid UTF-8 is invalid_json in a stream as in a body. Real loopback sockets."""

from __future__ import annotations

import asyncio

from pydantic import SecretStr
from returns.result import Failure, Success

from assay.backend import BackendSettings, Timeouts, open_backend
from assay.core import DiagnosticCode, GenerationResponse, MonotonicClock, outcome
from assay.records import Completed, Errored, RequestRecord
from assay.testing import FakeClock
from assay.validators import default_chain
from assay.worker import execute
from tests.backend.backend_loopback import (
    API_KEY,
    chat_chunk,
    chat_request,
    http_chunk,
    response_head,
    serve_raw,
)

DONE = b"data: [DONE]\n\n"


def settings_for(url: str, timeouts: Timeouts) -> BackendSettings:
    return BackendSettings(base_url=url, api_key=SecretStr(API_KEY), timeouts=timeouts)


async def record_once(
    url: str, timeouts: Timeouts, stream: bool = True
) -> RequestRecord[GenerationResponse]:
    """One request through the backend, the default chain and the worker."""
    request = chat_request(stream=stream)
    async with open_backend(settings_for(url, timeouts), MonotonicClock()) as backend:
        return await execute(
            request,
            request_id=request.request_id,
            resolve=backend.resolve,
            validate=default_chain(request.endpoint),
            clock=FakeClock(start_ns=1_000),
            targeted_start_ns=0,
            sink=lambda record: None,
        )


def completed(record: RequestRecord[GenerationResponse]) -> GenerationResponse:
    assert isinstance(record.outcome, Completed), record.outcome
    return record.outcome.response


async def done_then_hold_open(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head())
    writer.write(http_chunk(chat_chunk("Rivers")))
    writer.write(http_chunk(chat_chunk(" run", "length")))
    writer.write(http_chunk(DONE))
    await writer.drain()
    await release.wait()  # never ends the chunked body


async def test_done_then_connection_held_open_is_completed_not_timeout_idle() -> None:
    async with serve_raw(done_then_hold_open) as server:
        timeouts = Timeouts(first_token_s=5.0, idle_s=1.0, total_s=5.0)
        response = completed(await record_once(server.url, timeouts))
    assert response.text == "Rivers run"
    assert response.streamed_tokens == 2
    assert response.terminal_seen
    # The answer ends at [DONE], not when the connection was cut.
    assert response.timing.end_ns == response.timing.last_token_ns


async def test_done_then_held_open_past_a_short_idle_deadline_is_still_completed() -> None:
    # The idle deadline (0.05 s) passes before the wait for the body's end does.
    async with serve_raw(done_then_hold_open) as server:
        timeouts = Timeouts(first_token_s=5.0, idle_s=0.05, total_s=5.0)
        response = completed(await record_once(server.url, timeouts))
    assert response.text == "Rivers run"


async def done_then_fifty_chunks(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head())
    writer.write(http_chunk(chat_chunk("Rivers")))
    writer.write(http_chunk(chat_chunk(" run", "stop")))
    writer.write(http_chunk(DONE))
    for _ in range(50):
        writer.write(http_chunk(chat_chunk(" more")))
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def test_chunks_after_done_are_ignored_and_counted() -> None:
    async with serve_raw(done_then_fifty_chunks) as server:
        timeouts = Timeouts(first_token_s=5.0, idle_s=5.0, total_s=5.0)
        response = completed(await record_once(server.url, timeouts))
    assert response.text == "Rivers run"
    assert response.streamed_tokens == 2
    assert response.output_tokens == 2
    assert response.events_after_terminal == 50


async def invalid_utf8_stream(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head())
    writer.write(http_chunk(chat_chunk("Rivers")))
    writer.write(http_chunk(b'data: {"choices":[{"index":0,"delta":{"content":"r\xffn"}}]}\n\n'))
    writer.write(http_chunk(chat_chunk("", "stop") + DONE))
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def invalid_utf8_body(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    body = (
        b'{"choices":[{"index":0,"message":{"role":"assistant","content":"r\xffn"},'
        b'"finish_reason":"stop"}]}'
    )
    writer.write(response_head(200, "application/json", len(body)) + body)
    await writer.drain()


async def test_invalid_utf8_is_invalid_json_in_a_stream_as_in_a_body() -> None:
    timeouts = Timeouts(first_token_s=5.0, idle_s=5.0, total_s=5.0)
    codes = []
    for script, stream in ((invalid_utf8_stream, True), (invalid_utf8_body, False)):
        async with serve_raw(script) as server:
            record = await record_once(server.url, timeouts, stream=stream)
        assert isinstance(record.outcome, Errored), record.outcome
        codes.append(record.outcome.diagnostic.code)
        # The stored record is valid text: the bad byte shows as U+FFFD in the excerpt.
        assert "r\ufffdn" in (record.outcome.diagnostic.evidence.excerpt or "")
        record.model_dump_json()
    assert codes == [DiagnosticCode.invalid_json, DiagnosticCode.invalid_json]


async def test_backend_result_for_trailing_chunks_is_a_success() -> None:
    # The same at the backend's level: a Success, whatever followed [DONE].
    async with serve_raw(done_then_fifty_chunks) as server:
        timeouts = Timeouts(first_token_s=5.0, idle_s=5.0, total_s=5.0)
        async with open_backend(settings_for(server.url, timeouts), MonotonicClock()) as backend:
            result = await backend.resolve(chat_request())
    match outcome(result):
        case Success(response):
            assert response.events_after_terminal == 50
        case Failure(problem):
            raise AssertionError(problem)
