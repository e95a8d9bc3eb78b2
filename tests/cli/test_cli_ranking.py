"""`assay run --endpoint rerank|score` end to end against the embedded mock: the bodies on the
wire, the records, the console's figures, the roles of a data file, and a fault's code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.cli.cli_harness import (
    assert_every_request_accounted,
    read_record_lines,
    run_assay,
)
from tests.cli.wire import bodies_by_id

from assay.data import BuiltinTokenizer

INSTANT = ("--mock-ttft-ms", "0", "--mock-itl-ms", "0", "--processes", "1")
ONE_AT_A_TIME = ("--profile", "concurrent", "--concurrency", "2", "--mock-fault", "http_500=0")
TOKENIZER = BuiltinTokenizer()


@pytest.mark.parametrize(
    ("endpoint", "query_key", "documents_key"),
    [("rerank", "query", "documents"), ("score", "text_1", "text_2")],
)
def test_synthetic_queries_and_documents_arrive_with_their_token_counts(
    tmp_path: Path, endpoint: str, query_key: str, documents_key: str
) -> None:
    wire, run_dir = tmp_path / "wire.jsonl", tmp_path / "run"
    result = run_assay(
        "run", "--endpoint", endpoint, *INSTANT, *ONE_AT_A_TIME, "--max-requests", "6",
        "--documents", "5", "--prompt-tokens", "12", "--document-tokens", "30",
        "--output-dir", run_dir, "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    assert sorted(bodies) == [f"req-{i:08d}" for i in range(6)]
    for body in bodies.values():
        assert set(body) == {"model", query_key, documents_key}
        assert TOKENIZER.count(body[query_key]) == 12
        assert [TOKENIZER.count(document) for document in body[documents_key]] == [30] * 5
    report = assert_every_request_accounted(run_dir)
    metrics = report.steps[0].metrics
    assert metrics.outcomes.completed == 6
    assert metrics.tokens.scored == 6
    assert metrics.throughput.usable_documents == 30
    assert metrics.throughput.usable_output_tokens == 0
    for line in read_record_lines(run_dir):
        assert line["response"]["scores"]["count"] == 5
        assert line["response"]["echo"]["documents"] == 5
        # The mock reads every pair: the query once per document.
        assert line["usage"]["prompt_tokens"] == 5 * (12 + 30)
    # A step this short has no rates: the documents are counted instead of a documents/s.
    assert re.search(r"documents/s|documents scored +30 ", result.stdout), result.stdout
    assert "no output tokens" in result.stdout
    assert "Embeddings" not in result.stdout
    assert "TTFT" not in result.stdout


def test_data_rows_send_their_query_documents_and_top_n(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_text(
        '{"query": "where do rivers go", "documents": ["to the sea", "uphill", "home"], '
        '"top_n": 2}\n'
        '{"query": "what is rain", "documents": ["water falling"]}\n',
        encoding="utf-8",
    )
    wire, run_dir = tmp_path / "wire.jsonl", tmp_path / "run"
    result = run_assay(
        "run", "--endpoint", "rerank", "--data", data, *INSTANT, *ONE_AT_A_TIME,
        "--max-requests", "2", "--output-dir", run_dir, "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    assert bodies["req-00000000"] == {
        "model": "assay-mock",
        "query": "where do rivers go",
        "documents": ["to the sea", "uphill", "home"],
        "top_n": 2,
    }
    assert bodies["req-00000001"]["documents"] == ["water falling"]
    counts = {
        line["id"]: line["response"]["scores"]["count"] for line in read_record_lines(run_dir)
    }
    assert counts == {"req-00000000": 2, "req-00000001": 1}


def test_a_ranking_fault_is_counted_under_its_code(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = run_assay(
        "run", "--endpoint", "score", *INSTANT, "--profile", "synchronous",
        "--max-requests", "4", "--mock-fault", "repeated_index=1", "--output-dir", run_dir,
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr  # every request errored
    report = assert_every_request_accounted(run_dir)
    errors = report.steps[0].metrics.errors_by_code
    assert [(str(code), summary.count) for code, summary in errors.items()] == [
        ("invalid_result_index", 4)
    ]
    assert "names document index 0 more than once" in result.stdout
