"""A crash of assay itself (issue 10.8): exit code 3, not 1 (INVALID RUN); one line saying where
the traceback was saved, in the run folder when there is one; never a traceback on the console."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.cli.crash import CrashSite
from assay.cli.exit_codes import EXIT_CRASH, EXIT_INVALID, EXIT_USAGE
from assay.cli.guard import guarded
from assay.errors import ConfigError


def crashing_body() -> int:
    raise RuntimeError("an invariant of assay broke")


def saved_path(stderr: str) -> Path:
    # The crash's line comes first; a run's merged records get a line of their own after it.
    line = stderr.strip().splitlines()[0]
    assert line.startswith("error: assay failed with an internal error (RuntimeError"), line
    return Path(line.split("the traceback is in ", 1)[1].split(" (exit code")[0])


def test_a_crash_exits_3_and_saves_its_traceback_in_the_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = guarded(crashing_body, CrashSite(folder=tmp_path))
    assert code == EXIT_CRASH
    assert EXIT_CRASH not in (EXIT_INVALID, EXIT_USAGE)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    saved = saved_path(captured.err)
    assert saved == tmp_path / "crash-traceback.txt"
    text = saved.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text
    assert "RuntimeError: an invariant of assay broke" in text


def test_a_crash_mid_run_points_at_the_records_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = tmp_path / "shards" / "records.step000.p000.jsonl"
    shard.parent.mkdir()
    shard.write_text('{"id": "req-00000000"}\n', encoding="utf-8")
    assert guarded(crashing_body, CrashSite(folder=tmp_path)) == EXIT_CRASH
    # The line is not a whole record: dropped from records.jsonl, its shard kept as it was.
    text = saved_path(capsys.readouterr().err).read_text(encoding="utf-8")
    assert f"kept in {shard.parent}" in text
    assert shard.read_text(encoding="utf-8") == '{"id": "req-00000000"}\n'


def test_a_second_crash_never_overwrites_the_first_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "crash-traceback.txt"
    first.write_text("the first crash\n", encoding="utf-8")
    assert guarded(crashing_body, CrashSite(folder=tmp_path)) == EXIT_CRASH
    saved = saved_path(capsys.readouterr().err)
    try:
        assert saved != first
        assert first.read_text(encoding="utf-8") == "the first crash\n"
        assert "an invariant of assay broke" in saved.read_text(encoding="utf-8")
    finally:
        saved.unlink()


def test_a_crash_before_a_run_folder_exists_saves_to_a_temporary_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert guarded(crashing_body) == EXIT_CRASH
    saved = saved_path(capsys.readouterr().err)
    try:
        assert saved.name.startswith("assay-crash-")
        assert "an invariant of assay broke" in saved.read_text(encoding="utf-8")
    finally:
        saved.unlink()


def test_bad_input_is_still_exit_2_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    def bad_input() -> int:
        raise ConfigError("--rate must be positive")

    assert guarded(bad_input) == EXIT_USAGE
    assert capsys.readouterr().err == "error: --rate must be positive\n"
