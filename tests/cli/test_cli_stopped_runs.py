"""`assay run` stopped or starved from outside: SIGTERM, a killed load process, a full disk, a
client that cannot keep its schedule (issue 9 item 6, issue 10 item 5).

Each run has its own process group, killed at the end whatever happened; the time limits are
safety bounds, not timing assertions.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # no stubs installed; only children() is used
import pytest
from tests.cli.cli_harness import (
    ASSAY,
    assay_env,
    assert_every_request_accounted,
    read_record_lines,
    read_report,
    run_fast,
)
from tests.cli.test_cli_interrupt import EXIT_LIMIT_S, STARTUP_LIMIT_S, read_until

# Answers of 16 tokens 20 ms apart: about 0.3 s each, so requests are always in flight.
SLOW_ANSWERS = (
    "--mock-ttft-ms", "0", "--mock-itl-ms", "20", "--output-tokens", "16",
    "--prompt-tokens", "32", "--mock-fault", "http_500=0",
)  # fmt: skip


@contextlib.contextmanager
def started_run(*args: str | Path) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [str(ASSAY), "run", *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=assay_env(),
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


def test_sigterm_mid_run_exits_130_with_the_partial_report_and_every_record(
    tmp_path: Path,
) -> None:
    command: list[str | Path] = [
        "--output-dir", tmp_path, *SLOW_ANSWERS, "--profile", "concurrent",
        "--concurrency", "8", "--processes", "2", "--max-seconds", "30",
    ]  # fmt: skip
    with started_run(*command) as process:
        before = read_until(process, b"step 1/1", STARTUP_LIMIT_S)
        time.sleep(0.5)
        # As `kill`, Kubernetes and systemd's main-process mode do: the main process only.
        process.send_signal(signal.SIGTERM)
        rest, stderr = process.communicate(timeout=EXIT_LIMIT_S)
    stdout = (before + rest).decode()
    assert process.returncode == 130, stdout + stderr.decode()
    assert "Traceback" not in stderr.decode()
    report = assert_every_request_accounted(tmp_path)
    assert report.run_config["interrupted"] is True
    (step,) = report.steps
    assert step.stopped_by == "stop_signal"
    assert report.totals.outcomes.cancelled > 0
    assert report.totals.outcomes.errored == 0, report.totals.errors_by_code


def test_a_killed_load_process_ends_the_run_degraded_with_its_records_kept(
    tmp_path: Path,
) -> None:
    command: list[str | Path] = [
        "--output-dir", tmp_path, *SLOW_ANSWERS, "--profile", "constant", "--rate", "40",
        "--processes", "2", "--max-seconds", "5",
    ]  # fmt: skip
    with started_run(*command) as process:
        before = read_until(process, b"step 1/1", STARTUP_LIMIT_S)
        time.sleep(1.5)  # its shard is flushed every second: some of its records are on disk
        [child] = [
            child
            for child in psutil.Process(process.pid).children()
            if "assay.engine.load_child" in " ".join(child.cmdline())
        ]
        child.send_signal(signal.SIGKILL)
        rest, stderr = process.communicate(timeout=EXIT_LIMIT_S)
    stdout = (before + rest).decode()
    assert process.returncode == 1, stdout + stderr.decode()  # INVALID, not a crash
    assert "Traceback" not in stderr.decode()
    assert "degraded" in stdout
    report = assert_every_request_accounted(tmp_path)
    assert report.run_config["degraded"] is True
    (step,) = report.steps
    assert step.lost_processes == ("load process 1 was killed by SIGKILL",)
    # Process 1's slice is half of 40 req/s over 3 s: what it recorded before the kill is in
    # the records; the rest it had sent is lost, and the rest it owed was never sent.
    assert step.scheduled is not None
    assert step.scheduled == step.metrics.outcomes.dispatched + step.not_sent + step.lost
    assert step.not_sent > 0
    # Process 1 owns the odd indices: the records it wrote before the kill are kept.
    kept = [line for line in read_record_lines(tmp_path) if int(line["id"][-8:]) % 2 == 1]
    assert kept
    assert not report.validity.valid
    assert any("load process 1 was killed" in reason for reason in report.validity.reasons)


def test_a_client_far_behind_its_schedule_is_an_invalid_run_that_says_so(
    tmp_path: Path,
) -> None:
    # One process cannot send 20,000 requests per second (a few thousand is its ceiling).
    result = run_fast(
        tmp_path, "--profile", "constant", "--rate", "20000", "--processes", "1",
        "--max-seconds", "0.5", "--mock-fault", "http_500=0",
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "the client was the bottleneck" in result.stdout
    assert "dispatch lag p50" in result.stdout
    assert "INVALID RUN" in result.stdout
    report = assert_every_request_accounted(tmp_path)
    assert any(
        reason.startswith("the client fell behind its schedule")
        for reason in report.validity.reasons
    )
    (step,) = report.steps
    assert step.scheduled is not None
    assert step.scheduled > 9_000
    assert step.not_sent == step.scheduled - step.metrics.outcomes.dispatched > 0
    assert report.totals.not_sent == step.not_sent


def test_a_client_that_keeps_up_is_valid_with_nothing_unsent(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path, "--profile", "constant", "--rate", "20", "--processes", "1",
        "--max-seconds", "1", "--mock-fault", "http_500=0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "bottleneck" not in result.stdout
    (step,) = read_report(tmp_path).steps
    assert step.scheduled == step.metrics.outcomes.dispatched == 20
    assert step.not_sent == 0


@contextlib.contextmanager
def tiny_file_system(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_full_disk_stops_the_run_with_one_error_line(tmp_path: Path, processes: int) -> None:
    with tiny_file_system(tmp_path / "small", "96k") as small:
        result = run_fast(
            small / "run", "--profile", "concurrent", "--concurrency", "8",
            "--processes", str(processes), "--max-seconds", "20",
        )  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: cannot write")
    assert "No space left on device" in line
