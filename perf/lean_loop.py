"""The lean loop: the bare loop's work over a transport of the fewest Python steps.

The bare loop (`perf.ceiling.bare_loop_for`) is aiohttp's request path and nothing else, and the
ceiling's targets are set against it. This loop asks what that path itself costs: the same
requests (the same body, a request id header each, 64 kept-alive connections) written as
prepared bytes on an `asyncio.Protocol`, and the answer read up to its `Content-Length`, with
the status line and headers split by hand. It is a measurement, not a client: it knows only
the mock's answer (HTTP/1.1, `Content-Length`, no redirects, no TLS, no chunked bodies), and
treats anything else as a failed request.

    python -m perf.lean_loop [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from urllib.parse import urlsplit

import orjson

from assay import Endpoint
from assay.testing.bench import handler_for
from perf.ceiling import bare_loop_for, loop_figures
from perf.harness import OUTPUT_TOKENS, running_mock
from perf.resolve_vs_bare import chat_request


class _Answer(asyncio.Protocol):
    """One kept-alive connection: a write per request, its answer read to `Content-Length`."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.waiter: asyncio.Future[int] | None = None
        self.body_from = -1
        self.length = 0
        self.status = 0

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        if self.body_from < 0:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buffer[:end]).lower()
            self.status = int(head[9:12])
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                self._done(-1)
                return
            stop = head.find(b"\r\n", at + 2)
            self.length = int(head[at + 17 : stop if stop >= 0 else len(head)])
            self.body_from = end + 4
        if len(buffer) - self.body_from >= self.length:
            self._done(self.status)

    def _done(self, status: int) -> None:
        self.buffer = bytearray()
        self.body_from = -1
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(status)

    def connection_lost(self, exc: Exception | None) -> None:
        self._done(-1)


async def lean_loop_for(url: str, concurrency: int, seconds: float) -> tuple[float, int, int]:
    """The lean loop for about `seconds`: (elapsed s, 200 answers, anything else)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    body = orjson.dumps(handler_for(Endpoint.chat).build_body(chat_request(0)))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nAccept-Encoding: identity\r\n"
        f"Content-Length: {len(body)}\r\nX-Request-Id: "
    ).encode()
    loop = asyncio.get_running_loop()
    completed = failed = 0
    counter = itertools.count()

    async def worker() -> None:
        nonlocal completed, failed
        transport, answer = await loop.create_connection(_Answer, host, port)
        write = transport.write
        try:
            while time.perf_counter() < deadline:
                waiter = answer.waiter = loop.create_future()
                write(head + f"lean-{next(counter)}\r\n\r\n".encode() + body)
                if await waiter == 200:
                    completed += 1
                else:
                    failed += 1
                    return
        finally:
            transport.close()

    started = time.perf_counter()
    deadline = started + seconds
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
    return time.perf_counter() - started, completed, failed


def main(argv: list[str] | None = None) -> int:
    """Run the bare and the lean loop, alternating, against a fresh mock; print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, float]] = {}
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        for name, loop_for in (
            ("bare", bare_loop_for),
            ("lean", lean_loop_for),
            ("bare again", bare_loop_for),
            ("lean again", lean_loop_for),
        ):
            figures[name] = loop_figures(mock, args.seconds, loop_for)
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
