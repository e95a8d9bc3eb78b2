"""A hostile size in a data file or flag is one `error:` line before any load (issue 21.1, 21.2)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_harness import run_assay
from tests.cli.test_cli_bad_input import assert_one_error_line


def test_a_trace_row_asking_for_ten_billion_tokens_is_one_error_line(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 10000000000, "output_length": 5, "hash_ids": [1]}\n',
        encoding="utf-8",
    )
    result = run_assay(
        "run", "--profile", "replay", "--trace", trace, "--max-seconds", "15",
        "--processes", "1", "--output-dir", tmp_path / "run",
        timeout_s=60,
    )  # fmt: skip
    assert_one_error_line(result, "trace.jsonl, line 1", "'input_length'", "2,097,152")
    assert not (tmp_path / "run" / "records.jsonl").exists()


def test_a_billion_turns_is_one_error_line(tmp_path: Path) -> None:
    result = run_assay(
        "run", "--turns", "1000000000", "--max-seconds", "15", "--processes", "1",
        "--output-dir", tmp_path / "run",
        timeout_s=60,
    )  # fmt: skip
    assert_one_error_line(result, "turns", "1024")
