"""Third-party OpenAI-compatible servers, run on loopback for the conformance tests.

Each server lives in its own virtual environment under `.servers/<name>/`, installed by
`scripts/install-servers`. A server that is not installed fails its tests with the command that
installs it; none is skipped silently.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVERS = REPO / ".servers"
MODEL_DIR = SERVERS / "model" / "tiny-llama"
GGUF = SERVERS / "model" / "tiny-llama.gguf"
MODEL_NAME = "tiny-llama"


@dataclass(frozen=True)
class RunningServer:
    """A started server: its base URL and the log file its output goes to."""

    name: str
    url: str
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server's output, for failure messages."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def require_installed(name: str, *paths: Path) -> Path:
    """The `bin/` folder of server `name`'s environment; fails the test if it is missing."""
    bin_dir = SERVERS / name / "venv" / "bin"
    missing = [p for p in (SERVERS / name / ".installed", *paths) if not p.exists()]
    if missing:
        pytest.fail(
            f"{name} is not installed (missing {', '.join(str(p) for p in missing)}): "
            f"run `scripts/install-servers {name}` (scripts/check does it first)",
            pytrace=False,
        )
    return bin_dir


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(200 <= response.status < 300)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def serve(
    name: str,
    command: Callable[[int], list[str]],
    *,
    ready_path: str,
    startup_s: float,
    log_dir: Path,
    env: dict[str, str] | None = None,
) -> Iterator[RunningServer]:
    """Start `command(port)` on a free loopback port, wait until `ready_path` answers 2xx (at
    most `startup_s`), and kill the server's whole process group when the block ends."""
    port = free_port()
    log = log_dir / f"{name}-{port}.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command(port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    running = RunningServer(name=name, url=url, log=log)
    try:
        deadline = time.monotonic() + startup_s
        while not _answers(url + ready_path):
            if process.poll() is not None:
                pytest.fail(
                    f"{name} exited with {process.returncode} before it was ready:\n"
                    + running.log_tail(),
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{name} was not ready within {startup_s:.0f} s:\n" + running.log_tail(),
                    pytrace=False,
                )
            time.sleep(0.2)
        yield running
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
