"""A run that crashes keeps what it wrote (issue 21, item 9): its shards are merged into
records.jsonl, every whole record kept and a line cut off mid-record dropped and counted, and a
partial report marked crashed is written, never valid. `assay report RUN_DIR` does the same for
a folder a run left without its report (an older assay's crash, a SIGKILL): `unfinished` there,
or `crashed` when the folder holds a traceback. A merge that fails too keeps every shard."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from tests.cli.cli_harness import (
    FAST,
    RUN_TIMEOUT_S,
    assay_env,
    read_record_lines,
    read_report,
    run_assay,
    run_fast,
)

from assay.benchmark.revalidate import revalidate
from assay.cli.crash import CrashSite
from assay.cli.exit_codes import EXIT_CRASH
from assay.cli.guard import guarded
from assay.run_folder import claim_run_folder

# The run's own code, stopped by a bug right after the load: the shards are whole and closed.
# The hook copies them aside first (what the run had written at the crash, for the test to
# compare with) and cuts a record in half at the end of one, as a process stopped mid-write does.
_CRASH_AFTER_LOAD = """
import shutil, sys
import assay.benchmark.run as run

witness = sys.argv[1]

def crash(result, sinks, plan):
    shutil.copytree(sinks.directory, witness)
    shard = sorted(sinks.directory.iterdir())[-1]
    with shard.open("ab") as handle:
        handle.write(b'{"id": "req-cut-off", "step": 0, "sta')
    raise RuntimeError("an invariant of assay broke after the load")

run.recover_lost_shards = crash
from assay.cli.app import main
sys.argv = ["assay", *sys.argv[2:]]
main()
"""


def _run_crashing(witness: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CRASH_AFTER_LOAD, str(witness), *map(str, args)],
        capture_output=True,
        text=True,
        env=assay_env(),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def _shard_bytes(shards: Path) -> bytes:
    """The shards' records in the order records.jsonl keeps them: step, then process."""
    return b"".join(path.read_bytes() for path in sorted(shards.iterdir()))


def test_a_run_that_crashes_merges_its_shards_and_writes_a_report_marked_crashed(
    tmp_path: Path,
) -> None:
    run_dir, witness = tmp_path / "run", tmp_path / "shards-at-the-crash"
    result = _run_crashing(
        witness, "run", *FAST, "--max-requests", "40", "--processes", "2",
        "--output-dir", run_dir,
    )  # fmt: skip
    assert result.returncode == EXIT_CRASH, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    crash_line, merged_line = result.stderr.strip().splitlines()
    assert crash_line.startswith("error: assay failed with an internal error (RuntimeError")
    assert merged_line.startswith("CRASHED RUN: partial results, no verdict; 40 records")
    assert "1 line(s) cut off mid-record dropped" in merged_line
    # Exactly the records the two shards held at the crash, in step and process order.
    assert len(list(witness.iterdir())) == 2
    assert (run_dir / "records.jsonl").read_bytes() == _shard_bytes(witness)
    report = read_report(run_dir)
    assert report.incomplete is not None
    assert report.incomplete.state == "crashed"
    assert report.incomplete.crash_file == "crash-traceback.txt"
    assert (report.incomplete.shards_merged, report.incomplete.lines_dropped) == (2, 1)
    assert report.totals.outcomes.dispatched == len(read_record_lines(run_dir)) == 40
    assert not report.validity.valid
    assert report.validity.reasons[0].startswith("assay crashed during the run")
    assert report.run_config.profile == "throughput"
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "CRASHED RUN" in page
    assert "<title>assay report: CRASHED</title>" in page
    assert (run_dir / "summary.csv").read_text().count("\n") == 2  # header and the one step
    # The shard that held the cut-off line stays, with its bytes; the whole one is gone.
    (kept,) = (run_dir / "shards").iterdir()
    assert kept.read_bytes().endswith(b'"sta')
    traceback = (run_dir / "crash-traceback.txt").read_text(encoding="utf-8")
    assert "an invariant of assay broke after the load" in traceback
    assert "CRASHED RUN" in traceback


@pytest.fixture(scope="module")
def record_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The record lines of one short run against the embedded mock (two steps of a sweep)."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    result = run_fast(
        run_dir, "--profile", "sweep", "--sweep-concurrency", "1,2", "--max-requests", "6",
        "--processes", "1",
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    return (run_dir / "records.jsonl").read_bytes().splitlines(keepends=True)


def _left_shards(run_dir: Path, lines: list[bytes]) -> tuple[Path, bytes]:
    """A run folder as a killed run leaves it: each step's records in a shard per process, the
    last one cut off in the middle of a record; and the whole records, in the shards' order."""
    shards = run_dir / "shards"
    shards.mkdir(parents=True)
    for line in lines:
        step = orjson.loads(line)["step"]
        process = int(orjson.loads(line)["id"][-8:]) % 2
        with (shards / f"records.step{step:03d}.p{process:03d}.jsonl").open("ab") as shard:
            shard.write(line)
    whole = _shard_bytes(shards)
    with (shards / "records.step001.p001.jsonl").open("ab") as shard:
        shard.write(lines[-1][:40])
    return shards, whole


def test_assay_report_on_a_killed_runs_folder_merges_its_shards_as_unfinished(
    tmp_path: Path, record_lines: list[bytes]
) -> None:
    _, expected = _left_shards(tmp_path, record_lines)
    assert expected.count(b"\n") == len(record_lines)
    result = run_assay("report", tmp_path)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert f"merged {len(record_lines)} records from 4 shard(s)" in result.stdout
    assert "1 line(s) cut off mid-record dropped" in result.stdout
    assert "UNFINISHED RUN" in result.stdout
    assert (tmp_path / "records.jsonl").read_bytes() == expected
    report = read_report(tmp_path)
    assert report.incomplete is not None
    assert report.incomplete.state == "unfinished"
    assert report.incomplete.crash_file is None
    assert not report.incomplete.settings_known
    assert [step.index for step in report.steps] == [0, 1]
    assert report.totals.outcomes.dispatched == len(record_lines)
    assert not report.validity.valid
    assert "UNFINISHED RUN" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_assay_report_on_a_crashed_runs_folder_marks_it_crashed(
    tmp_path: Path, record_lines: list[bytes]
) -> None:
    _left_shards(tmp_path, record_lines)
    (tmp_path / "crash-traceback.txt").write_text("assay 0.9 crashed\n", encoding="utf-8")
    result = run_assay("report", tmp_path)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "CRASHED RUN" in result.stdout
    report = read_report(tmp_path)
    assert report.incomplete is not None
    assert report.incomplete.state == "crashed"
    assert report.incomplete.crash_file == "crash-traceback.txt"
    # Judged again, it is still the report of a crashed run.
    again = revalidate(tmp_path).report
    assert again.incomplete == report.incomplete
    assert not again.validity.valid


def test_assay_report_leaves_the_folder_of_a_run_still_going_alone(
    tmp_path: Path, record_lines: list[bytes]
) -> None:
    folder = claim_run_folder(tmp_path / "run", datetime.now(UTC))  # held, as a run holds it
    try:
        (folder.shards / "records.step000.p000.jsonl").write_bytes(b"".join(record_lines))
        result = run_assay("report", folder.path)
    finally:
        folder.release()
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "still going" in result.stderr
    assert sorted(path.name for path in folder.path.iterdir()) == ["shards"]


def test_a_crash_whose_merge_fails_too_keeps_every_shard_and_prints_no_traceback(
    tmp_path: Path,
    record_lines: list[bytes],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import assay.benchmark.unfinished_run as unfinished_run

    def disk_full(path: Path) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(unfinished_run, "open_new", disk_full)
    shards, _ = _left_shards(tmp_path, record_lines)
    before = {path.name: path.read_bytes() for path in shards.iterdir()}

    def crashing_body() -> int:
        raise RuntimeError("an invariant of assay broke")

    assert guarded(crashing_body, CrashSite(folder=tmp_path)) == EXIT_CRASH
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    crash_line, kept_line = captured.err.strip().splitlines()
    assert "the traceback is in" in crash_line
    assert kept_line.startswith(
        f"crashed run: the records written before the crash are kept in {shards}"
    )
    assert "merging them failed too: OSError" in kept_line
    assert {path.name: path.read_bytes() for path in shards.iterdir()} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["crash-traceback.txt", "shards"]
    traceback = (tmp_path / "crash-traceback.txt").read_text(encoding="utf-8")
    assert "No space left on device" in traceback


def test_a_crash_of_a_run_that_had_written_its_report_leaves_the_report_as_it_was(
    tmp_path: Path, record_lines: list[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.json").write_text("{}", encoding="utf-8")
    shards, _ = _left_shards(tmp_path, record_lines)
    shutil.copy(shards / "records.step000.p000.jsonl", tmp_path / "records.jsonl")

    def crashing_body() -> int:
        raise RuntimeError("the console summary broke")

    assert guarded(crashing_body, CrashSite(folder=tmp_path)) == EXIT_CRASH
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == "{}"
    assert len(list(shards.iterdir())) == 4


def test_a_crashed_run_whose_page_cannot_be_built_still_gets_its_records_and_report_json(
    tmp_path: Path,
    record_lines: list[bytes],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import assay.benchmark.unfinished_run as unfinished_run

    def broken_page(*args: object, **kwargs: object) -> Path:
        raise ValueError("a chart broke")

    monkeypatch.setattr(unfinished_run, "write_html", broken_page)
    _, whole = _left_shards(tmp_path, record_lines)

    def crashing_body() -> int:
        raise RuntimeError("an invariant of assay broke")

    assert guarded(crashing_body, CrashSite(folder=tmp_path)) == EXIT_CRASH
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    merged_line = captured.err.strip().splitlines()[1]
    assert "(report.json, summary.csv)" in merged_line
    assert "report.html could not be built (ValueError: a chart broke)" in merged_line
    assert (tmp_path / "records.jsonl").read_bytes() == whole
    report = read_report(tmp_path)
    assert report.incomplete is not None
    assert report.incomplete.state == "crashed"
    assert not report.incomplete.settings_known
    assert not (tmp_path / "report.html").exists()
