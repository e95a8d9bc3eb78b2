"""Type-level facts of the contract, proved by mypy with `assert_type` (no-ops at run time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_type

from returns.result import Failure, Result, Success

from assay.core import (
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
    outcome,
)
from assay.core.answer import AnyAnswer
from assay.records import RequestRecord
from assay.testing import FakeClock
from assay.validators import (
    Validator,
    chain,
    default_chain,
    empty_response,
    resolve_validator,
    usage_mismatch,
)
from assay.worker import execute

Check = Callable[[GenerationResponse], Result[GenerationResponse, UnusableResponse]]

ANSWER = GenerationResponse(
    request_id="t1",
    endpoint=Endpoint.chat,
    streamed=True,
    answer=TextAnswer(text="Paris."),
    finish_reason="stop",
    usage=Usage(prompt_tokens=14, completion_tokens=2),
    content_chunks=2,
    streamed_tokens=2,
    streamed_token_source=TokenSource.stream,
    terminal_seen=True,
    timing=ResponseTiming(send_ns=0, end_ns=1),
)


def test_composed_chain_is_a_validator_of_generation_responses() -> None:
    composed = chain(default_chain(Endpoint.chat), empty_response, usage_mismatch(two_sided=True))
    assert_type(composed, Check)
    assert_type(composed, Validator[GenerationResponse])
    assert_type(chain(composed, resolve_validator("truncated_stream")), Check)


def test_applied_chain_gives_a_result_of_response_or_unusable() -> None:
    result = chain(default_chain(Endpoint.chat), empty_response)(ANSWER)
    assert_type(result, Result[GenerationResponse, UnusableResponse])
    start: Result[GenerationResponse, UnusableResponse] = Success(ANSWER)
    assert_type(
        start.bind(default_chain(Endpoint.chat)), Result[GenerationResponse, UnusableResponse]
    )
    assert result == Success(ANSWER)


def test_match_captures_through_outcome_are_typed() -> None:
    result = default_chain(Endpoint.chat)(ANSWER)
    match outcome(result):
        case Success(response):
            assert_type(response, GenerationResponse)
            assert response.output_tokens == 2
        case Failure(unusable):
            assert_type(unusable, UnusableResponse)
            raise AssertionError(unusable.message)


async def test_worker_record_is_typed_by_the_resolver_response() -> None:
    async def resolve(prompt: str) -> Result[GenerationResponse, UnusableResponse]:
        return Success(ANSWER)

    sunk: list[RequestRecord[GenerationResponse]] = []
    record = await execute(
        "What is the capital of France?",
        request_id="t1",
        resolve=resolve,
        validate=default_chain(Endpoint.chat),
        clock=FakeClock(),
        targeted_start_ns=0,
        sink=sunk.append,
    )
    assert_type(record, RequestRecord[GenerationResponse])
    assert sunk == [record]


def test_the_answer_is_one_of_the_sealed_kinds() -> None:
    assert_type(ANSWER.answer, AnyAnswer)
    assert_type(ANSWER.text, str)
    assert isinstance(ANSWER.answer, TextAnswer)
