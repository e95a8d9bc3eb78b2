"""The core types: stage derivation, excerpt capping, and record JSON round trips."""

from __future__ import annotations

import pytest
from pydantic import JsonValue, ValidationError

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    ResponseTiming,
    Scores,
    ScoreSummary,
    Stage,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
    Vectors,
    cap_excerpt,
    stage_of,
)
from assay.core import request as request_module
from assay.core.request import PLAIN_ECHOES_KEPT, RequestEcho
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord


def _response(**fields: object) -> GenerationResponse:
    return GenerationResponse.model_validate(
        {
            "request_id": "r1",
            "endpoint": Endpoint.chat,
            "streamed": True,
            "timing": ResponseTiming(send_ns=0, end_ns=10),
            **fields,
        }
    )


def test_every_code_has_a_stage_and_a_meaning() -> None:
    from assay.core import CODE_MEANINGS

    for code in DiagnosticCode:
        assert isinstance(stage_of(code), Stage)
        assert CODE_MEANINGS[code]


def test_stage_is_derived_from_code_and_mismatch_is_rejected() -> None:
    u = UnusableResponse(code=DiagnosticCode.truncated_stream, message="m")
    assert u.stage is Stage.content
    with pytest.raises(ValidationError):
        UnusableResponse(code=DiagnosticCode.truncated_stream, stage=Stage.transport, message="m")


def test_excerpt_is_capped_and_says_how_much_was_cut() -> None:
    text = cap_excerpt("é" * 3000, limit=100)
    assert text is not None
    assert text.startswith("é" * 100)
    assert text.endswith("[2900 more]")


def test_output_tokens_prefer_server_usage_over_streamed_count() -> None:
    r = _response(streamed_tokens=5, streamed_token_source=TokenSource.stream)
    assert (r.output_tokens, r.output_token_source) == (5, TokenSource.stream)
    r = _response(streamed_tokens=5, usage=Usage(completion_tokens=7))
    assert (r.output_tokens, r.output_token_source) == (7, TokenSource.usage)


@pytest.mark.parametrize(
    "outcome",
    [
        Completed[GenerationResponse](response=_response(text="hi")),
        Errored(
            diagnostic=UnusableResponse(code=DiagnosticCode.empty_response, message="m"),
            judged_by=JudgedBy.validator,
            validator="empty_response",
        ),
        Cancelled(reason="interrupted"),
    ],
)
def test_record_round_trips_through_json(
    outcome: Completed[GenerationResponse] | Errored | Cancelled,
) -> None:
    record = RequestRecord[GenerationResponse](
        request_id="r1", targeted_start_ns=0, dispatched_ns=1, finished_ns=2, outcome=outcome
    )
    parsed = RequestRecord[GenerationResponse].model_validate_json(record.model_dump_json())
    assert parsed == record
    assert parsed.outcome.status == outcome.status


def test_embedding_request_echo_counts_inputs() -> None:
    request = GenerationRequest(
        request_id="e", endpoint=Endpoint.embeddings, model="m", prompt=("a", "b", "c")
    )
    assert request.echo().expected_embeddings == 3


def test_plain_text_requests_share_one_echo_per_endpoint_and_limits() -> None:
    def plain(endpoint: Endpoint, limit: int | None, **fields: object) -> GenerationRequest:
        return GenerationRequest.model_validate(
            {"request_id": "p", "endpoint": endpoint, "model": "m", "prompt": "hi"}
            | {"max_output_tokens": limit}
            | fields
        )

    chat = plain(Endpoint.chat, 8).echo()
    assert chat is plain(Endpoint.chat, 8).echo()
    assert chat == RequestEcho(max_output_tokens=8)
    assert plain(Endpoint.chat, 9).echo().max_output_tokens == 9
    assert plain(Endpoint.chat, 8, ignore_eos=True).echo().ignore_eos
    # A plain request of another kind of answer, with the same limits, has its own echo.
    embeddings = plain(Endpoint.embeddings, 8, prompt=("a", "b")).echo()
    assert embeddings.expected_embeddings == 2
    assert plain(Endpoint.embeddings, 8, prompt=("a", "b", "c")).echo().expected_embeddings == 3
    # A request with extra body fields is never plain.
    asked = plain(Endpoint.chat, 8, extra_body={"response_format": {"type": "json_object"}})
    assert asked.echo().json_mode
    assert not plain(Endpoint.chat, 8).echo().json_mode


def test_shared_echoes_stay_bounded_whatever_the_limits() -> None:
    for limit in range(3 * PLAIN_ECHOES_KEPT):
        request = GenerationRequest(
            request_id="p", endpoint=Endpoint.completions, model="m", prompt="hi"
        ).model_copy(update={"max_output_tokens": limit})
        assert request.echo().max_output_tokens == limit
    assert len(request_module._PLAIN_ECHOES) <= PLAIN_ECHOES_KEPT


def test_json_mode_is_detected_from_response_format() -> None:
    schema: dict[str, JsonValue] = {"type": "object"}
    request = GenerationRequest(
        request_id="j",
        endpoint=Endpoint.chat,
        model="m",
        prompt="Answer in JSON.",
        extra_body={"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}},
    )
    assert request.json_mode()
    assert request.echo().json_schema == schema


def test_json_mode_is_detected_from_responses_text_format() -> None:
    schema: dict[str, JsonValue] = {"type": "object", "required": ["a"]}
    request = GenerationRequest(
        request_id="j",
        endpoint=Endpoint.responses,
        model="m",
        prompt="Answer in JSON.",
        extra_body={"text": {"format": {"type": "json_schema", "name": "x", "schema": schema}}},
    )
    assert request.json_mode()
    assert request.echo().json_schema == schema
    plain = GenerationRequest(
        request_id="k",
        endpoint=Endpoint.responses,
        model="m",
        prompt="Answer in JSON.",
        extra_body={"text": {"format": {"type": "json_object"}}},
    )
    assert plain.json_mode()
    assert plain.json_schema() is None


def test_an_answer_holds_only_its_own_kind() -> None:
    # One type per kind of answer: an embeddings answer with text cannot be built, from an
    # answer of another kind or from a stored line.
    timing = ResponseTiming(send_ns=0, end_ns=1)
    with pytest.raises(ValidationError, match="text"):
        GenerationResponse.model_validate(
            {
                "request_id": "e",
                "endpoint": "embeddings",
                "streamed": False,
                "text": "hi",
                "timing": timing,
            }
        )
    with pytest.raises(ValidationError, match="holds vectors"):
        GenerationResponse(
            request_id="e",
            endpoint=Endpoint.embeddings,
            streamed=False,
            answer=TextAnswer(),
            timing=timing,
        )
    vectors = GenerationResponse(
        request_id="e", endpoint=Endpoint.embeddings, streamed=False, timing=timing
    )
    assert vectors.answer == Vectors()
    assert vectors.text == ""


def test_a_stored_response_loads_into_the_answer_of_its_endpoint() -> None:
    summary = {
        "count": 2,
        "lowest_index": 0,
        "highest_index": 1,
        "repeated_index": None,
        "non_finite": 0,
    }
    stored = {
        "request_id": "r",
        "endpoint": "rerank",
        "streamed": False,
        "text": "",
        "reasoning": "",
        "tool_calls": [],
        "embeddings": None,
        "scores": summary,
        "timing": {"send_ns": 0, "end_ns": 1},
    }
    response = GenerationResponse.model_validate(stored)
    assert response.answer == Scores(summary=ScoreSummary.model_validate(summary))
    dumped = response.model_dump(mode="json")
    assert {key: dumped[key] for key in stored if key != "timing"} == {
        key: value for key, value in stored.items() if key != "timing"
    }
