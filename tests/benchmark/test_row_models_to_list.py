"""Which rows a run's target must list the models of: those of `--data` or `--trace` read ahead,
named by their flag, and none for a run against the embedded mock (it answers any name)."""

from __future__ import annotations

import json
from pathlib import Path

from assay.benchmark.source_ahead import read_ahead, rows_to_list
from assay.config import RunConfig

TARGET = "http://127.0.0.1:9"


def _file(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _rows_of(config: dict[str, object]) -> tuple[str, str, list[tuple[str, int]]] | None:
    run = RunConfig.model_validate(config)
    rows = rows_to_list(run, read_ahead(run).source)
    return None if rows is None else (rows.origin, rows.unit, list(rows.named))


def test_a_data_files_rows_are_named_by_their_flag(tmp_path: Path) -> None:
    data = _file(tmp_path, [{"prompt": "a"}, {"prompt": "b", "model": "x"}])
    assert _rows_of({"target": TARGET, "data": data, "model": "m"}) == (
        "--data rows",
        "line",
        [("x", 2)],
    )


def test_a_traces_rows_are_named_by_their_flag(tmp_path: Path) -> None:
    trace = _file(tmp_path, [{"timestamp": 0, "prompt": "a", "model": "x"}])
    config = {"target": TARGET, "trace": trace, "model": "m", "profile": "replay"}
    assert _rows_of(config) == ("--trace rows", "line", [("x", 1)])


def test_nothing_is_checked_against_the_embedded_mock(tmp_path: Path) -> None:
    data = _file(tmp_path, [{"prompt": "b", "model": "x"}])
    assert _rows_of({"data": data, "model": "m"}) is None


def test_rows_naming_no_model_and_synthetic_runs_check_nothing(tmp_path: Path) -> None:
    data = _file(tmp_path, [{"prompt": "a"}])
    assert _rows_of({"target": TARGET, "data": data, "model": "m"}) is None
    assert _rows_of({"target": TARGET, "model": "m"}) is None
