"""Rerank and score data: synthetic queries and documents of exact token counts, and the
`query` and `documents` roles of JSONL, CSV and parquet rows, every bad row named."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from pydantic import ValidationError

from assay.core import Endpoint
from assay.data import (
    BuiltinTokenizer,
    FileSource,
    FileSourceConfig,
    FixedCount,
    SyntheticSource,
    UniformCount,
)
from assay.errors import DataError

TOKENIZER = BuiltinTokenizer()


@pytest.mark.parametrize("endpoint", [Endpoint.rerank, Endpoint.score])
def test_synthetic_query_and_documents_have_the_exact_token_counts(endpoint: Endpoint) -> None:
    source = SyntheticSource(
        endpoint=endpoint,
        model="m",
        prompt_tokens=FixedCount(value=12),
        documents=5,
        document_tokens=FixedCount(value=40),
        seed=7,
    )
    request = source.request(3)
    assert isinstance(request.prompt, str)
    assert TOKENIZER.count(request.prompt) == 12
    assert request.documents is not None
    assert [TOKENIZER.count(document) for document in request.documents] == [40] * 5
    assert len(set(request.documents)) == 5
    assert request.prompt_tokens == 12 + 5 * 40
    assert request.max_output_tokens is None
    assert not request.stream
    assert request == source.request(3)
    assert request.echo().documents == 5


def test_synthetic_document_lengths_follow_their_distribution() -> None:
    source = SyntheticSource(
        endpoint=Endpoint.rerank,
        model="m",
        prompt_tokens=FixedCount(value=8),
        documents=20,
        document_tokens=UniformCount(min=10, max=30),
    )
    request = source.request(0)
    assert request.documents is not None
    counts = [TOKENIZER.count(document) for document in request.documents]
    assert all(10 <= count <= 30 for count in counts)
    assert request.prompt_tokens == 8 + sum(counts)


def test_a_document_of_zero_tokens_is_refused() -> None:
    with pytest.raises(ValidationError, match="document_tokens must be at least 1"):
        SyntheticSource(endpoint=Endpoint.rerank, model="m", document_tokens=FixedCount(value=0))


def _load(path: Path, endpoint: Endpoint = Endpoint.rerank, **changes: object) -> FileSource:
    config: dict[str, object] = {"path": path, "model": "m", "endpoint": endpoint, **changes}
    return FileSource.load(FileSourceConfig.model_validate(config))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("endpoint", [Endpoint.rerank, Endpoint.score])
def test_jsonl_rows_carry_their_query_and_documents(tmp_path: Path, endpoint: Endpoint) -> None:
    path = _write(
        tmp_path,
        "r.jsonl",
        '{"query": "where do rivers go", "documents": ["to the sea", "uphill"], "top_n": 1}\n'
        '{"prompt": "what is rain", "documents": ["water falling"]}\n',
    )
    source = _load(path, endpoint, tokenizer="builtin")
    first, second = source.request(0), source.request(1)
    assert (first.prompt, first.documents) == ("where do rivers go", ("to the sea", "uphill"))
    assert first.extra_body == {"top_n": 1}  # a row's other keys go into its body
    assert first.prompt_tokens == sum(
        TOKENIZER.count(text) for text in ("where do rivers go", "to the sea", "uphill")
    )
    assert (second.prompt, second.documents) == ("what is rain", ("water falling",))


def test_csv_documents_cell_is_a_json_list(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "r.csv", 'query,documents\nwhere do rivers go,"[""to the sea"", ""uphill""]"\n'
    )
    request = _load(path).request(0)
    assert (request.prompt, request.documents) == ("where do rivers go", ("to the sea", "uphill"))


def test_parquet_rows_use_the_mapped_query_and_documents_columns(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")  # no type information: imported by name
    path = tmp_path / "rows.parquet"
    rows = [{"question": "where do rivers go", "passages": ["to the sea", "uphill"], "id": 3}]
    pq.write_table(pyarrow.Table.from_pylist(rows), path)
    source = _load(path, columns={"query": "question", "documents": "passages"})
    request = source.request(0)
    assert (request.prompt, request.documents) == ("where do rivers go", ("to the sea", "uphill"))
    assert source.notes == ("data: columns not used: id",)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"query": "q"}', "line 1: no 'documents' in the row"),
        ('{"documents": ["d"]}', "line 1: no 'query' (or 'prompt') in the row"),
        ('{"query": "q", "documents": []}', "'documents' must be a non-empty list of texts"),
        ('{"query": "q", "documents": "one"}', "'documents' must be a non-empty list of texts"),
        ('{"query": "q", "documents": ["a", 3]}', "documents[1] must be a non-blank text, got a"),
        ('{"query": "q", "documents": ["a", " "]}', "documents[1] must be a non-blank text"),
        ('{"query": ["q"], "documents": ["a"]}', "'query' must be text, got a list"),
        ('{"query": "  ", "documents": ["a"]}', "empty query in 'query'"),
    ],
)
def test_a_bad_ranking_row_is_named(tmp_path: Path, line: str, words: str) -> None:
    path = _write(tmp_path, "r.jsonl", line + "\n")
    with pytest.raises(DataError) as caught:
        _load(path)
    assert "r.jsonl, line 1" in str(caught.value)
    assert words in str(caught.value)


def test_query_and_documents_in_a_chat_file_are_named_not_dropped(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.jsonl", '{"prompt": "hi", "query": "q", "documents": ["d"]}\n')
    source = _load(path, Endpoint.chat)
    assert source.request(0).documents is None
    assert source.notes == ("data: columns not used: query, documents",)
