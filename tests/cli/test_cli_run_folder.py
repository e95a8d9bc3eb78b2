"""Run folders (issues 9.4, 9.5, 10.7): assay never deletes what it did not create, never
overwrites a run, never lets two runs share a folder, and leaves nothing after a failed start."""

from __future__ import annotations

import hashlib
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.cli.cli_harness import (
    FAST,
    assert_every_request_accounted,
    finish_assay,
    run_assay,
    run_fast,
    start_assay,
)
from tests.cli.test_cli_bad_input import assert_one_error_line

from assay.run_folder import claim_run_folder

SHORT = ("--max-requests", "6", "--processes", "1")


def digest_tree(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_a_shards_folder_that_was_there_before_is_never_deleted(tmp_path: Path) -> None:
    # Issue 9.4: `--output-dir DIR` deleted DIR/shards/ with a file of the user's in it.
    keep = tmp_path / "shards" / "notes.txt"
    keep.parent.mkdir()
    keep.write_text("mine\n", encoding="utf-8")
    result = run_fast(tmp_path, *SHORT)
    assert_one_error_line(result, "already holds a run", "shards")
    assert keep.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("entry", ["report.json", "records.jsonl", "revalidated"])
def test_a_folder_holding_a_run_is_refused_and_left_as_it_was(tmp_path: Path, entry: str) -> None:
    first = run_fast(tmp_path, *SHORT)
    assert first.exit_code == 0, first.stdout + first.stderr
    if entry == "revalidated":
        # A stale revalidation beside a new run would describe another run.
        (tmp_path / "report.json").unlink()
        (tmp_path / "records.jsonl").unlink()
        (tmp_path / "summary.csv").unlink()
        (tmp_path / "revalidated").mkdir()
    before = digest_tree(tmp_path)
    second = run_fast(tmp_path, *SHORT)
    assert_one_error_line(second, "already holds a run", entry)
    assert digest_tree(tmp_path) == before


def test_an_empty_output_dir_means_the_current_folder(tmp_path: Path) -> None:
    result = run_assay("run", *FAST, "--output-dir", "", *SHORT, cwd=tmp_path)
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path)
    assert report.totals.outcomes.dispatched == 6
    assert not (tmp_path / "shards").exists()


def test_an_existing_empty_folder_is_used_and_other_files_in_it_are_kept(tmp_path: Path) -> None:
    other = tmp_path / "README.txt"
    other.write_text("results of the week\n", encoding="utf-8")
    result = run_fast(tmp_path, *SHORT)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert_every_request_accounted(tmp_path)
    assert other.read_text(encoding="utf-8") == "results of the week\n"


def test_runs_started_in_the_same_millisecond_get_their_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 9.5: the default folder name had 1-second resolution and was shared.
    monkeypatch.chdir(tmp_path)
    now = datetime(2026, 12, 2, 9, 5, 1, 250_000, tzinfo=UTC)
    folders = [claim_run_folder(None, now).path for _ in range(3)]
    assert [folder.name for folder in folders] == [
        "run-20261202-090501-250",
        "run-20261202-090501-250-2",
        "run-20261202-090501-250-3",
    ]
    assert all((tmp_path / folder / "shards").is_dir() for folder in folders)


def test_two_runs_started_together_both_write_complete_reports(tmp_path: Path) -> None:
    # Issue 9.5: one reported 100 dispatched with an empty records.jsonl, the other crashed.
    args = ("run", *FAST, "--max-requests", "40", "--processes", "1")
    started = [start_assay(*args, cwd=tmp_path) for _ in range(2)]
    results = [finish_assay(process, args) for process in started]
    for result in results:
        assert result.exit_code == 0, result.stdout + result.stderr
    folders = sorted((tmp_path / "assay-results").iterdir())
    assert len(folders) == 2, folders
    for folder in folders:
        report = assert_every_request_accounted(folder)
        assert report.totals.outcomes.dispatched == 40
        assert not (folder / "shards").exists()


@pytest.mark.parametrize("failure", ["no_server", "missing_tokenizer"])
def test_a_failed_start_leaves_no_run_folder(tmp_path: Path, failure: str) -> None:
    # Issue 10.7: failed starts left assay-results/run-*/shards/ with no report.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    flags, words = {
        "no_server": (
            ("--target", f"http://127.0.0.1:{port}", "--timeout-connect", "2"),
            ("no server at",),
        ),
        "missing_tokenizer": (("--tokenizer", str(tmp_path / "none.json")), ("none.json",)),
    }[failure]
    result = run_assay("run", *flags, *SHORT, cwd=tmp_path)
    assert_one_error_line(result, *words)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_start_in_a_given_folder_removes_only_what_it_created(tmp_path: Path) -> None:
    kept = tmp_path / "existing"
    kept.mkdir()
    result = run_fast(kept / "deeper" / "run", *SHORT, "--tokenizer", str(tmp_path / "none.json"))
    assert_one_error_line(result, "none.json")
    assert list(tmp_path.iterdir()) == [kept]
    assert list(kept.iterdir()) == []


def test_every_revalidation_gets_a_fresh_folder_and_says_so(tmp_path: Path) -> None:
    # Issue 10.7: a second revalidate overwrote the first one silently.
    run = run_fast(tmp_path, *SHORT)
    assert run.exit_code == 0, run.stdout + run.stderr
    first = run_assay("revalidate", tmp_path, "--max-error-rate", "1")
    assert first.exit_code == 0, first.stdout + first.stderr
    written = digest_tree(tmp_path / "revalidated")
    second = run_assay("revalidate", tmp_path, "--strict", "--max-error-rate", "1")
    assert second.exit_code == 0, second.stdout + second.stderr
    assert "went to revalidated-2/" in second.stdout
    assert digest_tree(tmp_path / "revalidated") == written
    assert_every_request_accounted(tmp_path / "revalidated-2")
