"""Tiny loopback servers for transport faults the mock cannot produce, and wire samples."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field

import orjson

from assay.core import Endpoint, GenerationRequest

API_KEY = "sk-assay-test-7f3a9c1e5b"

Script = Callable[[asyncio.StreamWriter, asyncio.Event], Awaitable[None]]


@dataclass
class RawServer:
    """A loopback server that runs one script per connection; `heads` holds each request head."""

    url: str
    heads: list[str] = field(default_factory=list)


@asynccontextmanager
async def serve_raw(script: Script) -> AsyncIterator[RawServer]:
    """A loopback server that reads one HTTP request per connection, then runs `script`.

    A script that never answers waits on the release event, which leaving the block sets, so
    no connection outlives its test.
    """
    release = asyncio.Event()
    running: set[asyncio.Future[None]] = set()

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            running.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            served.heads.append(head)
            await reader.readexactly(_content_length(head))
            await script(writer, release)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    served = RawServer(url=f"http://127.0.0.1:{port}")
    try:
        yield served
    finally:
        release.set()
        server.close()
        if running:
            await asyncio.wait(running, timeout=2)
        await server.wait_closed()


def _content_length(head: str) -> int:
    for line in head.split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return int(value)
    return 0


def unused_port_url() -> str:
    """A loopback URL where nothing listens (the port was just released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def response_head(
    status: int = 200, content_type: str | None = "text/event-stream", length: int | None = None
) -> bytes:
    """An HTTP/1.1 response head; chunked unless `length` is given."""
    reason = {200: "OK", 401: "Unauthorized", 404: "Not Found", 500: "Internal Server Error"}
    lines = [f"HTTP/1.1 {status} {reason.get(status, 'Status')}"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    lines.append("Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def http_chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def chat_chunk(content: str, finish_reason: str | None = None) -> bytes:
    """One vLLM-style chat completion chunk as an SSE frame."""
    chunk = {
        "id": "chatcmpl-a8e0",
        "object": "chat.completion.chunk",
        "created": 1796201699,
        "model": "tiny-llama",
        "choices": [
            {
                "index": 0,
                "delta": {"content": content},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def chat_request(request_id: str = "r1", stream: bool = True) -> GenerationRequest:
    """A small chat request as a benchmark would send it."""
    return GenerationRequest(
        request_id=request_id,
        endpoint=Endpoint.chat,
        model="tiny-llama",
        messages=({"role": "user", "content": "Write one line about rivers."},),
        max_output_tokens=8,
        stream=stream,
    )


@contextmanager
def full_backlog_url() -> Iterator[str]:
    """A loopback listener that never accepts and whose accept queue is already full.

    The kernel drops further SYNs, so a new connection hangs in the connect phase: the one way
    to see a connect deadline pass without leaving loopback.
    """
    with socket.socket() as listener, ExitStack() as fillers:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(3):
            filler = fillers.enter_context(socket.socket())
            filler.setblocking(False)
            with suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        yield f"http://127.0.0.1:{port}"
