"""A watchdog that ends the Ray a run started when the run's process ends, however it ends.

`ray.shutdown()` stops a Ray that assay started, but only when the driver lives to call it:
after a SIGKILL of the driver, Ray's `DashboardAgent` and `RuntimeEnvAgent` outlive it
(reparented, and deaf to SIGTERM). So a driver that starts its own Ray also starts this small
process, in a session of its own: every half second it notes the Ray processes descended from
the driver, and once the driver is gone it sends SIGKILL to each of them still alive (the same
process: its start time is checked, so a reused pid is never hit), then exits.

Linux only (it reads /proc); elsewhere no watchdog is started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

_PROC: Final = Path("/proc")
_POLL_S: Final = 0.5


def start_watchdog(driver: int) -> bool:
    """Start the watchdog of `driver`'s Ray; False where there is no /proc to watch with.

    The process started forks the watchdog off and ends at once, so the watchdog is no child
    of the driver (nothing to wait for) and lives in a session of its own (a signal to the
    run's process group does not reach it)."""
    started = _start_time(driver)
    if started is None:
        return False
    subprocess.run(
        [sys.executable, "-m", "assay.engine.ray_watchdog", str(driver), str(started)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )
    return True


def watch(driver: int, started: int) -> int:
    """Note `driver`'s Ray descendants until it ends, then kill those left; how many."""
    seen: dict[int, int] = {}
    while _start_time(driver) == started:
        seen |= ray_descendants(driver)
        time.sleep(_POLL_S)
    killed = 0
    for pid, start in seen.items():
        if _start_time(pid) == start:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def ray_descendants(root: int) -> dict[int, int]:
    """The Ray processes descended from `root` (pid -> start time), read from /proc."""
    parents: dict[int, int] = {}
    starts: dict[int, int] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None:
            parents[int(entry.name)], starts[int(entry.name)] = stat
    found: dict[int, int] = {}
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor not in (root, 0, 1):
            ancestor = parents.get(ancestor)
        if ancestor == root and _is_ray(pid):
            found[pid] = starts[pid]
    return found


def _is_ray(pid: int) -> bool:
    try:
        command = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False
    return command.startswith(b"ray::") or b"/ray/" in command


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of `pid`, None when it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # After the command name (which may hold spaces and parentheses): state, ppid, ... and the
    # start time, field 22 of the line, 20th after the name.
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[19])


def _start_time(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _detach_and_watch(driver: int, started: int) -> None:
    if os.fork() != 0:
        os._exit(0)  # the parent: `start_watchdog` returns
    os.setsid()
    watch(driver, started)


if __name__ == "__main__":
    _detach_and_watch(int(sys.argv[1]), int(sys.argv[2]))


__all__ = ["ray_descendants", "start_watchdog", "watch"]
