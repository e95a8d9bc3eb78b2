"""CSV traces: the Azure LLM inference traces and BurstGPT, told apart by their header and
replayed as Mooncake rows without hash blocks (a prompt of the row's context tokens, asking for
its generated tokens), at the trace's own times."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.data import BuiltinTokenizer
from assay.data.describe import describe_source
from assay.data.trace import MooncakeTrace, PlainTrace, TraceConfig, load_trace
from assay.errors import DataError
from tests.cli.cli_harness import assert_every_request_accounted, read_record_lines, run_fast
from tests.cli.wire import bodies_by_id

TOKENIZER = BuiltinTokenizer()
MS = 1_000_000

# As the Azure files write them: seven fractional digits, rows not quite in time order.
AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:46.9805900,879,5
"""
# BurstGPT's columns; the third row failed in the original service (0 response tokens).
BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,0,1087,Conversation log
7.5,GPT-4,417,276,693,API log
10,ChatGPT,1360,105,1465,Conversation log
"""


def _write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _load(path: Path, **changes: object) -> MooncakeTrace | PlainTrace:
    config: dict[str, object] = {"path": path, "model": "m", "endpoint": "completions"}
    config.update(changes)
    return load_trace(TraceConfig.model_validate(config))


def test_an_azure_trace_replays_its_context_and_generated_tokens_at_its_times(
    tmp_path: Path,
) -> None:
    trace = _load(_write(tmp_path, AZURE))
    assert isinstance(trace, MooncakeTrace)
    assert trace.format == "azure"
    assert trace.size() == 3
    # In time order: 46.68, 46.98, 50.995 s.
    assert [trace.offset_ns(i) for i in range(3)] == [0, 300 * MS, 4_314_579 * 1000]
    requests = [trace.request(i) for i in range(3)]
    assert [TOKENIZER.count(str(r.prompt)) for r in requests] == [374, 879, 396]
    assert [r.max_output_tokens for r in requests] == [44, 5, 109]
    assert [r.prompt_tokens for r in requests] == [374, 879, 396]
    assert trace.notes == ()


def test_a_burstgpt_trace_leaves_out_failed_rows_and_says_so(tmp_path: Path) -> None:
    trace = _load(_write(tmp_path, BURSTGPT), endpoint="chat")
    assert isinstance(trace, MooncakeTrace)
    assert trace.format == "burstgpt"
    assert trace.size() == 3
    assert [trace.offset_ns(i) for i in range(3)] == [0, 2_500 * MS, 5_000 * MS]
    assert [row.line for row in trace.rows] == [2, 4, 5]
    request = trace.request(1)
    assert request.messages is not None
    assert TOKENIZER.count(str(request.messages[0]["content"])) == 417
    assert request.max_output_tokens == 276
    [note] = trace.notes
    assert "1 row(s)" in note
    assert "0 Response tokens" in note
    # The run's notes, printed before the load, carry it.
    assert list(describe_source(trace)) == [note]


def test_two_rows_of_one_trace_get_their_own_prompt_text(tmp_path: Path) -> None:
    same = "Timestamp,Request tokens,Response tokens\n0,64,4\n1,64,4\n"
    trace = _load(_write(tmp_path, same))
    assert trace.request(0).prompt != trace.request(1).prompt


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("time,prompt,output\n1,2,3\n", "needs the columns of an Azure LLM inference trace"),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,10,10\n",
            "line 2: 'TIMESTAMP' must be a date and time",
        ),
        (
            "Timestamp,Request tokens,Response tokens\n-1,10,10\n",
            "line 2: 'Timestamp' must be a number of seconds >= 0",
        ),
        (
            "Timestamp,Request tokens,Response tokens\n1,ten,10\n",
            "line 2: 'Request tokens' must be a whole number",
        ),
        (
            "Timestamp,Request tokens,Response tokens\n1,0,10\n",
            "line 2: 'Request tokens' must be an integer >= 1",
        ),
        ("Timestamp,Request tokens,Response tokens\n1,10\n", "line 2: 2 cells, the header names 3"),
        ("Timestamp,Request tokens,Response tokens\n1,10,0\n", "no requests in the trace"),
    ],
)
def test_a_bad_csv_trace_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _load(_write(tmp_path, text))


def test_a_csv_trace_is_refused_for_an_endpoint_it_cannot_fill(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="a Mooncake trace row holds one prompt length"):
        _load(_write(tmp_path, AZURE), endpoint="rerank")


def test_replaying_a_burstgpt_trace_sends_every_replayable_row_and_accounts_for_it(
    tmp_path: Path,
) -> None:
    trace = _write(tmp_path, BURSTGPT)
    wire = tmp_path / "wire.jsonl"
    run_dir = tmp_path / "run"
    result = run_fast(
        run_dir, "--profile", "replay", "--trace", trace, "--replay-speed", "10",
        "--processes", "1", "--endpoint", "completions", "--mock-fault", "empty_stream=0",
        "--mock-fault", "truncated_stream=0", "--mock-fault", "inband_error=0",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(run_dir)
    [step] = report.steps
    assert (step.scheduled, step.not_sent, step.metrics.outcomes.completed) == (3, 0, 3)
    records = {line["id"]: line for line in read_record_lines(run_dir)}
    start = records["req-00000000"]["targeted_start_ns"]
    offsets = [records[f"req-{i:08d}"]["targeted_start_ns"] - start for i in range(3)]
    assert offsets == [0, 250 * MS, 500 * MS]  # 2.5 s and 5 s at ten times the speed
    bodies = bodies_by_id(wire)
    prompts = [str(bodies[f"req-{i:08d}"]["prompt"]) for i in range(3)]
    assert [TOKENIZER.count(p) for p in prompts] == [472, 417, 1360]
    assert [bodies[f"req-{i:08d}"]["max_tokens"] for i in range(3)] == [18, 276, 105]
