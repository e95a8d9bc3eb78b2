"""Running the mock in the current event loop: `open_mock_server`, for tests and libraries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from assay.mock.app import MockService
from assay.mock.config import MockConfig

# Seconds a stopping server waits for in-flight answers (stalls wake at once) before cancelling.
_SHUTDOWN_TIMEOUT = 2.0


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
) -> AsyncIterator[MockServer]:
    """Serve the mock in the running loop until the block exits; port 0 picks a free port.

    >>> import asyncio, urllib.request
    >>> async def main() -> bytes:
    ...     async with open_mock_server(MockConfig()) as server:
    ...         return await asyncio.to_thread(
    ...             lambda: urllib.request.urlopen(server.url + "/v1/models").read())
    >>> b"assay-mock" in asyncio.run(main())
    True
    """
    service = MockService(config or MockConfig())
    runner = web.AppRunner(
        service.application(),
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


__all__ = ["MockServer", "open_mock_server"]
