"""A Ray that assay starts ends with the driver, even a driver killed with SIGKILL (issue 21.7).

After `kill -9` of `assay run --engine ray`, Ray's DashboardAgent and RuntimeEnvAgent stayed
alive (reparented, deaf to SIGTERM). The watchdog notes the driver's Ray descendants while the
driver lives and kills those left once it is gone. Here the Ray agent is stood in for by a
process that ignores SIGTERM and runs from a path holding `/ray/`, as Ray's processes do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.load.test_ray_leftovers import wait_exec

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

WAIT_S = 20.0

SLEEPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"

DRIVER = textwrap.dedent(
    """
    import subprocess, sys, time
    from assay.engine.ray_watchdog import start_watchdog
    assert start_watchdog(__import__("os").getpid())
    agent = subprocess.Popen(
        [sys.argv[1], "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
         "time.sleep(120)"],
        start_new_session=True,
    )
    print(agent.pid, flush=True)
    time.sleep(120)
    """
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_ray_processes_of_a_killed_driver_are_ended(tmp_path: Path) -> None:
    ray_bin = tmp_path / "ray"
    ray_bin.mkdir()
    fake_agent = ray_bin / "python"
    fake_agent.symlink_to(sys.executable)
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(fake_agent)], stdout=subprocess.PIPE, text=True
    )
    assert driver.stdout is not None
    agent = int(driver.stdout.readline())
    try:
        # The watchdog knows a Ray process by its command line, set at the end of its exec.
        assert wait_exec(agent, [str(fake_agent), "-c", SLEEPER])
        # The watchdog notes descendants every half second: give it two looks at the agent.
        time.sleep(1.5)
        assert alive(agent)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while alive(agent) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(agent), "the Ray process outlived its killed driver"
    finally:
        driver.stdout.close()
        if alive(agent):
            os.kill(agent, signal.SIGKILL)


def test_a_ray_process_the_watchdog_never_saw_is_ended_by_the_run_mark(tmp_path: Path) -> None:
    """A driver killed while Ray was starting: an agent started after the watchdog's last look
    (here not even the driver's descendant) is found by the run's mark in its environment."""
    from assay.engine.ray_leftovers import RUN_MARK, run_mark, start_time

    ray_bin = tmp_path / "ray"
    ray_bin.mkdir()
    fake_agent = ray_bin / "python"
    fake_agent.symlink_to(sys.executable)
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(fake_agent)], stdout=subprocess.PIPE, text=True
    )
    assert driver.stdout is not None
    own_agent = int(driver.stdout.readline())
    started = start_time(driver.pid)
    assert started is not None
    environment = {k: v for k, v in os.environ.items() if k != RUN_MARK}
    argv = [str(fake_agent), "-c", SLEEPER]
    marked = subprocess.Popen(argv, env=environment | {RUN_MARK: run_mark(driver.pid, started)})
    unmarked = subprocess.Popen(argv, env=environment)
    try:
        # The mark is read from /proc's environment, which shows it once the exec has finished.
        assert wait_exec(marked.pid, argv)
        assert wait_exec(unmarked.pid, argv)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while marked.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marked.poll() == -signal.SIGKILL, "the marked Ray process outlived its driver"
        assert unmarked.poll() is None, "a Ray process without the run's mark was ended"
    finally:
        driver.stdout.close()
        for process in (marked, unmarked):
            if process.poll() is None:
                process.kill()
            process.wait()
        if alive(own_agent):
            os.kill(own_agent, signal.SIGKILL)
