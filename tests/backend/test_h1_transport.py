"""assay's own HTTP/1.1 transport over real loopback sockets: kept-alive connections, the pool's
limit, every body framing, TLS with a self-signed CA, proxies refused, and no aiohttp on the
request path."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest
from returns.result import Failure, Result, Success

from assay.backend import BackendSettings, open_backend
from assay.core import (
    DiagnosticCode,
    GenerationResponse,
    MonotonicClock,
    UnusableResponse,
    outcome,
)
from assay.errors import ServerNotReady
from tests.backend.backend_loopback import chat_chunk, chat_request
from tests.backend.test_transport_faults import failure_of, resolve_once

# Answers one request on a connection: gets the request head, writes the whole answer.
Answer = Callable[[str, asyncio.StreamWriter], Awaitable[None]]

STREAM = chat_chunk("Rivers") + chat_chunk(" run", "stop") + b"data: [DONE]\n\n"
JSON_BODY = orjson.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "tiny-llama",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Rivers run."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    }
)


@dataclass
class KeptAlive:
    url: str
    connections: int = 0
    requests: int = 0
    most_at_once: int = 0


@asynccontextmanager
async def serve_kept_alive(
    answer: Answer, tls: ssl.SSLContext | None = None
) -> AsyncIterator[KeptAlive]:
    """A loopback server that answers every request of a connection, as real servers do."""
    open_now = 0

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_now
        served.connections += 1
        open_now += 1
        served.most_at_once = max(served.most_at_once, open_now)
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next(
                    int(line.split(":", 1)[1])
                    for line in head.split("\r\n")
                    if line.lower().startswith("content-length:")
                )
                await reader.readexactly(length)
                served.requests += 1
                await answer(head, writer)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            open_now -= 1
            writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    served = KeptAlive(url=f"{'https' if tls else 'http'}://127.0.0.1:{port}")
    try:
        yield served
    finally:
        server.close()
        await server.wait_closed()


def head(status: int = 200, content_type: str = "text/event-stream", **extra: str) -> bytes:
    lines = [f"HTTP/1.1 {status} OK", f"Content-Type: {content_type}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def chunked_stream(request_head: str, writer: asyncio.StreamWriter) -> None:
    writer.write(head(transfer_encoding="chunked"))
    await asyncio.sleep(0.01)
    for event in (chat_chunk("Rivers"), chat_chunk(" run", "stop"), b"data: [DONE]\n\n"):
        writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        await writer.drain()
    writer.write(b"0\r\n\r\n")


async def length_stream(request_head: str, writer: asyncio.StreamWriter) -> None:
    writer.write(head(content_length=str(len(STREAM))) + STREAM)


async def gzip_json(request_head: str, writer: asyncio.StreamWriter) -> None:
    body = gzip.compress(JSON_BODY)
    writer.write(
        head(
            content_type="application/json", content_encoding="gzip", content_length=str(len(body))
        )
        + body
    )


def text_of(result: Result[GenerationResponse, UnusableResponse]) -> str:
    match outcome(result):
        case Success(response):
            return str(response.text)
        case Failure(unusable):
            raise AssertionError(unusable.message)


@pytest.mark.parametrize("answer", [chunked_stream, length_stream])
async def test_requests_share_one_kept_alive_connection(answer: Answer) -> None:
    async with (
        serve_kept_alive(answer) as server,
        open_backend(BackendSettings(base_url=server.url), MonotonicClock()) as backend,
    ):
        texts = [text_of(await backend.resolve(chat_request(f"r{i}"))) for i in range(3)]
    assert texts == ["Rivers run"] * 3
    assert server.requests == 3
    assert server.connections == 1


async def test_pool_opens_no_more_connections_than_its_limit() -> None:
    async with serve_kept_alive(chunked_stream) as server:
        settings = BackendSettings(base_url=server.url, max_connections=2)
        async with open_backend(settings, MonotonicClock()) as backend:
            results = await asyncio.gather(
                *(backend.resolve(chat_request(f"r{i}")) for i in range(6))
            )
    assert [text_of(result) for result in results] == ["Rivers run"] * 6
    assert server.most_at_once <= 2


async def test_gzip_body_sent_despite_identity_is_decoded() -> None:
    async with serve_kept_alive(gzip_json) as server:
        result = await resolve_once(BackendSettings(base_url=server.url), stream=False)
    assert text_of(result) == "Rivers run."


async def test_body_that_ends_with_the_connection_is_read_to_its_end() -> None:
    async def until_close(request_head: str, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + STREAM)
        await writer.drain()
        writer.close()

    async with serve_kept_alive(until_close) as server:
        result = await resolve_once(BackendSettings(base_url=server.url))
    assert text_of(result) == "Rivers run"


async def test_request_path_does_not_go_through_aiohttp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a request went through aiohttp")

    monkeypatch.setattr(aiohttp.ClientSession, "_request", refuse)
    async with serve_kept_alive(chunked_stream) as server:
        result = await resolve_once(BackendSettings(base_url=server.url))
    assert text_of(result) == "Rivers run"


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    from tests.backend.test_tls import self_signed

    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context, cert


async def test_tls_stream_with_the_ca_bundle_is_read(
    tls_files: tuple[ssl.SSLContext, Path],
) -> None:
    context, cert = tls_files
    async with serve_kept_alive(chunked_stream, tls=context) as server:
        settings = BackendSettings(base_url=server.url, ca_bundle=cert)
        async with open_backend(settings, MonotonicClock()) as backend:
            texts = [text_of(await backend.resolve(chat_request(f"r{i}"))) for i in range(2)]
    assert texts == ["Rivers run"] * 2
    assert server.connections == 1


async def test_tls_insecure_skips_verification(tls_files: tuple[ssl.SSLContext, Path]) -> None:
    context, _ = tls_files
    async with serve_kept_alive(chunked_stream, tls=context) as server:
        result = await resolve_once(BackendSettings(base_url=server.url, verify_tls=False))
    assert text_of(result) == "Rivers run"


async def test_tls_untrusted_certificate_is_connect_error_with_the_ways_out(
    tls_files: tuple[ssl.SSLContext, Path],
) -> None:
    context, _ = tls_files
    async with serve_kept_alive(chunked_stream, tls=context) as server:
        unusable = failure_of(await resolve_once(BackendSettings(base_url=server.url)))
    assert unusable.code is DiagnosticCode.connect_error
    assert "certificate verify failed" in unusable.message
    assert "--ca-bundle" in unusable.message
    assert "--insecure" in unusable.message


async def test_proxy_in_the_environment_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    settings = BackendSettings(base_url="https://gpu-1.invalid:8000")
    with pytest.raises(ServerNotReady) as raised:
        async with open_backend(settings, MonotonicClock()):
            pass
    message = str(raised.value)
    assert "\n" not in message
    assert "does not use HTTP proxies" in message
    assert "NO_PROXY" in message


async def test_no_proxy_and_loopback_are_reached_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", ".invalid")
    async with open_backend(
        BackendSettings(base_url="https://gpu-1.invalid:8000"), MonotonicClock()
    ):
        pass
    monkeypatch.delenv("NO_PROXY")
    async with serve_kept_alive(chunked_stream) as server:
        result = await resolve_once(BackendSettings(base_url=server.url))
    assert text_of(result) == "Rivers run"
