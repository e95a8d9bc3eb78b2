"""A reader of standard output that leaves (`assay ... | head -1`, `| true`) ends every command
with 141, as a shell reports a command ended by SIGPIPE: rich's console and typer's help each
exited 1, which for `assay run` reads as INVALID RUN."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.cli.cli_harness import ASSAY, FAST, assay_env

from assay.cli.exit_codes import EXIT_PIPE_CLOSED
from assay.run_folder import CRASH_FILE, REPORT_FILE

STORED_RUN = Path(__file__).parents[1] / "reports" / "stored_runs" / "6364a6d"


def run_unread(*args: str | Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`assay ARGS` writing into a pipe whose reader closed it before the first line, so every
    write to standard output finds the reader gone."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [str(ASSAY), *map(str, args)],
            stdout=writer,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env={**assay_env(), "TMPDIR": str(tmp_path)},
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)


def assert_ended_quietly(result: subprocess.CompletedProcess[str], tmp_path: Path) -> None:
    """Exit 141, nothing on stderr about it (no crash line, no Python traceback)."""
    assert result.returncode == EXIT_PIPE_CLOSED, result.stderr
    assert "error" not in result.stderr
    assert "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr
    assert not list(tmp_path.glob("assay-crash-*"))


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("--version",),
        ("run", "--help"),
        ("mock", "--help"),
        ("compare", "--help"),
    ],
    ids=" ".join,
)
def test_help_read_by_nobody_exits_141(args: tuple[str, ...], tmp_path: Path) -> None:
    assert_ended_quietly(run_unread(*args, tmp_path=tmp_path), tmp_path)


def test_validators_read_by_nobody_exits_141(tmp_path: Path) -> None:
    assert_ended_quietly(run_unread("validators", tmp_path=tmp_path), tmp_path)


def test_compare_read_by_nobody_exits_141(tmp_path: Path) -> None:
    result = run_unread("compare", STORED_RUN, STORED_RUN, tmp_path=tmp_path)
    assert_ended_quietly(result, tmp_path)


def test_a_run_read_by_nobody_exits_141_and_still_writes_its_report(tmp_path: Path) -> None:
    """The run is not cut short by its console: its report is written, and the exit code says
    its output was not read, never a verdict (1 would say INVALID RUN)."""
    run_dir = tmp_path / "run"
    result = run_unread(
        "run",
        *FAST,
        "--max-requests",
        "6",
        "--processes",
        "1",
        "--output-dir",
        run_dir,
        tmp_path=tmp_path,
    )
    assert_ended_quietly(result, tmp_path)
    assert (run_dir / REPORT_FILE).is_file()
    assert not (run_dir / CRASH_FILE).exists()
