"""Hostile answers over loopback: bounded memory, protocol errors named as such, request ids any
server accepts, and drops described in words (issues 8 and 9)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiohttp import web
from pydantic import SecretStr

from assay.backend import BackendSettings, Timeouts, check_ready, open_backend, wire_request_id
from assay.core import DiagnosticCode, MonotonicClock, Stage, stage_of
from assay.errors import ServerNotReady
from tests.backend.backend_loopback import (
    API_KEY,
    chat_chunk,
    chat_request,
    http_chunk,
    response_head,
    serve_raw,
)
from tests.backend.test_transport_faults import failure_of, resolve_once

SHORT = Timeouts(connect_s=2.0, first_token_s=5.0, idle_s=5.0, total_s=10.0)
SMALL_LIMIT = 64 * 1024
# Hostile servers stop by themselves after this much, so a client that does not stop is slow
# to fail, never endless.
HOSTILE_BOUND = 8 * 1024 * 1024


def limited(url: str, limit: int = SMALL_LIMIT) -> BackendSettings:
    return BackendSettings(
        base_url=url, api_key=SecretStr(API_KEY), timeouts=SHORT, max_response_bytes=limit
    )


async def endless_stream(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head(200))
    sent = 0
    while sent < HOSTILE_BOUND and not release.is_set():
        frame = http_chunk(chat_chunk("word "))
        writer.write(frame)
        sent += len(frame)
        await writer.drain()


async def test_endless_stream_is_response_too_large_with_a_capped_partial() -> None:
    async with serve_raw(endless_stream) as server:
        unusable = failure_of(await resolve_once(limited(server.url)))
    assert unusable.code is DiagnosticCode.response_too_large
    assert str(SMALL_LIMIT) in unusable.message
    partial = unusable.evidence.partial
    assert partial is not None
    assert partial.streamed_tokens > 0
    assert len(partial.text) <= SMALL_LIMIT


async def endless_line(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head(200) + http_chunk(b'data: {"choices": "'))
    sent = 0
    while sent < HOSTILE_BOUND and not release.is_set():
        writer.write(http_chunk(b"x" * 16384))
        sent += 16384
        await writer.drain()


async def test_sse_line_that_never_ends_is_response_too_large() -> None:
    async with serve_raw(endless_line) as server:
        unusable = failure_of(await resolve_once(limited(server.url)))
    assert unusable.code is DiagnosticCode.response_too_large


async def huge_body(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head(200, "application/json", HOSTILE_BOUND))
    sent = 0
    while sent < HOSTILE_BOUND and not release.is_set():
        writer.write(b" " * 65536)
        sent += 65536
        await writer.drain()


async def test_huge_json_body_is_response_too_large() -> None:
    async with serve_raw(huge_body) as server:
        unusable = failure_of(await resolve_once(limited(server.url), stream=False))
    assert unusable.code is DiagnosticCode.response_too_large
    assert unusable.evidence.excerpt is not None
    assert len(unusable.evidence.excerpt) < 4096


async def test_huge_model_list_is_refused_without_reading_it_all() -> None:
    async with serve_raw(huge_body) as server:
        with pytest.raises(ServerNotReady, match="more than 65536 bytes"):
            await check_ready(limited(server.url))


def test_new_codes_have_their_stages() -> None:
    assert stage_of(DiagnosticCode.response_too_large) is Stage.transport
    assert stage_of(DiagnosticCode.malformed_http) is Stage.protocol


async def brotli_body(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: br\r\n"
        b"Content-Length: 10\r\n\r\n\x8b\x03\x80abcdefg"
    )
    await writer.drain()


async def zstd_stream(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: zstd\r\n"
        b"Content-Length: 10\r\n\r\n(\xb5/\xfdabcdef"
    )
    await writer.drain()


async def bad_chunk_size(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head(200) + b"zz\r\nabc\r\n")
    await writer.drain()


@pytest.mark.parametrize(
    ("script", "words"),
    [(brotli_body, "brotli"), (zstd_stream, "zstandard"), (bad_chunk_size, "chunk size")],
)
async def test_unreadable_200_is_malformed_http_not_connect_error(
    script: object, words: str
) -> None:
    async with serve_raw(script) as server:  # type: ignore[arg-type]  # a Script, parametrized
        unusable = failure_of(await resolve_once(limited(server.url)))
    assert unusable.code is DiagnosticCode.malformed_http
    assert words in unusable.message.lower()
    assert "400" not in unusable.message.replace(server.url, "URL")  # the port may hold 400


async def cut_chunked_stream(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head(200) + http_chunk(chat_chunk("Rivers")))
    await writer.drain()
    # Returning closes the connection cleanly (FIN) before the chunked body's last chunk.


async def test_dropped_chunked_stream_says_what_happened_without_a_fake_400() -> None:
    async with serve_raw(cut_chunked_stream) as server:
        unusable = failure_of(await resolve_once(limited(server.url)))
    assert unusable.code is DiagnosticCode.stream_interrupted
    assert "400" not in unusable.message.replace(server.url, "URL")  # the port may hold 400
    assert "TransferEncodingError" not in unusable.message
    assert "closed the connection before the last chunk" in unusable.message


async def short_body(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head(200, "application/json", 100) + b'{"id": "x",')
    await writer.drain()


async def test_body_shorter_than_its_length_is_stream_interrupted_in_words() -> None:
    async with serve_raw(short_body) as server:
        unusable = failure_of(await resolve_once(limited(server.url), stream=False))
    assert unusable.code is DiagnosticCode.stream_interrupted
    assert "before the end of the body" in unusable.message
    assert "400" not in unusable.message.replace(server.url, "URL")  # the port may hold 400


async def uuid_only_server(ids: list[str]) -> web.AppRunner:
    """Like llama-cpp-python's request-id middleware: a present id that is no UUID is a 400."""

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        sent = request.headers.get("X-Request-Id")
        if sent is not None:
            ids.append(sent)
            try:
                uuid.UUID(sent)
            except ValueError:
                return web.Response(status=400)
        return web.json_response(
            {
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "Rivers run."},
                     "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        )  # fmt: skip

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    return runner


async def serve_uuid_only(ids: list[str]) -> tuple[web.AppRunner, str]:
    runner = await uuid_only_server(ids)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started
    return runner, f"http://127.0.0.1:{port}"


async def test_server_that_wants_uuid_request_ids_accepts_assay_ids() -> None:
    ids: list[str] = []
    runner, url = await serve_uuid_only(ids)
    try:
        async with open_backend(BackendSettings(base_url=url), MonotonicClock()) as backend:
            result = await backend.resolve(chat_request("req-00000007", stream=False))
    finally:
        await runner.cleanup()
    assert result.unwrap().text == "Rivers run."
    assert ids == [wire_request_id("req-00000007")]
    assert result.unwrap().request_id == "req-00000007"  # assay's own id stays in the record


async def test_request_id_header_can_be_renamed_or_turned_off() -> None:
    async def answer(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(404, "application/json", 2) + b"{}")
        await writer.drain()

    async with serve_raw(answer) as server:
        renamed = BackendSettings(base_url=server.url, request_id_header="X-Correlation-Id")
        off = BackendSettings(base_url=server.url, request_id_header=None)
        await resolve_once(renamed)
        await resolve_once(off)
    first, second = (head.lower() for head in server.heads)
    assert f"x-correlation-id: {wire_request_id('r1')}" in first
    assert "x-request-id" not in first
    assert "x-request-id" not in second
    assert wire_request_id("r1") not in second


def test_wire_request_ids_are_uuids_and_reproducible() -> None:
    assert uuid.UUID(wire_request_id("req-00000001")).version == 5
    assert wire_request_id("req-00000001") == wire_request_id("req-00000001")
    assert wire_request_id("req-00000001") != wire_request_id("req-00000002")
