"""The models a data file's rows name, as the check against `/v1/models` reads them: from the
rows already loaded (never the file again), each naming row with its number in file order, for
prompt files, sessions and traces; nothing for a file whose rows name none."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from assay.backend.served_models import RowModels, ServedModel, unserved_rows
from assay.data.file_source import FileSource, FileSourceConfig
from assay.data.prompt_rows import PromptRow
from assay.data.session import FileSessions
from assay.data.trace import TraceConfig, load_trace


def _jsonl(tmp_path: Path, rows: list[dict[str, object]], name: str = "rows.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_prompt_files_naming_rows_come_with_their_lines(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        [{"prompt": "a"}, {"prompt": "b", "model": "x"}, {"prompt": "c", "model": "x"}],
    )
    # A blank line counts: numbers are the file's lines.
    path.write_text(path.read_text(encoding="utf-8") + "\n" + '{"prompt": "d", "model": "y"}\n')
    rows = FileSource.load(FileSourceConfig(path=path, model="base"))
    named = rows.named_models()
    assert named is not None
    assert (named.unit, list(named)) == ("line", [("x", 2), ("x", 3), ("y", 5)])
    # Walked again from the rows each time it is read, the file not read again.
    path.unlink()
    assert list(named) == [("x", 2), ("x", 3), ("y", 5)]


def test_a_file_whose_rows_name_no_model_has_none(tmp_path: Path) -> None:
    rows = FileSource.load(FileSourceConfig(path=_jsonl(tmp_path, [{"prompt": "a"}]), model="m"))
    assert rows.named_models() is None
    assert rows.cycled().named_models() is None


def test_a_json_arrays_rows_are_counted_as_items(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"prompt": "a"}, {"prompt": "b", "model": "x"}]), encoding="utf-8")
    named = FileSource.load(FileSourceConfig(path=path, model="m")).named_models()
    assert named is not None
    assert (named.unit, list(named)) == ("item", [("x", 2)])


def test_a_csv_files_model_column_is_read_by_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("prompt,model\nhello,\nagain,lora-y\n", encoding="utf-8")
    named = FileSource.load(FileSourceConfig(path=path, model="m")).named_models()
    assert named is not None
    assert (named.unit, list(named)) == ("line", [("lora-y", 3)])


def test_sessions_name_the_models_of_their_rows(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"turns": ["hi", "more"]}, {"turns": ["hi"], "model": "z"}])
    sessions = FileSessions.of(FileSource.load(FileSourceConfig(path=path, model="m")))
    named = sessions.named_models()
    assert named is not None
    assert list(named) == [("z", 2)]


def test_a_plain_trace_names_its_rows_models_by_line_not_by_time(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        [
            {"timestamp": 500, "prompt": "late", "model": "late-lora"},
            {"timestamp": 0, "prompt": "early", "model": "early-lora"},
        ],
        "trace.jsonl",
    )
    trace = load_trace(TraceConfig(path=path, model="m"))
    named = trace.named_models()
    assert named is not None
    # In the order requests are sent (by time); each with its line in the file.
    assert list(named) == [("early-lora", 2), ("late-lora", 1)]


def test_a_mooncake_trace_names_no_model(tmp_path: Path) -> None:
    row = {"timestamp": 0, "input_length": 16, "output_length": 2, "hash_ids": [1]}
    trace = load_trace(TraceConfig(path=_jsonl(tmp_path, [row], "trace.jsonl"), model="m"))
    assert trace.named_models() is None


def test_a_million_rows_are_checked_without_a_set_of_their_names() -> None:
    served = PromptRow(1, "p", None, None, None, {}, model="base")
    unserved = PromptRow(7, "p", None, None, None, {}, model="nope")
    rows = (served,) * 999_999 + (unserved,)
    source = FileSource(
        FileSourceConfig(path=Path("rows.jsonl"), model="m"), rows, names_models=True
    )
    named = source.named_models()
    assert named is not None
    tracemalloc.start()
    try:
        problem = unserved_rows(
            RowModels("--data rows", named.unit, named), [ServedModel("base")], "http://h:1"
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert problem == (
        "models named by --data rows not served at http://h:1: 'nope' (first at line 7); "
        "it serves: 'base'"
    )
    # The rows are walked, not copied: a list or set of a million entries takes megabytes.
    assert peak < 64 * 1024, peak
