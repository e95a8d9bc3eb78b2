"""RecordWriter: one JSON line per request as it completes, buffered, flushed on close."""

from __future__ import annotations

from pathlib import Path

import orjson

from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.records.jsonl import RecordWriter

MS = 1_000_000
Record = RequestRecord[GenerationResponse]


def _response(request_id: str, tokens: int, usage: Usage | None) -> GenerationResponse:
    times = tuple((100 + 10 * k) * MS for k in range(tokens))
    return GenerationResponse(
        request_id=request_id,
        endpoint=Endpoint.chat,
        streamed=True,
        model="tiny-llama",
        answer=TextAnswer(text="ult I" if tokens else ""),
        finish_reason="length" if usage else None,
        usage=usage,
        content_chunks=tokens,
        streamed_tokens=tokens,
        streamed_token_source=TokenSource.stream,
        terminal_seen=usage is not None,
        timing=ResponseTiming(
            send_ns=0,
            first_token_ns=times[0] if times else None,
            end_ns=(times[-1] if times else 0) + MS,
            chunk_times_ns=times,
            chunk_tokens=(1,) * tokens,
        ),
    )


def _records() -> list[Record]:
    completed = Record(
        request_id="r1",
        step=2,
        targeted_start_ns=0,
        dispatched_ns=10,
        finished_ns=131 * MS,
        outcome=Completed(
            response=_response("r1", 4, Usage(prompt_tokens=21, completion_tokens=4))
        ),
    )
    errored = Record(
        request_id="r2",
        step=2,
        targeted_start_ns=5,
        dispatched_ns=15,
        finished_ns=121 * MS,
        outcome=Errored(
            diagnostic=UnusableResponse(
                code=DiagnosticCode.truncated_stream,
                message="stream ended after 3 chunks without [DONE] and without finish_reason",
                evidence=Evidence(
                    http_status=200,
                    excerpt='data: {"choices":[{"delta":{"content":"ise"}}]}',
                    partial=_response("r2", 3, None),
                ),
            ),
            judged_by=JudgedBy.validator,
            validator="truncated_stream",
        ),
    )
    cancelled = Record(
        request_id="r3",
        step=2,
        targeted_start_ns=9,
        dispatched_ns=20,
        finished_ns=50 * MS,
        outcome=Cancelled(reason="interrupted by the user"),
    )
    return [completed, errored, cancelled]


def _lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_each_outcome_is_one_line_with_status_timings_and_usage(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    with RecordWriter(path) as writer:
        for record in _records():
            writer.write(record)
    completed, errored, cancelled = _lines(path)
    assert completed["id"] == "r1"
    assert completed["step"] == 2
    assert completed["status"] == "completed"
    assert completed["usage"] == {
        "prompt_tokens": 21,
        "completion_tokens": 4,
        "reasoning_tokens": None,
        "cached_tokens": None,
        "total_tokens": None,
    }
    timing = completed["timing"]
    assert isinstance(timing, dict)
    assert timing["first_token_ns"] == 100 * MS
    response = completed["response"]
    assert isinstance(response, dict)
    assert (response["text"], response["finish_reason"], response["model"]) == (
        "ult I",
        "length",
        "tiny-llama",
    )
    assert "timing" not in response
    assert errored["status"] == "errored"
    assert errored["code"] == "truncated_stream"
    assert errored["stage"] == "content"
    assert errored["message"] == (
        "stream ended after 3 chunks without [DONE] and without finish_reason"
    )
    assert errored["http_status"] == 200
    assert errored["usage"] is None
    assert isinstance(errored["response"], dict)
    assert errored["response"]["streamed_tokens"] == 3  # the partial answer is kept
    assert cancelled["status"] == "cancelled"
    assert cancelled["reason"] == "interrupted by the user"
    assert cancelled["response"] is None
    assert "code" not in cancelled


def test_lines_are_buffered_until_the_buffer_fills(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    record = _records()[0]
    with RecordWriter(path, buffer_lines=4) as writer:
        for _ in range(3):
            writer.write(record)
        assert path.read_bytes() == b""
        writer.write(record)
        assert len(_lines(path)) == 4
        writer.write(record)
    assert len(_lines(path)) == 5
    assert writer.written == 5


def test_records_are_flushed_when_the_run_fails(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    try:
        with RecordWriter(path) as writer:
            writer.write(_records()[1])
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert [line["code"] for line in _lines(path)] == ["truncated_stream"]


def test_append_mode_keeps_earlier_lines(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "requests.jsonl"
    with RecordWriter(path) as writer:
        writer.write(_records()[0])
    with RecordWriter(path, append=True) as writer:
        writer.write(_records()[2])
    assert [line["id"] for line in _lines(path)] == ["r1", "r3"]
