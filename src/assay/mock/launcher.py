"""Running the mock in its own processes: `serve` (blocking, for `assay mock`) and
`start_mock_processes` (a context manager, for an embedded target that must not share the load
generator's event loop).

Workers are fresh interpreters (`python -m assay.mock.server_child`) sharing one port with
SO_REUSEPORT: the parent reserves the port with a bound, non-listening socket, so port 0 works
and the kernel spreads connections over the workers.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from assay.errors import ConfigError, ServerNotReady
from assay.mock.config import MockConfig
from assay.mock.metrics import create_counters_file
from assay.mock.server import READY_PREFIX, STOP_SIGNALS, run_loop, serve_until_signal

READY_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 5.0


def serve(
    config: MockConfig,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM; `on_ready(url)` is called once every worker listens.

    One worker runs in this process (on uvloop when installed); more run as child processes on
    the same port.
    """
    if workers == 1:
        run_loop(serve_until_signal(config, host, port, False, on_ready))
        return
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in STOP_SIGNALS}
    try:
        with _spawn(config, workers, host, port) as (url, processes):
            if on_ready is not None:
                on_ready(url)
            while not stop.wait(0.5):
                if any(p.poll() is not None for p in processes):
                    break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def start_mock_processes(
    config: MockConfig,
    workers: int = 1,
    host: str = "127.0.0.1",
    port: int = 0,
    interrupted: Callable[[], bool] = lambda: False,
) -> Iterator[str]:
    """Run the mock in `workers` child processes; yields its URL once every worker listens.

    The children are stopped (SIGTERM, then SIGKILL if they linger) when the block exits.
    KeyboardInterrupt when `interrupted()` turns true while they start (a Ctrl-C turned into a
    flag by the caller), so stopping does not wait for them to listen.
    """
    with _spawn(config, workers, host, port, interrupted) as (url, _):
        yield url


@contextmanager
def _spawn(
    config: MockConfig,
    workers: int,
    host: str,
    port: int,
    interrupted: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[str, list[subprocess.Popen[str]]]]:
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with closing(socket.socket(family, socket.SOCK_STREAM)) as reservation:
        reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        reservation.bind((host, port))
        port = reservation.getsockname()[1]
        command = [sys.executable, "-m", "assay.mock.server_child", host, str(port)]
        config_json = config.model_dump_json()
        processes: list[subprocess.Popen[str]] = []
        # The workers' /metrics counters: one slot each in a small file they all map.
        counters_dir = tempfile.TemporaryDirectory(prefix="assay-mock-")
        counters_file = Path(counters_dir.name) / "counters"
        create_counters_file(counters_file, workers, len(config.served_names))
        try:
            for slot in range(workers):
                processes.append(
                    subprocess.Popen(
                        [*command, config_json, str(counters_file), str(slot), str(workers)],
                        # The worker serves until its stdin closes: if this process dies
                        # without stopping it (SIGKILL), the pipe closes and it stops too.
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        env=_child_environment(),
                        text=True,
                        # Its own session: a terminal's Ctrl-C reaches the benchmark, which
                        # finishes cleanly, and never kills the target under it.
                        start_new_session=True,
                    )
                )
            urls = {_wait_ready(process, interrupted) for process in processes}
            yield urls.pop(), processes
        finally:
            _stop(processes)
            counters_dir.cleanup()


def _child_environment() -> dict[str, str]:
    # The children import the same assay as this process, wherever it was found.
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}


def _wait_ready(process: subprocess.Popen[str], interrupted: Callable[[], bool]) -> str:
    assert process.stdout is not None  # the pipe was asked for in _spawn
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if interrupted():
            raise KeyboardInterrupt
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServerNotReady(f"mock worker did not start within {READY_TIMEOUT_S:.0f}s")
        # A short wait: an interrupt is seen within 0.1 s.
        readable, _, _ = select.select([process.stdout], [], [], min(remaining, 0.1))
        if readable:
            line = process.stdout.readline()
            if line.startswith(READY_PREFIX):
                return line.removeprefix(READY_PREFIX).strip()
            if not line:
                raise ServerNotReady(
                    f"mock worker exited with code {process.wait()} before listening"
                )
        elif process.poll() is not None:
            raise ServerNotReady(f"mock worker exited with code {process.returncode} on start")


def _stop(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + _STOP_TIMEOUT_S
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


__all__ = ["READY_TIMEOUT_S", "serve", "start_mock_processes"]
