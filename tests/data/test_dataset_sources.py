"""Datasets as request data: ShareGPT JSON, parquet and arrow files, Hugging Face datasets saved
on disk. Each is built here on disk; nothing is fetched."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import orjson
import pytest

from assay.core import Endpoint
from assay.data import BuiltinTokenizer, FileSource, FileSourceConfig
from assay.data.describe import describe_source
from assay.data.session import FileSessions
from assay.data.trace import TraceConfig, load_trace
from assay.errors import DataError

TOKENIZER = BuiltinTokenizer()
SHAREGPT = [
    {
        "id": "a1",
        "conversations": [
            {"from": "system", "value": "You are terse."},
            {"from": "human", "value": "What is a mutex?"},
            {"from": "gpt", "value": "A lock that lets one thread at a time into a section."},
            {"from": "human", "value": "And a semaphore?"},
            {"from": "gpt", "value": "A counter of permits."},
        ],
    },
    {"id": "a2", "conversations": [{"from": "gpt", "value": "Hello, how can I help?"}]},
    {"id": "a3", "conversations": [{"from": "human", "value": "Name a sorting algorithm."}]},
]
ROWS = [
    {"question": "Why is the sky blue?", "answer_tokens": 12, "topic": "physics"},
    {"question": "What is a B-tree?", "answer_tokens": 30, "topic": "databases"},
]


def _load(path: Path | str, **changes: object) -> FileSource:
    config: dict[str, object] = {"path": path, "model": "m"}
    config.update(changes)
    return FileSource.load(FileSourceConfig.model_validate(config))


def _sharegpt(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.json"
    path.write_bytes(orjson.dumps(SHAREGPT))
    return path


def test_sharegpt_first_user_turn_is_the_prompt_and_the_recorded_answer_its_target(
    tmp_path: Path,
) -> None:
    source = _load(_sharegpt(tmp_path))
    assert source.size() == 2  # the conversation without a user turn is not a prompt
    first = source.request(0)
    assert first.messages == (
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is a mutex?"},
    )
    answer = "A lock that lets one thread at a time into a section."
    assert first.max_output_tokens == TOKENIZER.count(answer)
    assert source.request(1).max_output_tokens == 128  # no recorded answer: the default
    assert source.notes == (
        "data: 1 conversation without a user turn was not used",
        "data: columns not used: id",
    )
    assert [turn.text for turn in source.rows[0].turns] == ["What is a mutex?", "And a semaphore?"]
    assert "id" not in first.extra_body  # ShareGPT metadata is not sent


def test_sharegpt_for_completions_sends_the_user_text_as_prompt(tmp_path: Path) -> None:
    request = _load(_sharegpt(tmp_path), endpoint="completions").request(1)
    assert request.prompt == "Name a sorting algorithm."


def test_sharegpt_turn_with_unknown_speaker_names_item_and_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(
        orjson.dumps([{"conversations": [{"from": "narrator", "value": "Once upon a time"}]}])
    )
    with pytest.raises(DataError, match=r"bad.json, item 1: conversations\[0\]: unknown speaker"):
        _load(path)


def test_json_file_that_is_not_a_list_says_to_use_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text('{"prompt": "hi"}', encoding="utf-8")
    with pytest.raises(DataError, match=r"must hold a list of objects"):
        _load(path)


def test_parquet_rows_use_the_column_mapping_and_name_unused_columns(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")  # no type information: imported by name
    path = tmp_path / "rows.parquet"
    pq.write_table(pyarrow.Table.from_pylist(ROWS), path)
    columns = {"prompt": "question", "output_tokens": "answer_tokens"}
    source = _load(path, columns=columns, endpoint="completions")
    assert [source.request(i).prompt for i in range(2)] == [row["question"] for row in ROWS]
    assert [source.request(i).max_output_tokens for i in range(2)] == [12, 30]
    assert source.request(0).extra_body == {}  # dataset columns are not sent unasked
    assert source.notes == ("data: columns not used: topic",)


def test_parquet_row_without_the_mapped_prompt_names_the_row(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")  # no type information: imported by name
    path = tmp_path / "rows.parquet"
    pq.write_table(pyarrow.Table.from_pylist(ROWS), path)
    with pytest.raises(DataError, match=r"rows.parquet, row 1: no 'prompt'") as refused:
        _load(path)
    # Issue 38: the message lists the file's columns and the flag that maps one.
    assert "the row's columns: 'question', 'answer_tokens', 'topic'" in str(refused.value)
    assert "--data-column prompt=COLUMN" in str(refused.value)


def test_hf_dataset_saved_to_disk_loads_by_path_and_split(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "saved"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(ROWS),
            "test": datasets.Dataset.from_list([{"question": "Only in test?", "answer_tokens": 5}]),
        }
    ).save_to_disk(str(saved))
    columns = {"prompt": "question", "output_tokens": "answer_tokens"}
    train = _load(f"hf:{saved}", columns=columns)
    assert train.size() == 2
    assert train.request(1).messages == ({"role": "user", "content": "What is a B-tree?"},)
    test = _load(f"hf:{saved}:test", columns=columns)
    assert test.request(0).max_output_tokens == 5
    with pytest.raises(DataError, match=r"no split 'dev' \(splits: test, train\)"):
        _load(f"hf:{saved}:dev", columns=columns)


def test_arrow_file_of_a_saved_dataset_is_readable(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "saved"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(saved))
    (arrow,) = saved.glob("*.arrow")
    source = _load(arrow, columns={"prompt": "question"}, endpoint=Endpoint.completions)
    assert source.request(0).prompt == "Why is the sky blue?"


def test_hf_dataset_that_cannot_be_loaded_is_one_data_error(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    with pytest.raises(DataError, match=r"hf:.*cannot load the dataset"):
        _load(f"hf:{tmp_path / 'nothing-here'}")


def test_without_the_datasets_extra_the_error_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rows.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if it were not installed
    with pytest.raises(DataError, match=r'pip install -e "\.\[datasets\]" in a checkout'):
        _load(path)


def test_multi_turn_and_trace_sources_still_report_their_rows_notes(tmp_path: Path) -> None:
    sessions = FileSessions.of(_load(_sharegpt(tmp_path)))
    assert list(describe_source(sessions)) == [
        "data: 1 conversation without a user turn was not used",
        "data: columns not used: id",
    ]
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "prompt": "hi", "top_k": 3}\n', encoding="utf-8")
    plain = load_trace(TraceConfig(path=trace, model="m"))
    assert list(describe_source(plain)) == ["data: row fields sent in request bodies: top_k"]
