"""GuideLLM's mock server (`guidellm mock-server`, guidellm 0.8.1) on loopback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from tests.conformance.servers import RunningServer, require_installed, serve

MODEL = "tiny-mock"
OUTPUT_TOKENS = 16
# Sanic and GuideLLM's imports take a while on a loaded 2-core machine.
STARTUP_S = 120.0


@contextlib.contextmanager
def guidellm_mock(log_dir: Path, *flags: str) -> Iterator[RunningServer]:
    """The mock with fast timings, OUTPUT_TOKENS tokens per answer, and `flags`."""
    bin_dir = require_installed("guidellm")
    with serve(
        "guidellm",
        lambda port: [
            str(bin_dir / "guidellm"),
            "mock-server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--model",
            MODEL,
            "--request-latency",
            "0.01",
            "--ttft-ms",
            "5",
            "--itl-ms",
            "1",
            "--output-tokens",
            str(OUTPUT_TOKENS),
            *flags,
        ],
        ready_path="/health",
        startup_s=STARTUP_S,
        log_dir=log_dir,
    ) as server:
        yield server
