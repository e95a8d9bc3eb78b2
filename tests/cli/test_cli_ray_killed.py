"""`kill -9` of `assay run --engine ray` leaves no Ray process of that run (issue 21.7).

Ray's DashboardAgent and RuntimeEnvAgent outlived a driver killed with SIGKILL; they are in the
run's session (the harness gives every run its own), so any process of it still alive after the
kill is a leftover.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.cli_harness import FAST, start_assay
from tests.cli.test_cli_sigterm_early import session_members
from tests.ray_support import ray_environment

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc"),
]

START_S = 120.0
GONE_S = 20.0


@pytest.fixture
def ray_temp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # A short folder: Ray's socket names in it are limited to ~107 bytes.
    with ray_environment(tmp_path_factory.mktemp("rk")) as temp:
        pytest.importorskip("ray")
        yield temp


def test_a_killed_driver_leaves_no_ray_process_of_its_own(ray_temp: Path, tmp_path: Path) -> None:
    args = ("run", *FAST, "--engine", "ray", "--ray-workers", "1", "--max-seconds", "60")
    process = start_assay(*args, "--output-dir", tmp_path / "run")
    assert process.stdout is not None
    # Wait (bounded) until the actors run: Ray and its agents are all up by then.
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if selector.select(timeout=1.0) and "engine:" in process.stdout.readline():
            break
        assert process.poll() is None, "the run ended before its actors started"
    else:
        process.kill()
        raise AssertionError(f"no Ray actors after {START_S} s")
    assert len(session_members(process.pid)) > 3  # the driver and Ray's processes
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    assert process.stderr is not None
    process.stderr.close()
    deadline = time.monotonic() + GONE_S
    while (left := session_members(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], f"processes of the killed run still alive: {left}"


def _marked_members(session: int, named: bytes = b"") -> list[int]:
    """The processes of `session` that carry a run's Ray mark (Ray's, started by the run),
    whose command line holds `named`."""
    from assay.engine.ray_leftovers import RUN_MARK

    marked = []
    for pid in session_members(session):
        with contextlib.suppress(OSError):
            if f"{RUN_MARK}=".encode() in Path(f"/proc/{pid}/environ").read_bytes() and (
                named in Path(f"/proc/{pid}/cmdline").read_bytes().lower()
            ):
                marked.append(pid)
    return marked


def _watchdogs_of(driver: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                command = (entry / "cmdline").read_bytes().split(b"\0")
                if b"assay.engine.ray_watchdog" in command and str(driver).encode() in command:
                    found.append(int(entry.name))
    return found


def test_a_run_killed_while_ray_starts_is_cleaned_up_by_the_next_start(
    ray_temp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL of the run and of its watchdog as soon as Ray's agents run, before `ray.init`
    returned: the record exists already (it is written before Ray starts), and after the next
    start's clean-up no process carrying the run's mark is left, and no record."""
    from assay.engine.ray_leftovers import end_stale_ray, state_folder

    state = tmp_path / "xdg"
    state.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(state))
    args = ("run", *FAST, "--engine", "ray", "--ray-workers", "1", "--max-seconds", "60")
    process = start_assay(*args, "--output-dir", tmp_path / "run")
    try:
        deadline = time.monotonic() + START_S
        # Ray's agents (the processes a kill left behind) are started early by the raylet.
        while not _marked_members(process.pid, b"/agent"):
            assert process.poll() is None, "the run ended before Ray started"
            assert time.monotonic() < deadline, f"no Ray process after {START_S} s"
            time.sleep(0.02)
        assert list((state / "assay").glob("ray-*.json")), "no record while Ray starts"
        watchdogs = _watchdogs_of(process.pid)
        assert watchdogs, "no watchdog while Ray starts"
        for watchdog in watchdogs:
            os.kill(watchdog, signal.SIGKILL)
        process.send_signal(signal.SIGKILL)
        process.wait()
        # Ray ends some of its processes with the driver; the next start ends the rest.
        time.sleep(1.0)
        folder = state_folder(state / "assay")
        assert folder is not None
        end_stale_ray(folder)
        deadline = time.monotonic() + GONE_S
        while (left := _marked_members(process.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == [], f"Ray processes of the killed run still alive: {left}"
        assert list(folder.iterdir()) == []
    finally:
        for pid in session_members(process.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
