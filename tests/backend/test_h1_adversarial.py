"""The HTTP/1.1 transport against servers that misbehave on purpose: bytes after the answer in
the same read, compressed bodies that expand past `--max-response-bytes`, heads that never end,
and a connection the server closed before the request was written."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc

import pytest

from assay.backend import BackendSettings, Timeouts, open_backend
from assay.core import DiagnosticCode, MonotonicClock
from assay.h1.connection import FaultKind, H1Connection, WireFault
from tests.backend.backend_loopback import chat_chunk, chat_request
from tests.backend.test_h1_transport import (
    JSON_BODY,
    STREAM,
    Answer,
    head,
    serve_kept_alive,
    text_of,
)
from tests.backend.test_transport_faults import failure_of, resolve_once

QUICK = Timeouts(connect_s=2.0, first_token_s=10.0, idle_s=10.0, total_s=10.0)


def json_answer(status: int = 200, body: bytes = JSON_BODY) -> bytes:
    return head(status, "application/json", content_length=str(len(body))) + body


async def test_a_second_answer_in_the_same_read_is_not_read_into_the_first() -> None:
    async def two_answers(request_head: str, writer: asyncio.StreamWriter) -> None:
        # A whole answer, then another nobody asked for, in one write.
        writer.write(json_answer() + json_answer(500, b'{"error":"late"}'))

    async with (
        serve_kept_alive(two_answers) as server,
        open_backend(BackendSettings(base_url=server.url), MonotonicClock()) as backend,
    ):
        first = await backend.resolve(chat_request("r0", stream=False))
        second = await backend.resolve(chat_request("r1", stream=False))
    assert text_of(first) == "Rivers run."
    assert text_of(second) == "Rivers run."
    # The connection that carried the unasked answer is spent, not pooled.
    assert server.connections == 2


async def test_a_half_answer_after_the_answer_does_not_leave_the_connection_pooled() -> None:
    async def trailing_head(request_head: str, writer: asyncio.StreamWriter) -> None:
        writer.write(json_answer() + b"HTTP/1.1 200 OK\r\nContent-Le")

    async with (
        serve_kept_alive(trailing_head) as server,
        open_backend(BackendSettings(base_url=server.url), MonotonicClock()) as backend,
    ):
        results = [await backend.resolve(chat_request(f"r{i}", stream=False)) for i in range(2)]
    assert [text_of(result) for result in results] == ["Rivers run."] * 2
    assert server.connections == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_gzip_bomb_is_too_large_without_being_inflated(stream: bool) -> None:
    limit = 1 << 20
    bomb = gzip.compress(b"\0" * (256 << 20), 1)  # ~250 KB that inflate to 256 MB

    async def inflating(request_head: str, writer: asyncio.StreamWriter) -> None:
        content_type = "text/event-stream" if stream else "application/json"
        writer.write(
            head(200, content_type, content_encoding="gzip", content_length=str(len(bomb))) + bomb
        )

    async with serve_kept_alive(inflating) as server:
        settings = BackendSettings(base_url=server.url, max_response_bytes=limit, timeouts=QUICK)
        tracemalloc.start()
        try:
            result = await resolve_once(settings, stream=stream)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert failure_of(result).code is DiagnosticCode.response_too_large
    # The limit, plus what one read of compressed bytes may still inflate to, not 256 MB.
    assert peak < 24 * limit


async def test_head_that_never_ends_is_malformed_before_it_piles_up() -> None:
    async def endless_header(request_head: str, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nX-Pad: ")
        for _ in range(64):
            writer.write(b"a" * (64 << 10))
            await writer.drain()
        await asyncio.sleep(30)  # the head never ends; only the deadline would stop it

    async with serve_kept_alive(endless_header) as server:
        settings = BackendSettings(base_url=server.url, timeouts=QUICK)
        result = await asyncio.wait_for(resolve_once(settings, stream=False), 5)
    unusable = failure_of(result)
    assert unusable.code is DiagnosticCode.malformed_http
    assert "head" in unusable.message


async def test_endless_trailer_after_the_last_chunk_is_malformed() -> None:
    async def endless_trailer(request_head: str, writer: asyncio.StreamWriter) -> None:
        writer.write(
            head(200, "application/json", transfer_encoding="chunked")
            + f"{len(JSON_BODY):x}\r\n".encode()
            + JSON_BODY
            + b"\r\n0\r\nX-Trailer: "
        )
        for _ in range(64):
            writer.write(b"a" * (64 << 10))
            await writer.drain()
        await asyncio.sleep(30)

    async with serve_kept_alive(endless_trailer) as server:
        settings = BackendSettings(base_url=server.url, timeouts=QUICK)
        result = await asyncio.wait_for(resolve_once(settings, stream=False), 5)
    assert failure_of(result).code is DiagnosticCode.malformed_http


async def test_request_on_a_connection_closed_meanwhile_fails_as_closed() -> None:
    loop = asyncio.get_running_loop()
    connection = H1Connection(lambda: 0, frozenset())

    class Transport(asyncio.Transport):
        def write(self, data: bytes | bytearray | memoryview) -> None:
            raise AssertionError("nothing is written on a closed connection")

    connection.connection_made(Transport())
    connection.connection_lost(None)  # the server closed it before the request went out

    class Reader:
        def on_head(self, status: int, reason: str, headers: dict[str, str], at: int) -> bool:
            raise AssertionError

        def on_body(self, chunk: bytes, received_ns: int) -> bool:
            raise AssertionError

    waiter = connection.request(b"POST / HTTP/1.1\r\n\r\n", Reader())
    with pytest.raises(WireFault) as raised:
        await asyncio.wait_for(waiter, 1)
    assert raised.value.kind is FaultKind.closed_before_response
    assert loop.is_running()


def hang_first(release: asyncio.Event) -> Answer:
    """The first request gets a head and one event, then silence until `release` (and a close);
    the others get the whole stream."""
    calls = 0

    async def answer(request_head: str, writer: asyncio.StreamWriter) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            writer.write(head(transfer_encoding="chunked") + chunk(chat_chunk("Rivers")))
            await writer.drain()
            await release.wait()
            writer.close()
            return
        writer.write(head(content_length=str(len(STREAM))) + STREAM)

    return answer


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def test_a_cancelled_request_gives_back_its_place_and_not_its_connection() -> None:
    release = asyncio.Event()
    async with serve_kept_alive(hang_first(release)) as server:
        settings = BackendSettings(base_url=server.url, max_connections=1, timeouts=QUICK)
        async with open_backend(settings, MonotonicClock()) as backend:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(backend.resolve(chat_request("cut")), 0.3)
            # The pool's one place is free again, and the half-read connection is not reused.
            after = await asyncio.wait_for(backend.resolve(chat_request("next")), 5)
        release.set()
    assert text_of(after) == "Rivers run"
    assert server.connections == 2


async def test_a_deadline_mid_body_does_not_pool_the_connection() -> None:
    release = asyncio.Event()
    quiet = Timeouts(connect_s=2.0, first_token_s=5.0, idle_s=0.2, total_s=5.0)
    async with serve_kept_alive(hang_first(release)) as server:
        settings = BackendSettings(base_url=server.url, max_connections=1, timeouts=quiet)
        async with open_backend(settings, MonotonicClock()) as backend:
            cut = await backend.resolve(chat_request("cut"))
            after = await asyncio.wait_for(backend.resolve(chat_request("next")), 5)
        release.set()
    assert failure_of(cut).code is DiagnosticCode.timeout_idle
    assert text_of(after) == "Rivers run"
    assert server.connections == 2


async def test_a_waiter_cancelled_in_the_pool_queue_does_not_keep_a_place() -> None:
    release = asyncio.Event()
    async with serve_kept_alive(hang_first(release)) as server:
        settings = BackendSettings(base_url=server.url, max_connections=1, timeouts=QUICK)
        async with open_backend(settings, MonotonicClock()) as backend:
            busy = asyncio.create_task(backend.resolve(chat_request("busy")))
            await asyncio.sleep(0.1)
            waiting = asyncio.create_task(backend.resolve(chat_request("waiting")))
            await asyncio.sleep(0.05)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            release.set()
            busy_result = await asyncio.wait_for(busy, 5)
            after = await asyncio.wait_for(backend.resolve(chat_request("after")), 5)
    # The busy request's body never ended (its server went quiet, then closed).
    assert failure_of(busy_result).code is DiagnosticCode.stream_interrupted
    assert text_of(after) == "Rivers run"


@pytest.mark.parametrize(
    "rest",
    [
        b"Content-Length: 100\r\n\r\n" + b'{"error": "over',  # cut by the close
        b"Transfer-Encoding: chunked\r\n\r\nf\r\n" + b'{"error": "over' + b"\r\nzz\r\n",
    ],
    ids=["cut", "bad-chunk"],
)
async def test_an_error_status_whose_body_breaks_is_still_the_status(rest: bytes) -> None:
    async def failing(request_head: str, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n")
        writer.write(rest)
        await writer.drain()
        writer.close()

    async with serve_kept_alive(failing) as server:
        result = await resolve_once(BackendSettings(base_url=server.url, timeouts=QUICK))
    unusable = failure_of(result)
    assert unusable.code is DiagnosticCode.http_status
    assert unusable.evidence.http_status == 503
    assert "over" in (unusable.evidence.excerpt or "")


async def test_bytes_after_the_terminal_marker_are_bounded_too() -> None:
    limit = 1 << 20

    async def flood(request_head: str, writer: asyncio.StreamWriter) -> None:
        writer.write(head(transfer_encoding="chunked") + chunk(STREAM))
        await writer.drain()
        for _ in range(96):  # 48 MB of one line that never ends, after [DONE]
            writer.write(chunk(b"x" * (512 << 10)))
            await writer.drain()
        writer.write(b"0\r\n\r\n")

    async with serve_kept_alive(flood) as server:
        settings = BackendSettings(base_url=server.url, max_response_bytes=limit, timeouts=QUICK)
        tracemalloc.start()
        try:
            result = await resolve_once(settings)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert text_of(result) == "Rivers run"  # the answer ended at [DONE]
    # The limit plus a few reads (uvloop reads up to 1 MB at once), not the 48 MB sent.
    assert peak < 12 * limit


@pytest.mark.parametrize(
    "reply", [None, b"HTTP/1.1 400 Bad Request\r\n\r\n"], ids=["mute", "plain"]
)
async def test_a_tls_handshake_that_hangs_or_fails_is_a_connect_outcome(
    reply: bytes | None,
) -> None:
    done = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def not_tls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await reader.read(1)  # the ClientHello
        if reply is not None:
            writer.write(reply)
            await writer.drain()
        await done.wait()

    server = await asyncio.start_server(not_tls, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    timeouts = Timeouts(connect_s=0.3, first_token_s=5.0, idle_s=5.0, total_s=5.0)
    try:
        settings = BackendSettings(base_url=f"https://127.0.0.1:{port}", timeouts=timeouts)
        result = await asyncio.wait_for(resolve_once(settings), 4)
    finally:
        done.set()
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)
    code = failure_of(result).code
    assert code is (
        DiagnosticCode.timeout_connect if reply is None else DiagnosticCode.connect_error
    )
