"""No file assay did not create is written, replaced or removed (issue 21.3).

A `report.html.tmp` of the user's (or a symlink by that name pointing outside the folder) was
written through and renamed away by `assay run` and `assay report`. assay's temporary files now
have random names created exclusively, and every file of a run is created exclusively.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_harness import run_assay, run_fast

from assay.file_writes import TEMP_SUFFIX, replace_with, write_new
from assay.records.jsonl import RecordWriter

SHORT = ("--max-requests", "4", "--processes", "1")
MINE = "the user's own file\n"


def plant(folder: Path, outside: Path, file_name: str, link_name: str) -> tuple[Path, Path]:
    """A user file `file_name` and a symlink `link_name` to `outside`, both in `folder`."""
    folder.mkdir(exist_ok=True)
    planted = folder / file_name
    planted.write_text(MINE, encoding="utf-8")
    outside.write_text(MINE, encoding="utf-8")
    link = folder / link_name
    link.symlink_to(outside)
    return planted, link


def assert_untouched(planted: Path, link: Path, outside: Path) -> None:
    assert planted.read_text(encoding="utf-8") == MINE
    assert link.is_symlink()
    assert link.resolve() == outside.resolve()
    assert outside.read_text(encoding="utf-8") == MINE
    assert not list(planted.parent.glob(f"*{TEMP_SUFFIX}")), "a temporary file was left"


def test_assay_run_leaves_a_planted_tmp_file_and_symlink_alone(tmp_path: Path) -> None:
    run_dir, outside = tmp_path / "run", tmp_path / "outside.txt"
    planted, link = plant(run_dir, outside, "report.html.tmp", "records.jsonl.tmp")
    result = run_fast(run_dir, *SHORT)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert (run_dir / "report.html").is_file()
    assert_untouched(planted, link, outside)


def test_assay_report_leaves_a_planted_tmp_file_and_symlink_alone(tmp_path: Path) -> None:
    run_dir, outside = tmp_path / "run", tmp_path / "outside.txt"
    first = run_fast(run_dir, *SHORT)
    assert first.exit_code == 0, first.stdout + first.stderr
    planted, link = plant(run_dir, outside, "report.json.tmp", "report.html.tmp")
    result = run_assay("report", run_dir)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert (run_dir / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert_untouched(planted, link, outside)
    # And once more with the user's file under the old temporary name.
    link.unlink()
    link.write_text(MINE, encoding="utf-8")
    again = run_assay("report", run_dir)
    assert again.exit_code == 0, again.stdout + again.stderr
    assert link.read_text(encoding="utf-8") == MINE


def test_a_replaced_page_replaces_a_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(MINE, encoding="utf-8")
    page = tmp_path / "compare.html"
    page.symlink_to(outside)
    replace_with(page, "<p>new</p>")
    assert not page.is_symlink()
    assert page.read_text(encoding="utf-8") == "<p>new</p>"
    assert outside.read_text(encoding="utf-8") == MINE


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_new_run_file_is_never_written_over_what_holds_its_name(
    tmp_path: Path, kind: str
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(MINE, encoding="utf-8")
    target = tmp_path / "report.json"
    if kind == "file":
        target.write_text(MINE, encoding="utf-8")
    else:
        target.symlink_to(outside)
    with pytest.raises(FileExistsError):
        write_new(target, "{}")
    with pytest.raises(FileExistsError), RecordWriter(target):
        pass
    assert target.read_text(encoding="utf-8") == MINE
    assert outside.read_text(encoding="utf-8") == MINE
    assert not list(tmp_path.glob(f"*{TEMP_SUFFIX}"))


def test_a_new_file_is_still_written_exclusively_where_hard_links_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    def no_links(source: object, target: object) -> None:
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_links)
    target = tmp_path / "report.json"
    write_new(target, "{}\n")
    assert target.read_text(encoding="utf-8") == "{}\n"
    with pytest.raises(FileExistsError):
        write_new(target, "[]\n")
    assert target.read_text(encoding="utf-8") == "{}\n"
    assert not list(tmp_path.glob(f"*{TEMP_SUFFIX}"))
