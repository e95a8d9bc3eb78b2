"""Request fields on the wire: `--extra-body`, the typed flags, config `extra_body` and the
fields of data rows arrive in the bodies the mock received; JSON output and tool calls are
judged by their validators end to end."""

from __future__ import annotations

from pathlib import Path

import orjson
from tests.cli.cli_harness import (
    assert_every_request_accounted,
    read_record_lines,
    run_assay,
    run_fast,
)
from tests.cli.wire import bodies_by_id

ONE_PROCESS = ("--processes", "1", "--profile", "concurrent", "--concurrency", "2")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]


def test_extra_body_objects_merge_left_to_right_over_the_typed_flags(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--max-requests", "4", "--mock-fault", "http_500=0",
        "--temperature", "0.9", "--top-p", "0.5", "--stop", "END", "--stop", "STOP",
        "--request-seed", "11",
        "--extra-body", '{"temperature": 0.1, "top_k": 5}',
        "--extra-body", '{"temperature": 0.3, "max_tokens": 9}',
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    assert sorted(bodies) == [f"req-{i:08d}" for i in range(4)]
    for body in bodies.values():
        assert body["temperature"] == 0.3
        assert body["top_k"] == 5
        assert body["top_p"] == 0.5
        assert body["stop"] == ["END", "STOP"]
        assert body["seed"] == 11
        assert body["max_tokens"] == 9  # extra fields override what assay sets itself
    # The validators judged against the limit really sent: 9 tokens, not --output-tokens 16.
    assert {line["usage"]["completion_tokens"] for line in read_record_lines(tmp_path / "run")} == {
        9
    }


def test_ignore_eos_is_judged_against_the_max_tokens_extra_body_sets(tmp_path: Path) -> None:
    # The body asks for exactly 9 tokens (ignore_eos); the mock gives 9; assay's own
    # --output-tokens 16 is overridden, so max_tokens_not_honoured must not fire.
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--max-requests", "4", "--ignore-eos",
        "--extra-body", '{"max_tokens": 9}', "--mock-fault", "http_500=0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path / "run")
    assert report.totals.outcomes.completed == 4


def test_config_file_extra_body_is_sent_and_flags_merge_over_it(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    config = tmp_path / "bench.toml"
    config.write_text(
        "max_requests = 2\n[extra_body]\ntemperature = 0.2\nlogit_bias = { 50256 = -100 }\n",
        encoding="utf-8",
    )
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--config", config, "--mock-fault", "http_500=0",
        "--extra-body", '{"temperature": 0.7}', "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    for body in bodies_by_id(wire).values():
        assert body["temperature"] == 0.7
        assert body["logit_bias"] == {"50256": -100}


def test_jsonl_row_fields_are_sent_in_that_rows_body(tmp_path: Path) -> None:
    data = tmp_path / "prompts.jsonl"
    rows = [
        {"prompt": "Name a prime.", "temperature": 0.1, "extra_body": {"seed": 3, "top_k": 2}},
        {"prompt": "Name a colour.", "output_tokens": 4},
    ]
    data.write_text("".join(orjson.dumps(row).decode() + "\n" for row in rows), encoding="utf-8")
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--data", data, "--mock-fault", "http_500=0",
        "--temperature", "0.9", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    first, second = bodies["req-00000000"], bodies["req-00000001"]
    assert (first["temperature"], first["seed"], first["top_k"]) == (0.1, 3, 2)
    assert "extra_body" not in first
    assert "output_tokens" not in second
    assert second["temperature"] == 0.9
    assert "seed" not in second
    assert second["max_tokens"] == 4
    assert "row fields sent in request bodies: temperature, seed, top_k" in result.stdout


def test_csv_cells_of_unknown_columns_are_sent_as_json_values(tmp_path: Path) -> None:
    data = tmp_path / "prompts.csv"
    data.write_text(
        'prompt,temperature,stop,logprobs\nSay hi.,0.25,"[""\\n""]",true\nSay bye.,,halt,\n',
        encoding="utf-8",
    )
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--data", data, "--mock-fault", "http_500=0",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    assert bodies["req-00000000"]["temperature"] == 0.25
    assert bodies["req-00000000"]["stop"] == ["\n"]
    assert bodies["req-00000000"]["logprobs"] is True
    assert bodies["req-00000001"]["stop"] == "halt"
    assert "temperature" not in bodies["req-00000001"]  # an empty cell is not given


def test_extra_body_column_that_is_not_an_object_names_file_and_line(tmp_path: Path) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_text('{"prompt": "a"}\n{"prompt": "b", "extra_body": [1]}\n', encoding="utf-8")
    result = run_fast(tmp_path / "run", "--data", data)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"{data}, line 2: 'extra_body' must be a JSON object" in result.stderr


def test_extra_body_that_is_not_a_json_object_is_a_usage_error(tmp_path: Path) -> None:
    for value in ('{"temperature": ', '["a"]'):
        result = run_assay("run", "--extra-body", value, "--output-dir", tmp_path / "run")
        assert result.exit_code == 2, result.stdout + result.stderr
        assert result.stderr.startswith("error: --extra-body"), result.stderr
        assert "Traceback" not in result.stderr


def test_json_mode_answers_complete_and_prose_is_invalid_json_output(tmp_path: Path) -> None:
    json_mode = ("--extra-body", '{"response_format": {"type": "json_object"}}')
    good = run_fast(
        tmp_path / "good", *ONE_PROCESS, "--max-requests", "6", *json_mode,
        "--mock-fault", "http_500=0",
    )  # fmt: skip
    assert good.exit_code == 0, good.stdout + good.stderr
    lines = read_record_lines(tmp_path / "good")
    assert {line["status"] for line in lines} == {"completed"}
    for line in lines:
        orjson.loads(line["response"]["text"])  # the mock honoured JSON mode
    bad = run_fast(
        tmp_path / "bad", *ONE_PROCESS, "--max-requests", "6", *json_mode,
        "--mock-fault", "invalid_json_output=1", "--max-error-rate", "1",
    )  # fmt: skip
    report = assert_every_request_accounted(tmp_path / "bad")
    assert {code.value for code in report.totals.errors_by_code} == {"invalid_json_output"}
    assert report.totals.outcomes.errored == 6, bad.stdout


def test_tool_requests_get_tool_calls_and_bad_arguments_are_invalid_tool_call(
    tmp_path: Path,
) -> None:
    tools = ("--extra-body", orjson.dumps({"tools": TOOLS}).decode())
    wire = tmp_path / "wire.jsonl"
    good = run_fast(
        tmp_path / "good", *ONE_PROCESS, "--max-requests", "4", *tools,
        "--mock-fault", "http_500=0", "--mock-record-requests", wire,
    )  # fmt: skip
    assert good.exit_code == 0, good.stdout + good.stderr
    assert all(body["tools"] == TOOLS for body in bodies_by_id(wire).values())
    for line in read_record_lines(tmp_path / "good"):
        assert line["status"] == "completed"
        (call,) = line["response"]["tool_calls"]
        assert call["name"] == "get_weather"
        assert orjson.loads(call["arguments"]) == {"city": "Paris", "days": 3}
    bad = run_fast(
        tmp_path / "bad", *ONE_PROCESS, "--max-requests", "4", *tools,
        "--mock-fault", "invalid_tool_call=1", "--max-error-rate", "1",
    )  # fmt: skip
    report = assert_every_request_accounted(tmp_path / "bad")
    assert {code.value for code in report.totals.errors_by_code} == {"invalid_tool_call"}
    assert report.totals.outcomes.errored == 4, bad.stdout
