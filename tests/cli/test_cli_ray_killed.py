"""`kill -9` of `assay run --engine ray` leaves no Ray process of that run (issue 21.7).

Ray's DashboardAgent and RuntimeEnvAgent outlived a driver killed with SIGKILL; they are in the
run's session (the harness gives every run its own), so any process of it still alive after the
kill is a leftover.
"""

from __future__ import annotations

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
