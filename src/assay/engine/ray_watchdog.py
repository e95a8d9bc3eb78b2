"""A watchdog that ends the Ray a run started when the run's process ends, however it ends.

`ray.shutdown()` stops a Ray that assay started, but only when the driver lives to call it:
after a SIGKILL of the driver, Ray's `DashboardAgent` and `RuntimeEnvAgent` outlive it
(reparented, and deaf to SIGTERM). So a driver that starts its own Ray also starts this small
process, in a session of its own: every half second it notes the Ray processes descended from
the driver (adding those it finds to the run's record, see `ray_leftovers`), and once the
driver is gone it sends SIGKILL to each of them still alive, and to each Ray process carrying
the run's mark (started since its last look) (the same process: its start time
is checked, so a reused pid is never hit), removes the record, then exits.

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

from assay.engine.ray_leftovers import (
    PROC,
    is_ray,
    marked_ray,
    proc_stat,
    run_mark,
    start_time,
    write_record,
)

_POLL_S: Final = 0.5


def start_watchdog(driver: int, record: Path | None = None) -> bool:
    """Start the watchdog of `driver`'s Ray (keeping `record` up to date when given); False
    where there is no /proc to watch with.

    The process started forks the watchdog off and ends at once, so the watchdog is no child
    of the driver (nothing to wait for) and lives in a session of its own (a signal to the
    run's process group does not reach it)."""
    started = start_time(driver)
    if started is None:
        return False
    subprocess.run(
        [
            sys.executable,
            "-m",
            "assay.engine.ray_watchdog",
            str(driver),
            str(started),
            *([] if record is None else [str(record)]),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )
    return True


def watch(driver: int, started: int, record: Path | None = None) -> int:
    """Note `driver`'s Ray descendants until it ends, then kill those left; how many."""
    seen: dict[int, int] = {}
    while start_time(driver) == started:
        found = ray_descendants(driver)
        if record is not None and not found.keys() <= seen.keys() and record.exists():
            # The run's record names them too, should this watchdog not live to end them; a
            # record the run removed already (its Ray shut down) is not written again.
            with contextlib.suppress(OSError):
                write_record(record, driver, started, seen | found, new=False)
        seen |= found
        time.sleep(_POLL_S)
    # With those started after its last look (a run killed while Ray was starting), by mark.
    seen |= marked_ray(run_mark(driver, started), after=started)
    killed = 0
    for pid, start in seen.items():
        if start_time(pid) == start:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    if record is not None:
        with contextlib.suppress(OSError):
            record.unlink()
    return killed


def ray_descendants(root: int) -> dict[int, int]:
    """The Ray processes descended from `root` (pid -> start time), read from /proc."""
    parents: dict[int, int] = {}
    starts: dict[int, int] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = proc_stat(int(entry.name))
        if stat is not None:
            parents[int(entry.name)], starts[int(entry.name)] = stat
    found: dict[int, int] = {}
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor not in (root, 0, 1):
            ancestor = parents.get(ancestor)
        if ancestor == root and is_ray(pid):
            found[pid] = starts[pid]
    return found


def _detach_and_watch(driver: int, started: int, record: Path | None) -> None:
    if os.fork() != 0:
        os._exit(0)  # the parent: `start_watchdog` returns
    os.setsid()
    watch(driver, started, record)


if __name__ == "__main__":
    _detach_and_watch(
        int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None
    )


__all__ = ["ray_descendants", "start_watchdog", "watch"]
