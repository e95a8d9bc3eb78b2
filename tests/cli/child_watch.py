"""A `sitecustomize` put on an `assay` command's PYTHONPATH: it logs every child process the
command starts (its pid and command line), and can send the command's process group a SIGINT,
as a terminal's Ctrl-C, at a chosen moment of the run: when the embedded mock is being started
or when report.json is being written. Observed, never timed: a test asserts what happened, not
how long it took."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

Moment = Literal["never", "mock_start", "report_write"]
"""When the watch sends SIGINT to the run's process group."""

_SITECUSTOMIZE = """
import os
import signal
import subprocess
import time

_LOG = {log!r}
_MOMENT = {moment!r}
_SENT = []
_init = subprocess.Popen.__init__
_link = os.link


def _interrupt(moment):
    if _MOMENT == moment and not _SENT and os.getpid() == os.getpgrp():
        _SENT.append(moment)
        with open(_LOG, "a") as log:
            log.write(f"sigint {{moment}} {{time.monotonic()}}\\n")
        os.killpg(os.getpgrp(), signal.SIGINT)


def _logged(self, args, *rest, **options):
    _init(self, args, *rest, **options)
    words = args if isinstance(args, (list, tuple)) else [args]
    with open(_LOG, "a") as log:
        log.write(f"child {{self.pid}} " + " ".join(map(str, words))[:200] + "\\n")
    if any("assay.mock.server_child" in str(word) for word in words):
        _interrupt("mock_start")


def _linked(source, target, *rest, **options):
    if os.path.basename(str(target)) == "report.json":
        _interrupt("report_write")
    return _link(source, target, *rest, **options)


subprocess.Popen.__init__ = _logged
os.link = _linked
"""


def watch(folder: Path, moment: Moment = "never") -> tuple[Path, Path]:
    """The folder to put on PYTHONPATH (made under `folder`) and the log its hook writes."""
    hook = folder / "watch_hook"
    hook.mkdir()
    log = folder / "children.log"
    (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(log=str(log), moment=moment))
    return hook, log


def children(log: Path) -> list[tuple[int, str]]:
    """The pid and command line of every child process the watched command started."""
    if not log.exists():
        return []
    found = []
    for line in log.read_text().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "child":
            pid, _, command = rest.partition(" ")
            found.append((int(pid), command))
    return found


def sigint_sent_at(log: Path) -> float | None:
    """When (`time.monotonic()`, the same clock in every process) the watch sent SIGINT, for
    figures reported outside the tests."""
    if not log.exists():
        return None
    for line in log.read_text().splitlines():
        if line.startswith("sigint"):
            return float(line.split()[2])
    return None


def interrupted_at(log: Path) -> list[str]:
    """The moments the watch sent SIGINT at."""
    if not log.exists():
        return []
    return [line.split()[1] for line in log.read_text().splitlines() if line.startswith("sigint")]


def assert_all_ended(pids: Iterable[int], limit_s: float = 30.0) -> None:
    """Every pid is gone (waited for at most `limit_s`, a safety bound, not a timing check)."""
    deadline = time.monotonic() + limit_s
    for pid in pids:
        while _alive(pid):
            assert time.monotonic() < deadline, f"child {pid} still running"
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (ended, not yet reaped by init) counts as ended.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stop(pid: int) -> None:
    """SIGKILL a test's leftover process group (cleanup only)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
