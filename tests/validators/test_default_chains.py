"""The default chain per endpoint, strict mode, and user composition on top of it."""

from __future__ import annotations

import pytest
from returns.result import Failure, Result, Success

from assay.core import (
    DiagnosticCode,
    EmbeddingSummary,
    Endpoint,
    Evidence,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    TokenSource,
    UnusableResponse,
    Usage,
    Vectors,
)
from assay.validators import BUILTIN_VALIDATORS, Chain, chain, default_chain

GENERATION_ENDPOINTS = [Endpoint.completions, Endpoint.chat, Endpoint.responses]


def _answer(endpoint: Endpoint, **fields: object) -> GenerationResponse:
    base: dict[str, object] = {
        "request_id": "r-9",
        "endpoint": endpoint,
        "streamed": True,
        "text": "Paris is the capital of France.",
        "finish_reason": "stop",
        "usage": Usage(prompt_tokens=12, completion_tokens=7, total_tokens=19),
        "content_chunks": 7,
        "streamed_tokens": 7,
        "streamed_token_source": TokenSource.stream,
        "terminal_seen": True,
        "timing": ResponseTiming(send_ns=0, end_ns=3_000_000),
    }
    return GenerationResponse.model_validate({**base, **fields})


@pytest.mark.parametrize("endpoint", GENERATION_ENDPOINTS)
@pytest.mark.parametrize("strict", [False, True])
def test_typical_answer_passes_the_default_chain(endpoint: Endpoint, strict: bool) -> None:
    response = _answer(endpoint)
    assert default_chain(endpoint, strict=strict)(response) == Success(response)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"terminal_seen": False, "finish_reason": None}, DiagnosticCode.truncated_stream),
        (
            {"text": "", "usage": Usage(completion_tokens=0), "streamed_tokens": 0},
            DiagnosticCode.empty_response,
        ),
        ({"streamed_tokens": 30}, DiagnosticCode.usage_mismatch),
        (
            {"echo": RequestEcho(max_output_tokens=64, ignore_eos=True)},
            DiagnosticCode.max_tokens_not_honoured,
        ),
        ({"echo": RequestEcho(json_mode=True)}, DiagnosticCode.invalid_json_output),
    ],
)
@pytest.mark.parametrize("endpoint", GENERATION_ENDPOINTS)
def test_default_chain_reports_each_fault_with_its_code(
    endpoint: Endpoint, fields: dict[str, object], code: DiagnosticCode
) -> None:
    result = default_chain(endpoint)(_answer(endpoint, **fields))
    assert result.failure().code is code


def test_truncation_wins_over_emptiness_in_the_default_order() -> None:
    cut_and_empty = _answer(
        Endpoint.chat,
        terminal_seen=False,
        finish_reason=None,
        text="",
        usage=None,
        streamed_tokens=0,
    )
    assert default_chain(Endpoint.chat)(cut_and_empty).failure().code is (
        DiagnosticCode.truncated_stream
    )


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions])
def test_default_chain_rejects_a_chat_or_completions_stream_ended_without_finish_reason(
    endpoint: Endpoint,
) -> None:
    # Issue 8: llama-cpp-python cuts concurrent streams after one chunk and still sends [DONE].
    no_finish = _answer(endpoint, finish_reason=None)
    diagnostic = default_chain(endpoint)(no_finish).failure()
    assert diagnostic.code is DiagnosticCode.missing_finish_reason
    assert "ended with [DONE] but no chunk carried a finish_reason" in diagnostic.message


def test_strict_chain_widens_missing_finish_reason_to_responses_and_bodies() -> None:
    # /v1/responses streams carry no finish_reason on the wire, and minimal servers omit it in
    # non-streamed bodies: both stay strict-only.
    for no_finish in (
        _answer(Endpoint.responses, finish_reason=None),
        _answer(Endpoint.chat, finish_reason=None, streamed=False),
    ):
        assert default_chain(no_finish.endpoint)(no_finish) == Success(no_finish)
        assert default_chain(no_finish.endpoint, strict=True)(no_finish).failure().code is (
            DiagnosticCode.missing_finish_reason
        )


def test_strict_chain_checks_usage_both_ways_only_on_a_running_usage() -> None:
    batched = _answer(Endpoint.chat, streamed_tokens=3)
    assert default_chain(Endpoint.chat)(batched) == Success(batched)
    assert default_chain(Endpoint.chat, strict=True)(batched) == Success(batched)
    running = _answer(
        Endpoint.chat, streamed_tokens=3, streamed_token_source=TokenSource.continuous_usage
    )
    assert default_chain(Endpoint.chat, strict=True)(running).failure().code is (
        DiagnosticCode.usage_mismatch
    )


def test_embeddings_chain_checks_only_the_vectors() -> None:
    embeddings = GenerationResponse(
        request_id="e-1",
        endpoint=Endpoint.embeddings,
        streamed=False,
        echo=RequestEcho(expected_embeddings=3),
        answer=Vectors(summary=EmbeddingSummary(count=3, dimension=768, all_finite=True)),
        usage=Usage(prompt_tokens=21, total_tokens=21),
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    for strict in (False, True):
        validate = default_chain(Endpoint.embeddings, strict=strict)
        assert validate(embeddings) == Success(embeddings)
    broken = embeddings.model_copy(
        update={
            "answer": Vectors(summary=EmbeddingSummary(count=3, dimension=768, all_finite=False))
        }
    )
    assert default_chain(Endpoint.embeddings)(broken).failure().code is (
        DiagnosticCode.empty_embedding
    )


def _no_refusals(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    if response.text.startswith("I'm sorry"):
        return Failure(
            UnusableResponse(
                code=DiagnosticCode.empty_response,
                message="the model refused instead of answering",
                evidence=Evidence(partial=response),
            )
        )
    return Success(response)


def test_user_validator_composes_after_the_default_chain() -> None:
    validate = chain(default_chain(Endpoint.chat), _no_refusals)
    assert isinstance(validate, Chain)
    assert validate.steps[-1] is _no_refusals
    refusal = _answer(Endpoint.chat, text="I'm sorry, I can't help with that.")
    assert validate(refusal).failure().message == "the model refused instead of answering"


def test_every_builtin_is_listed_once_with_a_description() -> None:
    names = [builtin.name for builtin in BUILTIN_VALIDATORS]
    assert len(names) == len(set(names))
    assert all(builtin.description for builtin in BUILTIN_VALIDATORS)
    codes = {builtin.code for builtin in BUILTIN_VALIDATORS}
    assert DiagnosticCode.empty_response in codes
    assert DiagnosticCode.empty_embedding in codes
