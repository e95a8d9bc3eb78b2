"""records.jsonl lines are built without pydantic's serializer, and must write the same bytes.

The reference below is the line as pydantic's `model_dump` builds it (how records.jsonl was
written before); every kind of record, including responses built unvalidated by the handlers,
must serialize to exactly the same bytes, so the record schema and every reader are unchanged.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import BaseModel, JsonValue

from assay.core import (
    DiagnosticCode,
    EmbeddingSummary,
    Endpoint,
    Evidence,
    ExchangeIds,
    GenerationRequest,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    TextAnswer,
    ToolCall,
    UnusableResponse,
    Usage,
    Vectors,
)
from assay.handlers import Transfer, handler_for
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.records.jsonl import _stored_response, record_line

Record = RequestRecord[GenerationResponse]


PARENT = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"


def pydantic_line(record: Record) -> dict[str, Any]:
    """The line with every model dumped by pydantic: the bytes records.jsonl must keep."""
    line = record_line(record)
    outcome = record.outcome
    response = None
    ids = None
    if isinstance(outcome, Completed):
        response = outcome.response
    elif isinstance(outcome, Errored):
        response = outcome.diagnostic.evidence.partial
        ids = outcome.diagnostic.evidence.ids
    if response is not None:
        ids = response.ids or ids
        line["timing"] = response.timing.model_dump()
        line["usage"] = None if response.usage is None else response.usage.model_dump()
        line["response"] = response.model_dump(exclude={"timing", "usage", "ids"})
    if ids is not None:
        line["ids"] = ids.model_dump()
    return line


def record_of(outcome: Completed[GenerationResponse] | Errored | Cancelled) -> Record:
    return Record(
        request_id="req-00000001",
        step=1,
        targeted_start_ns=10,
        dispatched_ns=12,
        finished_ns=99,
        outcome=outcome,
    )


def streamed_chat() -> GenerationResponse:
    """A response as the chat handler builds it (unvalidated, from the stream)."""
    request = GenerationRequest(
        request_id="r1", endpoint=Endpoint.chat, model="m", prompt="Hi", max_output_tokens=3
    )
    stream = handler_for(Endpoint.chat).open_accumulator(request, 0)
    tool = '{"index":0,"id":"c1","function":{"name":"f","arguments":"{\\"a\\": 1}"}}'
    chunks = [
        '{"id":"chatcmpl-7","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}',
        '{"choices":[{"index":0,"delta":{"content":"Hé"}}]}',
        '{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[' + tool + "]}}]}",
        '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
        '"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}',
        "[DONE]",
    ]
    for received_ns, chunk in zip((5, 7, 8, 9, 11, 12), chunks, strict=True):
        stream.feed(chunk.encode(), received_ns)
    ids = ExchangeIds(sent_header="X-Request-Id", sent="u-1", echoed="u-1", traceparent=PARENT)
    return stream.partial(Transfer(send_ns=1, end_ns=13, first_byte_ns=4, http_status=200, ids=ids))


def embeddings_answer() -> GenerationResponse:
    return GenerationResponse(
        request_id="r2",
        endpoint=Endpoint.embeddings,
        streamed=False,
        echo=RequestEcho(expected_embeddings=2),
        answer=Vectors(summary=EmbeddingSummary(count=2, dimension=4, all_finite=True)),
        usage=Usage(prompt_tokens=6, total_tokens=6),
        timing=ResponseTiming(send_ns=0, end_ns=5),
    )


def json_mode_answer() -> GenerationResponse:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 1.5}},
    }
    return GenerationResponse(
        request_id="r3",
        endpoint=Endpoint.completions,
        streamed=False,
        echo=RequestEcho(max_output_tokens=8, json_mode=True, json_schema=schema, choices=2),
        answer=TextAnswer(
            text='{"n": 2}',
            tool_calls=(ToolCall(index=1, name="g"), ToolCall(index=0, id="x", arguments="{}")),
        ),
        finish_reason="stop",
        http_status=200,
        timing=ResponseTiming(send_ns=0, first_token_ns=4, end_ns=4),
    )


class ResponseWithNote(GenerationResponse):
    """A library user's subclass: its extra field must be written too."""

    note: str = "kept"


def subclass_answer() -> GenerationResponse:
    return ResponseWithNote(
        request_id="r4",
        endpoint=Endpoint.chat,
        streamed=False,
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )


class Ranked(BaseModel):
    """A result model nested one level deeper than the flat models the writer knows."""

    index: int
    score: float
    echo: RequestEcho = RequestEcho()


class ResponseWithResults(GenerationResponse):
    """An answer kind with a field of models the record writer was never told about."""

    best: Ranked | None = None
    results: tuple[Ranked, ...] = ()


def unknown_models_answer() -> GenerationResponse:
    return ResponseWithResults(
        request_id="r5",
        endpoint=Endpoint.chat,
        streamed=False,
        best=Ranked(index=1, score=0.5, echo=RequestEcho(choices=2)),
        results=(Ranked(index=1, score=0.5), Ranked(index=0, score=0.25)),
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )


def errored_with(partial: GenerationResponse | None) -> Errored:
    # Without a partial answer the evidence holds the exchange's ids.
    ids = ExchangeIds(sent_header="X-Request-Id", sent="u-2") if partial is None else None
    diagnostic = UnusableResponse(
        code=DiagnosticCode.truncated_stream,
        message="stream ended without [DONE]",
        evidence=Evidence(http_status=200, excerpt="data: {}", partial=partial, ids=ids),
    )
    return Errored(diagnostic=diagnostic, judged_by=JudgedBy.validator, validator="v")


@pytest.mark.parametrize(
    "outcome",
    [
        pytest.param(Completed[GenerationResponse](response=streamed_chat()), id="streamed-chat"),
        pytest.param(Completed[GenerationResponse](response=embeddings_answer()), id="embeddings"),
        pytest.param(Completed[GenerationResponse](response=json_mode_answer()), id="json-mode"),
        pytest.param(Completed[GenerationResponse](response=subclass_answer()), id="subclass"),
        pytest.param(errored_with(streamed_chat()), id="errored-partial"),
        pytest.param(errored_with(None), id="errored-bare"),
        pytest.param(Cancelled(reason="stop_signal"), id="cancelled"),
    ],
)
def test_record_line_writes_the_bytes_pydantic_would(
    outcome: Completed[GenerationResponse] | Errored | Cancelled,
) -> None:
    record = record_of(outcome)
    assert orjson.dumps(record_line(record)) == orjson.dumps(pydantic_line(record))


def test_subclass_fields_are_written() -> None:
    line = record_line(record_of(Completed[GenerationResponse](response=subclass_answer())))
    assert line["response"]["note"] == "kept"


def test_record_line_leaves_the_record_unchanged() -> None:
    answer = json_mode_answer()
    before = answer.model_dump()
    line = record_line(record_of(Completed[GenerationResponse](response=answer)))
    line["response"]["echo"]["json_mode"] = False
    line["timing"]["end_ns"] = 0
    assert answer.model_dump() == before


def test_a_response_field_of_models_the_writer_does_not_know_is_written_as_pydantic_would() -> None:
    """A field added to the response (an endpoint's own results) needs no change in the writer:
    the fast path dumps any model-valued field, nested ones included, as `model_dump` does."""
    answer = unknown_models_answer()
    stored = _stored_response(answer)
    assert orjson.dumps(stored) == orjson.dumps(
        answer.model_dump(exclude={"timing", "usage", "ids"})
    )
