"""Running the mock in its own processes: `serve` (blocking, for `assay mock`) and
`start_mock_processes` (a context manager, for an embedded target that must not share the load
generator's event loop).

Several workers share one port with SO_REUSEPORT: the parent reserves the port with a bound,
non-listening socket, so port 0 works and the kernel spreads connections over the workers.
"""

from __future__ import annotations

import asyncio
import http.client
import multiprocessing
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any

from assay.errors import ConfigError, ServerNotReady
from assay.mock.config import MockConfig
from assay.mock.server import open_mock_server

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

    One worker runs in this process; more run as child processes on the same port.
    """
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    if workers == 1:
        _run_loop(_serve_until_signal(config, host, port, False, on_ready))
        return
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOP_SIGNALS}
    try:
        with _spawn(config, workers, host, port) as (url, processes):
            if on_ready is not None:
                on_ready(url)
            while not stop.wait(0.5):
                if not all(p.is_alive() for p in processes):
                    break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def start_mock_processes(
    config: MockConfig, workers: int = 1, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Run the mock in `workers` child processes; yields its URL once `/health` answers.

    The children are terminated (SIGTERM, then SIGKILL if they linger) when the block exits.
    """
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    with _spawn(config, workers, host, port) as (url, _):
        yield url


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _spawn(
    config: MockConfig, workers: int, host: str, port: int
) -> Iterator[tuple[str, list[BaseProcess]]]:
    # spawn, not fork: the parent may have a running event loop and threads.
    context = multiprocessing.get_context("spawn")
    ready: Queue[int] = context.Queue()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with closing(socket.socket(family, socket.SOCK_STREAM)) as reservation:
        reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        reservation.bind((host, port))
        port = reservation.getsockname()[1]
        processes: list[BaseProcess] = [
            context.Process(
                target=_worker_main,
                args=(config, host, port, ready),
                name=f"assay-mock-{index}",
                daemon=True,
            )
            for index in range(workers)
        ]
        try:
            for process in processes:
                process.start()
            url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
            _wait_ready(ready, processes, url)
            yield url, processes
        finally:
            _stop(processes)
            ready.close()


def _wait_ready(ready: Queue[int], processes: list[BaseProcess], url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = len(processes)
    while waiting:
        if time.monotonic() > deadline:
            raise ServerNotReady(f"mock workers did not start within {READY_TIMEOUT_S:.0f}s")
        try:
            ready.get(timeout=0.1)
            waiting -= 1
        except queue.Empty:
            dead = [p for p in processes if not p.is_alive()]
            if dead:
                raise ServerNotReady(
                    f"mock worker {dead[0].name} exited with code {dead[0].exitcode} on start"
                ) from None
    host, _, port = url.removeprefix("http://").rpartition(":")
    connection = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=5)
    try:
        connection.request("GET", "/health")
        status = connection.getresponse().status
    finally:
        connection.close()
    if status != 200:
        raise ServerNotReady(f"mock /health answered {status}")


def _stop(processes: list[BaseProcess]) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + _STOP_TIMEOUT_S
    for process in processes:
        if process.pid is None:
            continue
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1.0)


def _worker_main(config: MockConfig, host: str, port: int, ready: Queue[int]) -> None:
    """A child process: serve on the shared port until SIGTERM or SIGINT."""
    _run_loop(_serve_until_signal(config, host, port, True, lambda _: ready.put(1)))


def _run_loop(main: Any) -> None:
    """Run `main` on uvloop when installed (the `fast` extra), else on asyncio's loop."""
    try:
        import uvloop

        factory: Callable[[], asyncio.AbstractEventLoop] | None = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)


async def _serve_until_signal(
    config: MockConfig,
    host: str,
    port: int,
    reuse_port: bool,
    on_ready: Callable[[str], None] | None,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in _STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    async with open_mock_server(config, host, port, reuse_port=reuse_port) as server:
        if on_ready is not None:
            on_ready(server.url)
        await stop.wait()


__all__ = ["READY_TIMEOUT_S", "serve", "start_mock_processes"]
