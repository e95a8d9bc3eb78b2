"""Starting and stopping load processes, with nothing but the standard library.

A run's children are fresh interpreters (`python -m assay.engine.load_child FD`) that
import the whole run path, about half a second. This module imports nothing heavy, so the CLI
can start them before it imports the run path itself and the two imports overlap; the engine's
coordinator (`assay.engine.coordinator`) then hands them their plan over the socket pair each
child has with this process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe, wait
from pathlib import Path
from typing import Any

_SHUTDOWN_TIMEOUT_S = 10.0
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(slots=True, eq=False)
class LoadChild:
    """One running load process and the parent's end of its socket pair (compared, and
    hashed, by identity: it stands for one process)."""

    name: str
    popen: subprocess.Popen[bytes]
    conn: Connection


@dataclass(frozen=True, slots=True)
class LoadProcesses:
    """Load processes started ahead of a run (see `start_load_processes`): while they import
    the run path, the caller can start its target and check it."""

    children: list[LoadChild]

    @property
    def processes(self) -> int:
        """The plan's process count these serve: the children and this process."""
        return len(self.children) + 1


@contextlib.contextmanager
def start_load_processes(processes: int) -> Iterator[LoadProcesses]:
    """Start the `processes - 1` children of a run now; they wait for its plan. On leaving,
    each is told to stop and waited for, whether a run used them or not.

    >>> with start_load_processes(1) as pool:
    ...     pool.processes
    1
    """
    with _started(processes - 1) as children:
        yield LoadProcesses(children)


@contextlib.contextmanager
def _started(count: int) -> Iterator[list[LoadChild]]:
    """Start `count` load processes at once; on leaving (also on an error: a failing
    `on_progress`, a dead child) every child is told to stop and is waited for."""
    children: list[LoadChild] = []
    try:
        for process in range(count):
            children.append(_start(f"assay-load-{process}"))
        yield children
    finally:
        _shut_down(children)


def _start(name: str) -> LoadChild:
    parent_end, child_end = Pipe(duplex=True)
    with child_end:
        fd = child_end.fileno()
        try:
            popen = _popen_ignoring_sigint(
                [sys.executable, "-m", "assay.engine.load_child", str(fd)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                env=_child_environment(),
            )
        except BaseException:
            parent_end.close()
            raise
    return LoadChild(name, popen, parent_end)


def _child_environment() -> dict[str, str]:
    # The entry module must import from the same assay as this process; once it runs, the
    # child takes this process's whole `sys.path` (sink factories may live anywhere on it).
    root = str(Path(__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}


def _popen_ignoring_sigint(command: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """Start `command` with SIGINT and SIGTERM ignored from its first instruction (an ignored
    signal survives exec and Python keeps it ignored), so a Ctrl-C or a SIGTERM sent to the
    whole group during its start-up cannot kill it: the parent stops it when the run ends."""
    if threading.current_thread() is not threading.main_thread():
        return subprocess.Popen(command, **options)
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in _STOP_SIGNALS}
    try:
        return subprocess.Popen(command, **options)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def send_all(children: list[LoadChild], message: object) -> None:
    for child in children:
        # A child that died cannot take it; its closed socket is reported when read.
        with contextlib.suppress(OSError):
            child.conn.send(message)


def _shut_down(children: list[LoadChild]) -> None:
    """Tell every child to stop (it ends a step under way first) and wait until each exits."""
    send_all(children, None)
    deadline_ns = time.monotonic_ns() + round(_SHUTDOWN_TIMEOUT_S * 1e9)
    # Read until each child closes its end: one still sending a result must not block on a
    # full socket while the parent waits for it to exit.
    open_ends = {child.conn for child in children}
    while open_ends and (remaining_ns := deadline_ns - time.monotonic_ns()) > 0:
        for conn in wait(list(open_ends), timeout=remaining_ns / 1e9):
            assert isinstance(conn, Connection)
            try:
                conn.recv_bytes()
            except (EOFError, OSError):
                open_ends.discard(conn)
    for child in children:
        try:
            child.popen.wait(timeout=max(0.0, (deadline_ns - time.monotonic_ns()) / 1e9))
        except subprocess.TimeoutExpired:
            child.popen.kill()
            child.popen.wait()
        child.conn.close()


__all__ = ["LoadChild", "LoadProcesses", "send_all", "start_load_processes"]
