"""Ctrl-C in the middle of `assay run`: exit code 130, the partial report written, and every
request that was dispatched accounted for, the ones cut off as cancelled."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.cli.child_watch import (
    Moment,
    assert_all_ended,
    children,
    interrupted_at,
    stop,
    watch,
)
from tests.cli.cli_harness import ASSAY, assay_env, assert_every_request_accounted

STARTUP_LIMIT_S = 30.0
EXIT_LIMIT_S = 30.0


def read_until(process: subprocess.Popen[bytes], marker: bytes, limit_s: float) -> bytes:
    """What the process printed up to the first line holding `marker`, waiting at most
    `limit_s` (the deadline is a test safety bound, not a timing assertion)."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + limit_s
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {marker!r} after {limit_s} s:\n{seen.decode()}"
        readable, _, _ = select.select([process.stdout], [], [], min(left, 0.5))
        if readable:
            chunk = os.read(process.stdout.fileno(), 65536)
            assert chunk, f"assay exited before {marker!r}:\n{seen.decode()}"
            seen += chunk
    return seen


def interrupt_mid_step(command: list[str]) -> tuple[int, str, str]:
    """Run `command` in its own process group (as a terminal's Ctrl-C reaches the whole
    foreground group), send SIGINT once a progress line shows requests in flight, and give its
    exit code, stdout and stderr."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=assay_env(),
        start_new_session=True,
    )
    try:
        before = read_until(process, b"step 1/1", STARTUP_LIMIT_S)
        time.sleep(0.5)
        os.killpg(process.pid, signal.SIGINT)
        rest, stderr = process.communicate(timeout=EXIT_LIMIT_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return process.returncode, (before + rest).decode(), stderr.decode()


@pytest.mark.parametrize("processes", [1, 2])
def test_sigint_mid_run_exits_130_with_every_dispatched_request_recorded(
    tmp_path: Path, processes: int
) -> None:
    # 16 tokens 20 ms apart: each request takes ~0.3 s, so 8 are always in flight. A zero rate
    # replaces the demo faults: any error below was made by the interruption itself.
    command = [
        str(ASSAY), "run", "--output-dir", str(tmp_path),
        "--mock-ttft-ms", "0", "--mock-itl-ms", "20", "--output-tokens", "16",
        "--prompt-tokens", "32", "--profile", "concurrent", "--concurrency", "8",
        "--processes", str(processes), "--max-seconds", "30", "--mock-fault", "http_500=0",
    ]  # fmt: skip
    returncode, stdout, stderr = interrupt_mid_step(command)
    assert returncode == 130, stdout + stderr
    assert "interrupted" in stdout
    # Issue 38.17: the run's own line says it; no second, bare "interrupted" follows on stderr.
    assert stdout.count("interrupted: the partial report") == 1
    assert "interrupted" not in stderr.split(), stderr
    # Issue 10.7: a partial run gets no verdict, never "VALID RUN".
    assert "INTERRUPTED: partial results" in stdout
    assert "VALID RUN" not in stdout
    report = assert_every_request_accounted(tmp_path)
    assert report.run_config["interrupted"] is True
    (step,) = report.steps
    assert step.stopped_by == "stop_signal"
    outcomes = report.totals.outcomes
    assert outcomes.cancelled > 0
    assert outcomes.completed > 0
    # Ctrl-C cuts requests off; it must not turn them into server errors.
    assert outcomes.errored == 0, report.totals.errors_by_code
    assert not (tmp_path / "shards").exists()


# The moment the watch sends SIGINT at; during the load the test sends it itself.
_WATCHED: dict[str, Moment] = {
    "mock_start": "mock_start",
    "load": "never",
    "report_write": "report_write",
}


@pytest.mark.parametrize("moment", sorted(_WATCHED))
def test_sigint_at_any_moment_of_a_run_ends_it_with_130_and_no_child_left(
    tmp_path: Path, moment: str
) -> None:
    """Ctrl-C while the embedded mock starts, while the load runs, or while report.json is
    written: the run ends (bounded waits, no timing assert), exit code 130, every process it
    started ended with it. The watch (`child_watch`) sends the SIGINT at the exact moment."""
    hook, log = watch(tmp_path, _WATCHED[moment])
    command = [
        str(ASSAY), "run", "--output-dir", str(tmp_path / "run"),
        "--mock-ttft-ms", "0", "--mock-itl-ms", "20", "--output-tokens", "16",
        "--prompt-tokens", "32", "--profile", "concurrent", "--concurrency", "8",
        "--processes", "2", "--max-seconds", "3" if moment == "report_write" else "30",
        "--mock-fault", "http_500=0",
    ]  # fmt: skip
    env = {
        **assay_env(),
        "PYTHONPATH": os.pathsep.join(filter(None, (str(hook), os.environ.get("PYTHONPATH")))),
    }
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        if moment == "load":
            read_until(process, b"step 1/1", STARTUP_LIMIT_S)
            os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=EXIT_LIMIT_S)
    finally:
        if process.poll() is None:
            stop(process.pid)
            process.communicate()
    output = (stdout + stderr).decode()
    assert process.returncode == 130, output
    assert "Traceback" not in output
    if moment != "load":
        assert interrupted_at(log) == [moment], log.read_text()
    started = children(log)
    assert any("assay.mock.server_child" in line for _, line in started), started
    assert_all_ended(pid for pid, _ in started)
