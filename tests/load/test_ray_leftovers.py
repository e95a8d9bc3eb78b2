"""A Ray that an earlier run started and left, its run and its watchdog both gone, is ended by the
next run that starts its own Ray (issue 21.7); a live run's Ray and any process no record names
as it was are left alone. Ray's processes are stood in for by `sleep` run from a folder named
`ray` (Ray's processes run from its package folder, `.../ray/...`)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import orjson
import pytest

from assay.engine.ray_leftovers import (
    RUN_MARK,
    end_stale_ray,
    marked_ray,
    record_path,
    run_mark,
    start_time,
    state_folder,
    write_record,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

WAIT_S = 20.0


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def wait_exec(pid: int, argv: list[str], wait_s: float = WAIT_S) -> bool:
    """Wait until `pid`'s /proc command line is `argv`: its exec has finished.

    `Popen` returns once the child's exec is past its point of no return, and /proc lists the
    pid from its fork on; but its command line and environment as /proc shows them are set a
    moment later, at the end of the exec. A busy machine can hold the child in between, and a
    test reading /proc then sees an empty command line and environment: no Ray process, no
    mark. (That was the flaky `assert {} == {pid: start}` of `marked_ray` under load.)"""
    wanted = b"\0".join(part.encode() for part in argv) + b"\0"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == wanted:
                return True
        except OSError:
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


class Spawn(Protocol):
    def __call__(self, *, ray: bool = True, mark: str | None = None) -> subprocess.Popen[bytes]: ...


@pytest.fixture
def fake_ray(tmp_path: Path) -> Path:
    """`sleep`, run from a folder named `ray`, as a Ray process looks by its command line."""
    sleep = shutil.which("sleep")
    assert sleep is not None
    (tmp_path / "ray").mkdir()
    program = tmp_path / "ray" / "sleep"
    program.symlink_to(sleep)
    return program


@pytest.fixture
def spawn(fake_ray: Path) -> Iterator[Spawn]:
    """Starts `sleep 120`, as a Ray process unless `ray=False`; each is ended at teardown."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*, ray: bool = True, mark: str | None = None) -> subprocess.Popen[bytes]:
        environment = {k: v for k, v in os.environ.items() if k != RUN_MARK}
        if mark is not None:
            environment[RUN_MARK] = mark
        argv = [str(fake_ray) if ray else "sleep", "120"]
        process = subprocess.Popen(argv, env=environment)
        started.append(process)
        assert wait_exec(process.pid, argv), "the process did not finish its exec"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def test_a_process_is_seen_by_proc_only_once_its_exec_has_finished(tmp_path: Path) -> None:
    # The shell exists (/proc has its start time) long before it becomes `sleep`: a check of
    # the start time alone says "started" while the command line is still the shell's.
    sleep = shutil.which("sleep")
    assert sleep is not None
    shell = subprocess.Popen(
        ["sh", "-c", f"read line; exec {sleep} 120"], stdin=subprocess.PIPE, text=True
    )
    try:
        assert shell.stdin is not None
        assert start_time(shell.pid) is not None
        assert not wait_exec(shell.pid, [sleep, "120"], wait_s=0.0)
        shell.stdin.write("go\n")
        shell.stdin.flush()
        assert wait_exec(shell.pid, [sleep, "120"])
    finally:
        shell.kill()
        shell.communicate()  # closes its stdin


def dead_driver() -> tuple[int, int]:
    """The pid and start time of a process that has ended."""
    process = subprocess.Popen(["sleep", "120"])
    started = start_time(process.pid)
    assert started is not None
    process.kill()
    process.wait()
    return process.pid, started


def _record(folder: Path, driver: tuple[int, int], *processes: tuple[int, int]) -> Path:
    path = record_path(folder, *driver)
    write_record(path, *driver, dict(processes), new=True)
    return path


def _as_recorded(process: subprocess.Popen[bytes]) -> tuple[int, int]:
    started = start_time(process.pid)
    assert started is not None
    return process.pid, started


def test_the_ray_of_a_gone_run_is_ended_and_its_record_removed(
    tmp_path: Path, spawn: Spawn
) -> None:
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    agent = spawn()
    driver = dead_driver()
    record = _record(folder, driver, _as_recorded(agent))
    ended = end_stale_ray(folder)
    assert ended.processes == 1
    assert ended.drivers == (driver[0],)
    assert ended.line() == (
        f"engine: ended 1 Ray process left by an earlier run (pid {driver[0]}, gone)"
    )
    assert wait_gone(agent.pid)
    assert not record.exists()


def test_the_ray_of_a_run_still_going_is_left_alone(tmp_path: Path, spawn: Spawn) -> None:
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    agent = spawn()
    running = spawn(ray=False)
    record = _record(folder, _as_recorded(running), _as_recorded(agent))
    assert end_stale_ray(folder).line() is None
    assert alive(agent.pid)
    assert record.exists()


def test_processes_no_record_names_as_they_are_are_left_alone(tmp_path: Path, spawn: Spawn) -> None:
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    not_ray = spawn(ray=False)
    reused = spawn()
    pid, started = _as_recorded(reused)
    # A process that is not Ray's, and a pid whose start time is not the one recorded (reused).
    record = _record(folder, dead_driver(), _as_recorded(not_ray), (pid, started + 1))
    ended = end_stale_ray(folder)
    assert ended.processes == 0
    assert alive(not_ray.pid)
    assert alive(reused.pid)
    assert not record.exists()


def test_a_run_killed_while_ray_was_starting_leaves_nothing_the_next_run_misses(
    tmp_path: Path, spawn: Spawn
) -> None:
    """The record is written before Ray starts, naming no process yet; the agents Ray started
    before the kill carry the run's mark in their environment and are ended by it. A Ray the
    user runs (no mark), a Ray of another run (another mark), and a marked process that is not
    Ray's are left alone."""
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    driver = dead_driver()
    mark = run_mark(*driver)
    agents = [spawn(mark=mark), spawn(mark=mark)]
    users_ray = spawn()
    another_run = spawn(mark=run_mark(driver[0], driver[1] + 1))
    not_ray = spawn(ray=False, mark=mark)
    assert marked_ray(mark).keys() == {agent.pid for agent in agents}
    record = _record(folder, driver)
    ended = end_stale_ray(folder)
    assert ended.processes == 2
    assert ended.drivers == (driver[0],)
    assert all(wait_gone(agent.pid) for agent in agents)
    assert alive(users_ray.pid)
    assert alive(another_run.pid)
    assert alive(not_ray.pid)
    assert not record.exists()


def test_marked_processes_of_a_run_still_going_are_left_alone(tmp_path: Path, spawn: Spawn) -> None:
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    running = _as_recorded(spawn(ray=False))
    agent = spawn(mark=run_mark(*running))
    record = _record(folder, running)
    assert end_stale_ray(folder).processes == 0
    assert alive(agent.pid)
    assert record.exists()


def test_a_marked_process_started_before_the_run_is_not_taken_for_its_own(spawn: Spawn) -> None:
    agent = spawn(mark="1-1")
    started = start_time(agent.pid)
    assert started is not None
    assert marked_ray("1-1", after=started) == {agent.pid: started}
    assert marked_ray("1-1", after=started + 1) == {}


def test_a_record_of_another_boot_ends_nothing(tmp_path: Path, spawn: Spawn) -> None:
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    agent = spawn()
    driver = dead_driver()
    path = record_path(folder, *driver)
    path.write_bytes(
        orjson.dumps(
            {"boot_id": "another-boot", "driver": list(driver), "ray": [list(_as_recorded(agent))]}
        )
    )
    assert end_stale_ray(folder).processes == 0
    assert alive(agent.pid)
    assert not path.exists()


def test_a_link_or_a_file_that_is_no_record_is_neither_read_nor_removed(
    tmp_path: Path, spawn: Spawn
) -> None:
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    agent = spawn()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(
        orjson.dumps(
            {"boot_id": None, "driver": list(dead_driver()), "ray": [list(_as_recorded(agent))]}
        )
    )
    link = folder / "ray-1-1.json"
    link.symlink_to(elsewhere)
    garbage = folder / "ray-2-2.json"
    garbage.write_text("not json", encoding="utf-8")
    assert end_stale_ray(folder).processes == 0
    assert alive(agent.pid)
    assert link.is_symlink()
    assert garbage.exists()
    assert elsewhere.exists()


def test_a_state_folder_open_to_others_or_a_link_is_not_used(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o777)
    open_folder.chmod(0o777)
    assert state_folder(open_folder) is None
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    assert state_folder(link) is None
    assert state_folder(tmp_path / "fresh") == tmp_path / "fresh"
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o700


DRIVER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from pathlib import Path
    from assay.engine.ray_leftovers import record_path, start_time, write_record
    from assay.engine.ray_watchdog import start_watchdog
    folder = Path(sys.argv[2])
    me = os.getpid()
    record = record_path(folder, me, start_time(me))
    write_record(record, me, start_time(me), {}, new=True)
    assert start_watchdog(me, record)
    agent = subprocess.Popen([sys.argv[1], "120"], start_new_session=True)
    print(agent.pid, flush=True)
    time.sleep(120)
    """
)


def _watchdog_of(driver: int) -> int:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"assay.engine.ray_watchdog" in command and str(driver).encode() in command:
            return int(entry.name)
    raise AssertionError("no watchdog found")


def test_a_run_whose_watchdog_was_killed_too_is_cleaned_up_by_the_next(
    tmp_path: Path, fake_ray: Path
) -> None:
    folder = state_folder(tmp_path / "state")
    assert folder is not None
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(fake_ray), str(folder)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert driver.stdout is not None
    agent = int(driver.stdout.readline())
    try:
        watchdog = _watchdog_of(driver.pid)
        # The watchdog notes descendants every half second and adds them to the record.
        deadline = time.monotonic() + WAIT_S
        record = next(folder.glob("ray-*.json"))
        while str(agent) not in record.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert str(agent) in record.read_text()
        os.kill(watchdog, signal.SIGKILL)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=WAIT_S)
        assert wait_gone(watchdog)
        time.sleep(0.5)
        assert alive(agent), "the fake agent should outlive its driver and watchdog"
        ended = end_stale_ray(folder)
        assert ended.processes == 1
        assert ended.drivers == (driver.pid,)
        assert wait_gone(agent)
        assert list(folder.iterdir()) == []
    finally:
        driver.stdout.close()
        if alive(agent):
            os.kill(agent, signal.SIGKILL)
