"""Every way a loopback server can frame, cut or misframe an answer, two requests each: the
outcome's code, and whether the connection was kept for the second request."""

from __future__ import annotations

import asyncio

import pytest
from returns.result import Failure, Success

from assay.backend import BackendSettings, Timeouts, open_backend
from assay.core import MonotonicClock, outcome
from tests.backend.backend_loopback import chat_chunk, chat_request
from tests.backend.test_h1_transport import JSON_BODY, STREAM

QUICK = Timeouts(connect_s=2.0, first_token_s=3.0, idle_s=3.0, total_s=3.0)
SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
JSON = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
CHUNKED = SSE + b"Transfer-Encoding: chunked\r\n\r\n"
OK = "completed"


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def length(data: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(data)


# name: (what the server writes, then "close", "reset" or "keep"; the outcome; connections)
CASES: dict[str, tuple[bytes, str, str, int]] = {
    "close-mid-head": (b"HTTP/1.1 200 OK\r\nContent-Ty", "close", "connect_error", 2),
    "close-mid-chunk-size": (
        CHUNKED + chunk(chat_chunk("Rivers")) + b"1",
        "close",
        "stream_interrupted",
        2,
    ),
    "close-mid-event": (
        CHUNKED + chunk(chat_chunk("Rivers")) + chunk(b'data: {"id"'),
        "close",
        "stream_interrupted",
        2,
    ),
    "close-after-done-without-last-chunk": (CHUNKED + chunk(STREAM), "close", OK, 2),
    "content-length-longer-then-close": (
        SSE + b"Content-Length: %d\r\n\r\n" % (len(STREAM) + 10) + STREAM,
        "close",
        OK,  # the answer ended at [DONE]
        2,
    ),
    "content-length-shorter": (
        JSON + b"Content-Length: %d\r\n\r\n" % (len(JSON_BODY) - 5) + JSON_BODY,
        "keep",
        "malformed_http",
        2,
    ),
    "chunked-and-content-length": (
        SSE + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n" + chunk(STREAM),
        "keep",
        "malformed_http",
        2,
    ),
    "100-continue-first": (
        b"HTTP/1.1 100 Continue\r\n\r\n" + SSE + length(STREAM) + STREAM,
        "keep",
        OK,
        1,
    ),
    "204-with-a-body": (
        b"HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\n\r\n" + JSON_BODY,
        "keep",
        "malformed_http",
        2,
    ),
    "http-1.0-until-close": (
        b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + STREAM,
        "close",
        OK,
        2,
    ),
    "connection-close-header": (
        SSE + b"Connection: close\r\n" + length(STREAM) + STREAM,
        "keep",
        OK,
        2,
    ),
    "empty-json-body": (JSON + length(b""), "keep", "no_terminal_response", 1),
    "bad-chunk-size": (CHUNKED + b"zz\r\n", "keep", "malformed_http", 2),
    "reset-mid-body": (JSON + length(JSON_BODY) + JSON_BODY[:20], "reset", "stream_interrupted", 2),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
async def test_framing_outcome_and_reuse(case: str) -> None:
    data, then, expected, connections = CASES[case]
    writers: list[asyncio.StreamWriter] = []

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                size = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(size)
                writer.write(data)
                await writer.drain()
                if then == "reset":
                    writer.transport.abort()
                    return
                if then == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    stream = b"event-stream" in data
    outcomes: list[str] = []
    try:
        async with open_backend(
            BackendSettings(base_url=url, timeouts=QUICK), MonotonicClock()
        ) as backend:
            for index in range(2):
                result = await backend.resolve(chat_request(f"r{index}", stream=stream))
                match outcome(result):
                    case Success(_):
                        outcomes.append(OK)
                    case Failure(unusable):
                        outcomes.append(unusable.code.value)
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.01)
    assert outcomes == [expected, expected]
    assert len(writers) == connections
