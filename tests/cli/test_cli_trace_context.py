"""The whole path of the ids on the wire (issue 23): a run against the mock yields records whose
sent, echoed and answer ids and traceparent are what the mock logged for that request; a rerun
with the same seed sends new trace ids unless --trace-from-seed (issue 38); `assay records --id`
finds a record by any of them."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from tests.cli.cli_harness import read_record_lines, run_assay, run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line

TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]")
REQUESTS = "40"


def traced_run(run_dir: Path, wire: Path, *args: str) -> list[dict[str, object]]:
    result = run_fast(
        run_dir,
        "--max-requests",
        REQUESTS,
        "--processes",
        "1",
        "--trace-context",
        "--mock-record-requests",
        wire,
        "--mock-fault",
        "http_500=0.1",
        "--mock-fault",
        "truncated_stream=0.1",
        *args,
    )
    assert result.exit_code in (0, 1), result.stderr
    return read_record_lines(run_dir)


def test_every_record_holds_the_ids_the_mock_logged_for_its_request(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    lines = traced_run(tmp_path / "run", wire)
    logged = [orjson.loads(raw) for raw in wire.read_bytes().splitlines()]
    by_sent = {entry["request_id"]: entry for entry in logged}
    assert len(by_sent) == len(logged) == len(lines) == int(REQUESTS)
    statuses = set()
    for line in lines:
        statuses.add(line["status"])
        ids = line["ids"]
        assert isinstance(ids, dict), line
        seen = by_sent[ids["sent"]]
        assert ids["echoed"] == ids["sent"]
        assert ids["traceparent"] == seen["traceparent"]
        assert TRACEPARENT.fullmatch(str(ids["traceparent"]))
        if line.get("code") == "http_status":
            assert ids["answer"] is None  # an error body carries no answer id
        else:
            assert ids["answer"] == seen["answer_id"], line
    assert statuses == {"completed", "errored"}
    assert len({str(line["ids"]["traceparent"])[3:35] for line in lines}) == len(lines)  # type: ignore[index]


def trace_ids(tmp_path: Path, name: str, *args: str) -> dict[object, str]:
    lines = traced_run(tmp_path / name, tmp_path / f"{name}.jsonl", *args)
    return {line["id"]: str(line["ids"]["traceparent"])[3:35] for line in lines}  # type: ignore[index]


def test_two_runs_with_the_same_seed_send_different_trace_ids_issue_38(tmp_path: Path) -> None:
    first = trace_ids(tmp_path, "first", "--seed", "5")
    again = trace_ids(tmp_path, "again", "--seed", "5")
    assert set(again) == set(first)
    assert not set(again.values()) & set(first.values())


def test_a_rerun_with_trace_from_seed_sends_the_same_trace_ids(tmp_path: Path) -> None:
    first = trace_ids(tmp_path, "first", "--seed", "5", "--trace-from-seed")
    assert trace_ids(tmp_path, "again", "--seed", "5", "--trace-from-seed") == first
    other = trace_ids(tmp_path, "other", "--seed", "6", "--trace-from-seed")
    assert set(other) == set(first)
    assert not set(other.values()) & set(first.values())


def test_records_finds_a_record_by_each_of_its_ids(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    lines = traced_run(run_dir, tmp_path / "wire.jsonl")
    line = next(line for line in lines if line["status"] == "completed")
    ids = line["ids"]
    assert isinstance(ids, dict)
    parent = str(ids["traceparent"])
    for wanted in (line["id"], ids["sent"], ids["echoed"], ids["answer"], parent, parent[3:35]):
        result = run_assay("records", run_dir, "--id", str(wanted))
        assert result.exit_code == 0, result.stderr
        assert [orjson.loads(found) for found in result.stdout.splitlines()] == [line]


def test_records_without_a_match_says_so_and_exits_1(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    traced_run(run_dir, tmp_path / "wire.jsonl")
    result = run_assay("records", run_dir, "--id", "chatcmpl-nowhere")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "no record" in result.stderr
    assert "chatcmpl-nowhere" in result.stderr


def test_records_of_a_folder_without_records_is_one_error_line(tmp_path: Path) -> None:
    assert_one_error_line(run_assay("records", tmp_path, "--id", "x"), "no records.jsonl")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--trace-context", "--trace-sample", "2"), ("trace-sample", "less than or equal to 1")),
        (("--trace-context", "--trace-sample", "-0.1"), ("trace-sample",)),
        (("--trace-sample", "0.5"), ("--trace-sample", "--trace-context")),
        (("--trace-from-seed",), ("--trace-from-seed", "--trace-context")),
    ],
)
def test_a_bad_trace_sample_is_one_error_line(
    tmp_path: Path, args: tuple[str, ...], words: tuple[str, ...]
) -> None:
    result = run_fast(tmp_path / "run", "--max-requests", "1", *args)
    assert_one_error_line(result, *words)
    assert not (tmp_path / "run").exists()


def test_the_config_keys_turn_trace_context_on_with_its_sample(tmp_path: Path) -> None:
    config = tmp_path / "bench.toml"
    config.write_text("trace_context = true\ntrace_sample = 0.0\n")
    run_dir = tmp_path / "run"
    result = run_fast(run_dir, "--config", config, "--max-requests", "5", "--processes", "1")
    assert result.exit_code == 0, result.stderr
    parents = [str(line["ids"]["traceparent"]) for line in read_record_lines(run_dir)]
    assert len(parents) == 5
    assert all(TRACEPARENT.fullmatch(parent) and parent.endswith("-00") for parent in parents)


def test_records_finds_the_engine_ids_vllm_shows_issue_38(tmp_path: Path) -> None:
    """vLLM's spans show `cmpl-<sent id>-0` and `resp_<hex>_0`: the answer id (or the sent id
    inside it) with the prompt's index."""
    sent = "f84aacf4-cebb-5a8b-949f-c956265a7d0f"
    lines = [
        {"id": "req-00000000", "ids": {"sent": sent, "echoed": None, "answer": f"cmpl-{sent}"}},
        {"id": "req-00000001", "ids": {"sent": "other", "answer": "resp_6f1c2a90b3"}},
        {"id": "req-00000002", "ids": {"sent": "a1b2", "answer": "chatcmpl-zz"}},
    ]
    records = tmp_path / "records.jsonl"
    records.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    for wanted, index in ((f"cmpl-{sent}-0", 0), ("resp_6f1c2a90b3_0", 1), ("cmpl-a1b2-0", 2)):
        result = run_assay("records", records, "--id", wanted)
        assert result.exit_code == 0, (wanted, result.stderr)
        assert [orjson.loads(found) for found in result.stdout.splitlines()] == [lines[index]]
    assert run_assay("records", records, "--id", "cmpl-nowhere-0").exit_code == 1
