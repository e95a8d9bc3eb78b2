"""`assay run --data` with datasets: a ShareGPT JSON file and a Hugging Face dataset saved on
disk, checked on the wire (the bodies the mock received)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from tests.cli.cli_harness import assert_every_request_accounted, run_fast
from tests.cli.wire import bodies_by_id

from assay.data import BuiltinTokenizer

ONE_PROCESS = ("--processes", "1", "--profile", "concurrent", "--concurrency", "2")
ANSWER = "Each process owns a deterministic slice of the schedule, so none waits for another."


def test_sharegpt_json_sends_first_turns_with_recorded_answer_lengths(tmp_path: Path) -> None:
    data = tmp_path / "sharegpt.json"
    conversations = [
        [("human", "How do load processes split work?"), ("gpt", ANSWER)],
        [("human", "Say yes."), ("gpt", "Yes.")],
    ]
    rows = [{"conversations": [{"from": f, "value": v} for f, v in c]} for c in conversations]
    data.write_bytes(orjson.dumps(rows))
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--data", data, "--mock-fault", "http_500=0",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert assert_every_request_accounted(tmp_path / "run").totals.outcomes.completed == 2
    bodies = bodies_by_id(wire)
    first, second = bodies["req-00000000"], bodies["req-00000001"]
    assert first["messages"] == [{"role": "user", "content": "How do load processes split work?"}]
    assert first["max_tokens"] == BuiltinTokenizer().count(ANSWER)
    assert second["max_tokens"] == BuiltinTokenizer().count("Yes.")


def test_hf_dataset_on_disk_with_a_column_mapping(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "saved"
    rows = [{"question": f"Question number {i}?", "length": 5 + i} for i in range(3)]
    datasets.Dataset.from_list(rows).save_to_disk(str(saved))
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--data", f"hf:{saved}",
        "--data-column", "prompt=question", "--data-column", "output_tokens=length",
        "--endpoint", "completions", "--mock-fault", "http_500=0", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    assert [bodies[f"req-{i:08d}"]["prompt"] for i in range(3)] == [r["question"] for r in rows]
    assert [bodies[f"req-{i:08d}"]["max_tokens"] for i in range(3)] == [5, 6, 7]


def test_unknown_data_column_role_is_a_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_text('{"q": "hello"}\n', encoding="utf-8")
    result = run_fast(tmp_path / "run", "--data", data, "--data-column", "question=q")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "unknown data column role question" in result.stderr
    assert "Traceback" not in result.stderr
