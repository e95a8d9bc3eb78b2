"""The record line's fast path for a plain `GenerationResponse` writes pydantic's bytes, for any
record: completed, errored or cancelled, with or without every optional field.

The writer looks only at the fields of a `GenerationResponse` whose declared type can hold a
model; the reference is the line with every model dumped by pydantic (`pydantic_line`).
"""

from __future__ import annotations

from typing import get_args

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    ExchangeIds,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    SentBody,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.core.answer import AnyAnswer
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.records.jsonl import _MODEL_FIELDS, record_line
from tests.drawn_answers import answers
from tests.records.test_record_line_bytes import PARENT, pydantic_line, streamed_chat

Record = RequestRecord[GenerationResponse]

texts = st.text(max_size=12)
maybe_texts = st.none() | texts
counts = st.integers(min_value=0, max_value=10_000)
maybe_counts = st.none() | counts

usages = st.builds(
    Usage,
    prompt_tokens=maybe_counts,
    completion_tokens=maybe_counts,
    reasoning_tokens=maybe_counts,
    cached_tokens=maybe_counts,
    total_tokens=maybe_counts,
)
echoes = st.builds(
    RequestEcho,
    max_output_tokens=maybe_counts,
    json_mode=st.booleans(),
    choices=st.integers(min_value=1, max_value=4),
)
ids = st.builds(
    ExchangeIds,
    sent_header=st.sampled_from(["X-Request-Id", "X-Correlation-Id"]),
    sent=maybe_texts,
    echoed=maybe_texts,
    answer=maybe_texts,
    traceparent=st.none() | st.just(PARENT),
)


@st.composite
def timings(draw: st.DrawFn) -> ResponseTiming:
    times = tuple(sorted(draw(st.lists(st.integers(0, 10**12), max_size=6))))
    chunk_tokens = tuple(
        draw(st.lists(st.integers(0, 3), min_size=len(times), max_size=len(times)))
    )
    return ResponseTiming(
        send_ns=0,
        first_byte_ns=draw(st.none() | st.integers(0, 10**12)),
        first_token_ns=times[0] if times else None,
        last_token_ns=times[-1] if times else None,
        end_ns=(times[-1] if times else 0) + 1,
        chunk_times_ns=times,
        chunk_tokens=chunk_tokens,
    )


endpoints_and_answers = st.sampled_from(list(Endpoint)).flatmap(
    lambda endpoint: st.tuples(st.just(endpoint), answers(endpoint.traits.answer))
)


@st.composite
def responses(draw: st.DrawFn) -> GenerationResponse:
    endpoint, answer = draw(endpoints_and_answers)
    response: GenerationResponse = draw(
        _responses.map(
            lambda drawn: drawn.model_copy(update={"endpoint": endpoint, "answer": answer})
        )
    )
    return response


_responses = st.builds(
    GenerationResponse,
    request_id=texts,
    endpoint=st.just(Endpoint.chat),
    streamed=st.booleans(),
    echo=echoes,
    model=maybe_texts,
    finish_reason=maybe_texts,
    usage=st.none() | usages,
    content_chunks=counts,
    streamed_tokens=counts,
    streamed_token_source=st.sampled_from(list(TokenSource)),
    terminal_seen=st.booleans(),
    events_after_terminal=counts,
    http_status=st.none() | st.integers(100, 599),
    ids=st.none() | ids,
    timing=timings(),
    sent=st.none()
    | st.builds(SentBody, body_bytes=counts, images=counts, audio_seconds=st.floats(0, 60)),
)


@st.composite
def errored(draw: st.DrawFn) -> Errored:
    partial = draw(st.none() | responses())
    diagnostic = UnusableResponse(
        code=draw(
            st.sampled_from([DiagnosticCode.truncated_stream, DiagnosticCode.empty_response])
        ),
        message=draw(texts),
        evidence=Evidence(
            http_status=draw(st.none() | st.integers(100, 599)),
            excerpt=draw(maybe_texts),
            partial=partial,
            traceback=draw(maybe_texts),
            ids=draw(st.none() | ids) if partial is None else None,
        ),
    )
    judged_by = draw(st.sampled_from(list(JudgedBy)))
    validator = draw(maybe_texts) if judged_by is JudgedBy.validator else None
    return Errored(diagnostic=diagnostic, judged_by=judged_by, validator=validator)


outcomes = (
    responses().map(lambda response: Completed[GenerationResponse](response=response))
    | errored()
    | st.builds(Cancelled, reason=st.sampled_from(["cancelled", "stop_signal"]))
)
records = st.builds(
    Record,
    request_id=texts,
    step=st.integers(0, 50),
    turn=st.none() | st.integers(1, 8),
    targeted_start_ns=st.integers(-(10**9), 10**12),
    dispatched_ns=st.integers(0, 10**12),
    finished_ns=st.integers(0, 10**12),
    outcome=outcomes,
)


@settings(max_examples=400, deadline=None)
@given(records)
def test_record_line_writes_pydantics_bytes_for_any_record(record: Record) -> None:
    assert orjson.dumps(record_line(record)) == orjson.dumps(pydantic_line(record))


def test_a_streamed_chat_answer_built_by_the_handler_writes_pydantics_bytes() -> None:
    for outcome in (Completed[GenerationResponse](response=streamed_chat()), Cancelled()):
        record = Record(
            request_id="r",
            turn=2,
            targeted_start_ns=0,
            dispatched_ns=1,
            finished_ns=2,
            outcome=outcome,
        )
        assert orjson.dumps(record_line(record)) == orjson.dumps(pydantic_line(record))


def test_the_fields_looked_at_are_every_field_that_can_hold_a_model() -> None:
    """A field added to `GenerationResponse` that holds a model is looked at without a change."""
    answer_keys = {key for kind in get_args(AnyAnswer) for key in kind.STORED_AS}
    # Every key an answer is stored under holds a model (a summary, tool calls) but its texts.
    assert set(_MODEL_FIELDS) == {"echo", "sent"} | (answer_keys - {"text", "reasoning"})
