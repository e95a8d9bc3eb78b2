"""Output that is piped or logged keeps every number and name whole (issue 20 item 2): off a
terminal rich assumed 80 columns and cut cells ("60…", "usab…", "stream_without_finish_r…")."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.cli.cli_harness import ASSAY

from assay.reports import load_report
from assay.reports.step_words import offered
from assay.validators import BUILTIN_VALIDATORS

SWEEP_RUN = Path(__file__).parents[1] / "reports" / "stored_runs" / "6364a6d"


def run_piped(*args: str | Path, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    """`assay ARGS` with stdout a pipe, as in a CI log: `COLUMNS` unset unless given."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env.update({"NO_COLOR": "1", "TERM": "dumb"})
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [str(ASSAY), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def test_validators_piped_prints_every_name_whole() -> None:
    result = run_piped("validators")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    for builtin in BUILTIN_VALIDATORS:
        assert builtin.name in result.stdout.split(), builtin.name


def test_validators_on_a_narrow_console_wraps_instead_of_cutting() -> None:
    result = run_piped("validators", columns="50")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 50


def _sweep_copy(tmp_path: Path) -> Path:
    run_dir = tmp_path / "sweep"
    shutil.copytree(SWEEP_RUN, run_dir)
    return run_dir


def test_a_piped_sweep_table_keeps_every_cell_whole(tmp_path: Path) -> None:
    run_dir = _sweep_copy(tmp_path)
    result = run_piped("revalidate", run_dir)
    assert result.returncode in (0, 1), result.stderr
    assert "…" not in result.stdout
    table = result.stdout[result.stdout.index("Steps (latency") :]
    rows = [line.split() for line in table.splitlines()]
    for step in load_report(run_dir).steps:
        # Each step's row holds its offered load and stop, whole, on one line.
        cells = " ".join(offered(step).split())
        assert any(" ".join(row[1:]).startswith(cells) for row in rows), (cells, table)
    assert "max requests" in table
    assert "usable" in table


def test_a_sweep_table_on_a_narrow_console_cuts_nothing(tmp_path: Path) -> None:
    result = run_piped("revalidate", _sweep_copy(tmp_path), columns="60")
    assert result.returncode in (0, 1), result.stderr
    assert "…" not in result.stdout


def test_a_reader_that_leaves_early_is_not_a_crash(tmp_path: Path) -> None:
    """`assay report RUN | head -1`: once the reader has closed the pipe, assay ends as a shell
    command ended by SIGPIPE does (141), with no crash line and no crash file."""
    run_dir = _sweep_copy(tmp_path)
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp_path)}
    reader, writer = os.pipe()
    os.close(reader)  # the reader has left before the first line: every write finds it gone
    with subprocess.Popen(
        [str(ASSAY), "report", str(run_dir), "--definitions"],
        stdout=writer,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    ) as assay:
        os.close(writer)
        stderr = assay.communicate(timeout=120)[1].decode()
    assert assay.returncode == 141, stderr
    assert "crash" not in stderr
    assert "internal error" not in stderr
    assert not list(tmp_path.glob("assay-crash-*"))
