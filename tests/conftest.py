"""Shared fixtures: the project's own mock server on a free loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack

import pytest

from assay.mock import MockConfig, MockServer, open_mock_server

StartMock = Callable[[MockConfig], Awaitable[MockServer]]
"""Starts a mock with the given config; it stops when the test ends."""


@pytest.fixture
async def mock_url() -> AsyncIterator[str]:
    """The base URL ("http://127.0.0.1:PORT") of a default mock, in the test's event loop."""
    async with open_mock_server(MockConfig()) as server:
        yield server.url


@pytest.fixture
async def start_mock() -> AsyncIterator[StartMock]:
    """A factory: `server = await start_mock(MockConfig(...))`; every server stops at teardown."""
    async with AsyncExitStack() as stack:

        async def start(config: MockConfig) -> MockServer:
            return await stack.enter_async_context(open_mock_server(config))

        yield start
