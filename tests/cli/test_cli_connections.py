"""How many connections a run opens: its load never more than its requests in flight at once,
and beside it one connection for each check before the load and each metrics scrape, no more
(README, "Target checks"). Counted by a forwarder on loopback in front of the mock, which notes
the first request line of every connection it accepts."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

from tests.cli.cli_harness import assay_env
from tests.cli.test_cli_secrets import run_assay_async

from assay.mock import MockConfig, open_mock_server


@contextlib.asynccontextmanager
async def counting_forwarder(upstream_port: int) -> AsyncIterator[tuple[str, Counter[str]]]:
    """A loopback forwarder to `upstream_port`: its URL, and each connection's first request
    line (`POST /v1/chat/completions`), counted."""
    opened: Counter[str] = Counter()
    pipes: set[asyncio.Task[None]] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await reader.readline()
        opened[" ".join(first.decode("latin-1").split()[:2])] += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        up_writer.write(first)
        for task in (
            asyncio.create_task(pipe(reader, up_writer)),
            asyncio.create_task(pipe(up_reader, writer)),
        ):
            pipes.add(task)
            task.add_done_callback(pipes.discard)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", opened
    finally:
        server.close()
        for task in list(pipes):
            task.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)
        await server.wait_closed()


async def test_a_run_opens_its_streams_connections_and_one_per_check(tmp_path: Path) -> None:
    async with open_mock_server(MockConfig()) as mock:
        upstream = int(mock.url.rsplit(":", 1)[1])
        async with counting_forwarder(upstream) as (url, opened):
            result = await run_assay_async(
                "run", "--target", url, "--max-requests", "40", "--profile", "concurrent",
                "--concurrency", "4", "--processes", "1", "--output-tokens", "8",
                "--output-dir", tmp_path / "run", env=assay_env(),
            )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "run" / "report.json").read_bytes())
    scrapes = report["server_metrics"]["scrapes"]
    assert set(opened) == {"GET /v1/models", "POST /v1/chat/completions", "GET /metrics"}
    assert opened["GET /v1/models"] == 1  # readiness: one listing
    # 40 requests over 4 streams: 4 kept-alive connections, plus the probe and the proxy check.
    assert opened["POST /v1/chat/completions"] == 4 + 2
    assert opened["GET /metrics"] == scrapes  # one connection per scrape, none kept open
