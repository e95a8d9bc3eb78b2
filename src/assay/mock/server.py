"""Running the mock in an event loop: `open_mock_server` in the running one (tests, libraries),
`run_loop` + `serve_until_signal` for a process of its own."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from assay.mock.app import MockService
from assay.mock.capacity import Sleep
from assay.mock.config import MockConfig
from assay.mock.metrics import ServedCounters

# Seconds a stopping server waits for in-flight answers (stalls wake at once) before cancelling.
_SHUTDOWN_TIMEOUT = 2.0
# The largest request body the mock reads (aiohttp's default, 1 MiB, refused two 1024x768 PNGs
# with HTTP 413). 64 MiB holds 100 such images as base64 `data:` URLs, or 12 of 4096x4096;
# vLLM 0.32 takes the same bodies.
MAX_REQUEST_BYTES = 64 * 2**20


@dataclass(frozen=True, slots=True)
class MockServer:
    """A running mock server: where it listens, and its counters."""

    url: str
    host: str
    port: int
    service: MockService

    def stats(self) -> dict[str, Any]:
        """What it served so far (the same JSON as `GET /mock/stats`)."""
        return self.service.stats.snapshot()


@asynccontextmanager
async def open_mock_server(
    config: MockConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    reuse_port: bool = False,
    counters: ServedCounters | None = None,
    sleep: Sleep = asyncio.sleep,
) -> AsyncIterator[MockServer]:
    """Serve the mock in the running loop until the block exits; port 0 picks a free port.
    `sleep` waits out the latencies of its answers (a test passes one that records them).

    >>> import asyncio, urllib.request
    >>> async def main() -> bytes:
    ...     async with open_mock_server(MockConfig()) as server:
    ...         return await asyncio.to_thread(
    ...             lambda: urllib.request.urlopen(server.url + "/v1/models").read())
    >>> b"assay-mock" in asyncio.run(main())
    True
    """
    service = MockService(config or MockConfig(), counters, sleep=sleep)
    runner = web.AppRunner(
        service.application(client_max_size=MAX_REQUEST_BYTES),
        access_log=None,
        handler_cancellation=True,
        shutdown_timeout=_SHUTDOWN_TIMEOUT,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        url_host = f"[{bound_host}]" if ":" in bound_host else bound_host
        yield MockServer(
            url=f"http://{url_host}:{bound_port}", host=bound_host, port=bound_port, service=service
        )
    finally:
        await runner.cleanup()


READY_PREFIX = "ready "
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on uvloop when installed (the `fast` extra), else on asyncio's loop."""
    factory: Callable[[], asyncio.AbstractEventLoop] | None
    try:
        import uvloop  # optional; imported here so importing the package stays cheap

        factory = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)


async def serve_until_signal(
    config: MockConfig,
    host: str,
    port: int,
    reuse_port: bool,
    on_ready: Callable[[str], None] | None,
    counters: ServedCounters | None = None,
) -> None:
    """Serve in the running loop until SIGTERM or SIGINT; `on_ready(url)` once listening."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    async with open_mock_server(
        config, host, port, reuse_port=reuse_port, counters=counters
    ) as server:
        if on_ready is not None:
            on_ready(server.url)
        await stop.wait()


__all__ = [
    "MAX_REQUEST_BYTES",
    "READY_PREFIX",
    "STOP_SIGNALS",
    "MockServer",
    "open_mock_server",
    "run_loop",
    "serve_until_signal",
]
