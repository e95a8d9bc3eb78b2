"""`record_from_line` is the inverse of `record_line`: every outcome survives a JSON line."""

from __future__ import annotations

import orjson
import pytest

from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    Stage,
    TextAnswer,
    ToolCall,
    UnusableResponse,
    Usage,
)
from assay.core.response import TokenSource
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.records.jsonl import record_from_line, record_line

Record = RequestRecord[GenerationResponse]


def streamed_answer(request_id: str, tokens: int, finish_reason: str | None) -> GenerationResponse:
    chunk_times = tuple(2_000_000 + 8_000_000 * i for i in range(tokens))
    return GenerationResponse(
        request_id=request_id,
        endpoint=Endpoint.chat,
        streamed=True,
        echo=RequestEcho(max_output_tokens=16),
        model="assay-mock",
        answer=TextAnswer(text=" ".join(["token"] * tokens)),
        finish_reason=finish_reason,
        usage=Usage(prompt_tokens=32, completion_tokens=tokens, total_tokens=32 + tokens)
        if finish_reason
        else None,
        content_chunks=tokens,
        streamed_tokens=tokens,
        streamed_token_source=TokenSource.stream,
        terminal_seen=finish_reason is not None,
        timing=ResponseTiming(
            send_ns=1_000_000,
            first_byte_ns=1_900_000,
            first_token_ns=chunk_times[0],
            first_content_ns=chunk_times[0],
            last_token_ns=chunk_times[-1],
            end_ns=chunk_times[-1] + 100_000,
            chunk_times_ns=chunk_times,
            chunk_tokens=(1,) * tokens,
        ),
    )


def record(request_id: str, outcome: Completed[GenerationResponse] | Errored | Cancelled) -> Record:
    return Record(
        request_id=request_id,
        step=2,
        targeted_start_ns=900_000,
        dispatched_ns=950_000,
        finished_ns=200_000_000,
        outcome=outcome,
    )


def through_a_file_line(original: Record) -> Record:
    """What revalidation reads back from the line the run wrote."""
    line = orjson.loads(orjson.dumps(record_line(original)))
    return record_from_line(line)


def test_completed_record_round_trips() -> None:
    original = record(
        "req-00000001", Completed[GenerationResponse](response=streamed_answer("r1", 16, "length"))
    )
    assert through_a_file_line(original) == original


def test_completed_tool_call_answer_round_trips() -> None:
    answer = streamed_answer("r2", 3, "tool_calls").model_copy(
        update={
            "answer": TextAnswer(
                tool_calls=(
                    ToolCall(
                        index=0, id="call_1", name="get_weather", arguments='{"city": "Oslo"}'
                    ),
                )
            )
        }
    )
    original = record("req-00000002", Completed[GenerationResponse](response=answer))
    assert through_a_file_line(original) == original


def test_errored_record_with_partial_response_round_trips() -> None:
    partial = streamed_answer("r3", 2, None)
    diagnostic = UnusableResponse(
        code=DiagnosticCode.truncated_stream,
        message="stream ended without [DONE] or a terminal event and without finish_reason, "
        "after 2 content chunks",
        evidence=Evidence(
            excerpt='data: {"choices": [{"delta": {"content": "token"}}]}\n\n', partial=partial
        ),
    )
    original = record(
        "req-00000003",
        Errored(diagnostic=diagnostic, judged_by=JudgedBy.validator, validator="truncated_stream"),
    )
    back = through_a_file_line(original)
    assert back == original
    assert isinstance(back.outcome, Errored)
    assert back.outcome.diagnostic.stage is Stage.content
    assert back.outcome.diagnostic.evidence.partial == partial


def test_errored_transport_record_without_response_round_trips() -> None:
    diagnostic = UnusableResponse(
        code=DiagnosticCode.http_status,
        message="HTTP 503 Service Unavailable: server overloaded",
        evidence=Evidence(
            http_status=503,
            excerpt='{"error": {"message": "server overloaded", "type": "ServiceUnavailable"}}',
        ),
    )
    original = record("req-00000004", Errored(diagnostic=diagnostic, judged_by=JudgedBy.transport))
    assert through_a_file_line(original) == original


def test_internal_error_keeps_its_traceback() -> None:
    diagnostic = UnusableResponse(
        code=DiagnosticCode.internal_error,
        message="ZeroDivisionError: division by zero",
        evidence=Evidence(traceback="Traceback (most recent call last):\n  ...\nZeroDivisionError"),
    )
    original = record("req-00000005", Errored(diagnostic=diagnostic, judged_by=JudgedBy.internal))
    assert through_a_file_line(original) == original


@pytest.mark.parametrize("reason", ["cancelled", "stop_signal"])
def test_cancelled_record_round_trips(reason: str) -> None:
    original = record("req-00000006", Cancelled(reason=reason))
    assert through_a_file_line(original) == original


def test_line_with_unknown_status_is_rejected() -> None:
    line = record_line(record("req-00000007", Cancelled()))
    with pytest.raises(KeyError, match="unknown status"):
        record_from_line({**line, "status": "skipped"})


def test_a_session_turn_travels_on_its_record_and_its_line() -> None:
    original = record("req-00000008-turn-03", Cancelled()).model_copy(update={"turn": 3})
    line = record_line(original)
    assert list(line)[:3] == ["id", "step", "turn"]
    assert line["turn"] == 3
    assert through_a_file_line(original) == original


def test_a_record_outside_any_session_writes_no_turn_key() -> None:
    assert "turn" not in record_line(record("req-00000009", Cancelled()))
