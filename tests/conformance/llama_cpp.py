"""llama-cpp-python's OpenAI-compatible server (0.3.36) on loopback, serving the tiny GGUF model
that `scripts/install-servers` makes from a random-weight Llama."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from tests.conformance.servers import GGUF, MODEL_NAME, RunningServer, require_installed, serve

STARTUP_S = 120.0
EOS_ID = 2
"""The tiny model's end-of-sequence token (SentencePiece's default `eos_id`)."""
LEAD_BYTE_ID = 3 + 0xE2
"""The byte token <0xE2> (byte tokens follow unknown, BOS and EOS): the first byte of a
three-byte UTF-8 character, so an answer ending in it ends inside a character."""


@contextlib.contextmanager
def llama_server(log_dir: Path, *, interrupt_requests: bool) -> Iterator[RunningServer]:
    """The server with the tiny model; `interrupt_requests` is its own setting (default True:
    a new request cuts the stream being generated)."""
    bin_dir = require_installed("llama-cpp", GGUF)
    with serve(
        "llama-cpp",
        lambda port: [
            str(bin_dir / "python"),
            "-m",
            "llama_cpp.server",
            "--model",
            str(GGUF),
            "--model_alias",
            MODEL_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "512",
            "--n_threads",
            "1",
            "--interrupt_requests",
            str(interrupt_requests),
        ],
        ready_path="/v1/models",
        startup_s=STARTUP_S,
        log_dir=log_dir,
    ) as server:
        yield server
