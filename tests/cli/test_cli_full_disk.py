"""A disk that fills while the run merges its shards (issue 37, item 7): the merge leaves no
half records.jsonl, the message says how to finish, and `assay report DIR` writes the report
from the whole shards; a half file an earlier version left is recognised and merged again.

The full disk is a file-size limit (`RLIMIT_FSIZE`) set on the run's process, below the merged
records and above each shard: writes past it fail with EFBIG, as they would with ENOSPC."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

from tests.cli.cli_harness import ASSAY, FAST, assay_env, run_assay
from tests.cli.test_cli_bad_input import assert_one_error_line

from assay.run_folder import RECORDS_FILE, shard_files

# Two steps of 40 requests each: shards of about 62 KB, records.jsonl of about 124 KB.
TWO_STEPS = ("--processes", "1", "--profile", "sweep", "--sweep-concurrency", "1,2")
FILE_SIZE_LIMIT = 96 * 1024


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def _run_on_a_full_disk(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(ASSAY),
            "run",
            *FAST,
            *TWO_STEPS,
            "--max-requests",
            "40",
            "--output-dir",
            str(run_dir),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=assay_env(),
        timeout=90,
        preexec_fn=_limit_file_size,
        check=False,
    )


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def test_a_merge_on_a_full_disk_leaves_whole_shards_that_assay_report_finishes(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    failed = _run_on_a_full_disk(run_dir)
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot write {run_dir / RECORDS_FILE}"), line
    assert f"`assay report {run_dir}`" in line
    assert not (run_dir / RECORDS_FILE).exists()  # no half file
    shards = shard_files(run_dir)
    assert len(shards) == 2
    assert sum(_lines(shard) for shard in shards) == 80
    assert all(shard.stat().st_size < FILE_SIZE_LIMIT for shard in shards)

    finished = run_assay("report", run_dir)
    assert finished.exit_code == 0, finished.stdout + finished.stderr
    assert "merged 80 records from 2 shard(s)" in finished.stdout
    assert _lines(run_dir / RECORDS_FILE) == 80
    assert (run_dir / "report.json").is_file()
    assert (run_dir / "report.html").is_file()


def test_assay_report_merges_again_over_a_half_file_an_earlier_merge_left(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    assert _run_on_a_full_disk(run_dir).returncode == 2
    shards = shard_files(run_dir)
    # What a merge that did not clean up left: the first shard and part of the second, the
    # last line cut (`assay report` refused it: "not an assay record").
    whole = b"".join(shard.read_bytes() for shard in shards)
    (run_dir / RECORDS_FILE).write_bytes(whole[: len(shards[0].read_bytes()) + 777])
    finished = run_assay("report", run_dir)
    assert finished.exit_code == 0, finished.stdout + finished.stderr
    assert "held only the start of the shards" in finished.stdout
    assert (run_dir / RECORDS_FILE).read_bytes() == whole


def test_a_records_file_that_is_not_the_shards_is_never_removed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert _run_on_a_full_disk(run_dir).returncode == 2
    mine = b'{"not": "a record of these shards"}\n'
    (run_dir / RECORDS_FILE).write_bytes(mine)
    result = run_assay("report", run_dir)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert_one_error_line(result, str(run_dir))
    assert (run_dir / RECORDS_FILE).read_bytes() == mine
    assert len(shard_files(run_dir)) == 2
