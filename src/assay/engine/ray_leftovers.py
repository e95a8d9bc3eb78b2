"""The record of a Ray that a run started, and the clean-up of one whose run is gone.

The watchdog (`ray_watchdog`) ends a run's Ray when the run's process ends. Should the watchdog
die too (killed with the run's process group, the OOM killer, a `kill -9` of both), Ray's agents
stay. So a run that starts its own Ray keeps a record of it: one small JSON file per run in a
folder of the user's own (`$XDG_RUNTIME_DIR/assay`, else `assay-UID` in the temporary folder,
mode 0700, used only when it is a real folder owned by the user and closed to others), naming
the run's process and each Ray process descended from it, each by pid *and* start time, and the
boot they belong to. The run writes it *before* it starts Ray, and again once the actors are
placed; the watchdog adds the processes it notes; both remove it when the Ray it names has ended.
Ray is started with a mark in its environment (`ASSAY_RAY_RUN`, the run's pid and start time),
which every process of that Ray inherits, so even a run killed while Ray was still starting (its
agents not yet noted anywhere) leaves processes that can be told from any other Ray: a Ray the
user runs never carries the mark of a run of assay.

The next run that starts its own Ray reads the records first. A record whose run's process still
lives (same pid, same start time) is left alone: that run is going on. Otherwise each process it
names that still lives as the same process (same pid and start time, this boot, owned by this
user, a Ray process by its command line) is sent SIGKILL, and so is each Ray process of this
user carrying the record's mark; then the record is removed. A Ray the
user started, or any process no record names as it was, is never touched.

Linux only (pids and start times come from /proc); elsewhere nothing is recorded or ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from assay.file_writes import replace_with, write_new

PROC: Final = Path("/proc")
_BOOT_ID: Final = PROC / "sys" / "kernel" / "random" / "boot_id"
_PREFIX: Final = "ray-"
_SUFFIX: Final = ".json"
RUN_MARK: Final = "ASSAY_RAY_RUN"
"""The environment variable that marks every process of a Ray a run started."""
# A record names a few dozen processes; anything much larger is not one of ours.
_MAX_RECORD_BYTES: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Ended:
    """What the clean-up did: Ray processes ended, and the earlier runs' processes they came
    from."""

    processes: int
    drivers: tuple[int, ...]

    def line(self) -> str | None:
        """The one line a run says about it; None when nothing was ended.

        >>> Ended(3, (4242,)).line()
        'engine: ended 3 Ray processes left by an earlier run (pid 4242, gone)'
        """
        if not self.processes:
            return None
        runs = ", ".join(str(pid) for pid in self.drivers)
        plural = "runs" if len(self.drivers) > 1 else "run"
        noun = "process" if self.processes == 1 else "processes"
        return (
            f"engine: ended {self.processes} Ray {noun} left by an earlier {plural} "
            f"(pid {runs}, gone)"
        )


def state_folder(base: Path | None = None) -> Path | None:
    """The user's own folder for the records, created when missing; None when it cannot be
    trusted (a link, another user's, open to others) or made."""
    if base is None:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime and Path(runtime).is_absolute() and Path(runtime).is_dir():
            folder = Path(runtime) / "assay"
        else:
            folder = Path(tempfile.gettempdir()) / f"assay-{os.getuid()}"
    else:
        folder = base
    with contextlib.suppress(FileExistsError, OSError):
        folder.mkdir(mode=0o700)
    try:
        status = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid():
        return None
    if status.st_mode & 0o077:
        return None
    return folder


def boot_id() -> str | None:
    """This boot's id: pids and start times mean something only within one boot."""
    try:
        return _BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def record_path(folder: Path, driver: int, started: int) -> Path:
    """Where the record of the run `driver` (started at `started`) lives."""
    return folder / f"{_PREFIX}{driver}-{started}{_SUFFIX}"


def write_record(
    path: Path, driver: int, started: int, processes: dict[int, int], *, new: bool
) -> None:
    """Write the record of `driver`'s Ray `processes` (pid -> start time): created exclusively
    when `new`, else replacing the run's own record (never following a link)."""
    body = orjson.dumps(
        {
            "boot_id": boot_id(),
            "driver": [driver, started],
            "ray": sorted([pid, start] for pid, start in processes.items()),
        }
    ).decode()
    if new:
        write_new(path, body)
    else:
        replace_with(path, body)


def end_stale_ray(folder: Path) -> Ended:
    """End the Ray processes of every record whose run is gone, and remove those records."""
    killed = 0
    drivers: list[int] = []
    this_boot = boot_id()
    for path in sorted(folder.glob(f"{_PREFIX}*{_SUFFIX}")):
        record = _read_record(path)
        if record is None:
            continue
        boot, driver, started, processes = record
        if boot == this_boot and start_time(driver) == started:
            continue  # that run is still going
        ended = 0
        if boot == this_boot:
            named = dict(processes) | marked_ray(run_mark(driver, started), after=started)
            for pid, start in named.items():
                if _same_ray_process(pid, start):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                        ended += 1
        with contextlib.suppress(OSError):
            path.unlink()
        if ended:
            killed += ended
            drivers.append(driver)
    return Ended(killed, tuple(drivers))


def run_mark(driver: int, started: int) -> str:
    """The value of `RUN_MARK` for the Ray of the run `driver` started at `started`.

    >>> run_mark(4242, 1234567)
    '4242-1234567'
    """
    return f"{driver}-{started}"


def marked_ray(mark: str, *, after: int = 0) -> dict[int, int]:
    """This user's Ray processes whose environment carries `RUN_MARK` set to `mark`, started
    no earlier than `after` (pid -> start time); read from /proc, empty where it cannot be."""
    wanted = f"{RUN_MARK}={mark}".encode()
    found: dict[int, int] = {}
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid <= 1 or pid == os.getpid():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if wanted not in environment.split(b"\0") or not is_ray(pid):
            continue
        started = start_time(pid)
        if started is not None and started >= after:
            found[pid] = started
    return found


def _read_record(path: Path) -> tuple[str | None, int, int, list[tuple[int, int]]] | None:
    """The record at `path`, None (and left as it is) when it is not a regular file of ours
    holding a record."""
    try:
        status = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
        return None
    if status.st_size > _MAX_RECORD_BYTES:
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    boot = data.get("boot_id")
    driver = data.get("driver")
    ray = data.get("ray")
    if not (boot is None or isinstance(boot, str)) or not isinstance(ray, list):
        return None
    run = _pair(driver)
    processes = [_pair(item) for item in ray]
    if run is None or None in processes:
        return None
    return boot, run[0], run[1], [pair for pair in processes if pair is not None]


def _pair(value: object) -> tuple[int, int] | None:
    """A `[pid, start time]` pair of positive integers, else None."""
    match value:
        case [pid, start] if type(pid) is int and type(start) is int and pid > 0 and start > 0:
            return pid, start
        case _:
            return None


def _same_ray_process(pid: int, start: int) -> bool:
    """Whether `pid` is still the process recorded: same start time, this user's, and a Ray
    process by its command line."""
    if pid <= 1 or pid == os.getpid() or start_time(pid) != start:
        return False
    try:
        if (PROC / str(pid)).stat().st_uid != os.getuid():
            return False
    except OSError:
        return False
    return is_ray(pid)


def is_ray(pid: int) -> bool:
    """Whether the command line of `pid` is a Ray process's (`ray::...`, or run from Ray's
    package folder)."""
    try:
        command = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False
    return command.startswith(b"ray::") or b"/ray/" in command


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of `pid`, None when it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # After the command name (which may hold spaces and parentheses): state, ppid, ... and the
    # start time, field 22 of the line, 20th after the name.
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[19])


def start_time(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot; None when it is gone."""
    found = proc_stat(pid)
    return None if found is None else found[1]


__all__ = [
    "Ended",
    "boot_id",
    "end_stale_ray",
    "RUN_MARK",
    "is_ray",
    "marked_ray",
    "proc_stat",
    "record_path",
    "run_mark",
    "start_time",
    "state_folder",
    "write_record",
]
