"""Responses built without validation on the hot path equal, and serialize like, validated ones."""

from __future__ import annotations

from typing import get_args

from pydantic import BaseModel
from returns.pipeline import is_successful
from returns.result import Success

from assay.core import Endpoint, GenerationRequest, GenerationResponse
from assay.core.answer import AnyAnswer
from assay.core.response import ExchangeIds, ResponseFields, ResponseTiming, Usage
from assay.core.trusted import success, trusted
from assay.handlers import handler_for, wire
from assay.handlers.wire import USAGES_KEPT, parse_usage
from assay.spec.endpoint import Answer
from tests.handlers.handler_results import ok, stream

_CHUNK = (
    b'data: {"id":"chatcmpl-a8e0","object":"chat.completion.chunk","created":1796201699,'
    b'"model":"tiny-llama","choices":[{"index":0,"delta":%s,"logprobs":null,'
    b'"finish_reason":%s}]}\n\n'
)
_CHAT_STREAM = (
    _CHUNK % (b'{"role":"assistant","content":""}', b"null")
    + _CHUNK % (b'{"content":"ult"}', b"null")
    + _CHUNK % (b'{"reasoning_content":"hm"}', b"null")
    + _CHUNK
    % (
        b'{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{}"}}]}',
        b"null",
    )
    + _CHUNK % (b'{"content":"ise"}', b'"length"')
    + b'data: {"choices":[],"usage":{"prompt_tokens":21,"total_tokens":24,'
    b'"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":1}}}\n\n'
    + b"data: [DONE]\n\n"
)


def _same_as_validated(model: BaseModel) -> None:
    rebuilt = type(model).model_validate(model.model_dump())
    assert rebuilt == model
    assert rebuilt.model_dump_json() == model.model_dump_json()
    assert list(rebuilt.__dict__) == list(model.__dict__)


def test_streamed_chat_response_equals_its_validated_copy() -> None:
    request = GenerationRequest(
        request_id="r1",
        endpoint=Endpoint.chat,
        model="tiny-llama",
        messages=({"role": "user", "content": "Say something."},),
        max_output_tokens=3,
        extra_body={"response_format": {"type": "json_object"}},
    )
    response = ok(stream(handler_for(Endpoint.chat), request, _CHAT_STREAM))
    assert response.text == "ultise"
    assert response.usage is not None
    assert response.usage.reasoning_tokens == 1
    assert response.echo.json_mode
    assert response.ids is not None
    assert response.ids.answer == "chatcmpl-a8e0"
    _same_as_validated(response)
    _same_as_validated(response.ids)
    _same_as_validated(response.timing)
    _same_as_validated(response.usage)


def test_streamed_completion_response_equals_its_validated_copy() -> None:
    request = GenerationRequest(
        request_id="r2", endpoint=Endpoint.completions, model="m", prompt="Once"
    )
    raw = (
        b'data: {"choices":[{"index":0,"text":" upon","finish_reason":null}],"model":"m"}\n\n'
        b'data: {"choices":[{"index":0,"text":" a","finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    response = ok(stream(handler_for(Endpoint.completions), request, raw))
    assert response.usage is None
    _same_as_validated(response)


def test_parsed_usage_equals_validated_usage() -> None:
    usage = parse_usage({"input_tokens": 5, "output_tokens": 2, "total_tokens": 7})
    assert usage == Usage(prompt_tokens=5, completion_tokens=2, total_tokens=7)
    assert usage is not None
    _same_as_validated(usage)


def test_answers_reporting_the_same_usage_share_one_frozen_usage() -> None:
    first = parse_usage({"prompt_tokens": 21, "completion_tokens": 3, "total_tokens": 24})
    again = parse_usage({"total_tokens": 24, "prompt_tokens": 21, "completion_tokens": 3})
    assert first is again
    assert first == Usage(prompt_tokens=21, completion_tokens=3, total_tokens=24)
    # Another figure anywhere, a detail included, is another usage.
    detailed = parse_usage(
        {
            "prompt_tokens": 21,
            "completion_tokens": 3,
            "total_tokens": 24,
            "completion_tokens_details": {"reasoning_tokens": 1},
        }
    )
    assert detailed == Usage(
        prompt_tokens=21, completion_tokens=3, reasoning_tokens=1, total_tokens=24
    )
    unreported = parse_usage({"prompt_tokens": 21, "completion_tokens": 3, "total_tokens": "24"})
    assert unreported == Usage(prompt_tokens=21, completion_tokens=3)
    assert len({id(first), id(detailed), id(unreported)}) == 3


def test_shared_usages_stay_bounded_whatever_a_run_reports() -> None:
    kept = [
        parse_usage({"prompt_tokens": n, "completion_tokens": 1}) for n in range(3 * USAGES_KEPT)
    ]
    assert len(wire._USAGES) <= USAGES_KEPT
    assert [usage.prompt_tokens for usage in kept if usage is not None] == list(
        range(3 * USAGES_KEPT)
    )


def test_trusted_model_stays_frozen() -> None:
    timing = trusted(
        ResponseTiming,
        {
            "send_ns": 0,
            "first_byte_ns": None,
            "first_token_ns": None,
            "first_content_ns": None,
            "last_token_ns": None,
            "end_ns": 5,
            "chunk_times_ns": (),
            "chunk_tokens": (),
            "merged_chunk_times": 0,
        },
    )
    assert timing == ResponseTiming(send_ns=0, end_ns=5)
    try:
        timing.end_ns = 6  # type: ignore[misc]  # the point: frozen models refuse assignment
    except ValueError:
        pass
    else:
        raise AssertionError("a trusted model accepted an assignment")


def test_every_trusted_field_list_covers_the_model() -> None:
    # A field added to a core model must be added where the hot path builds it.
    assert list(GenerationResponse.model_fields)[-1] == "sent"
    assert len(GenerationResponse.model_fields) == 17
    assert len(ExchangeIds.model_fields) == 5
    assert len(ResponseTiming.model_fields) == 9
    assert len(Usage.model_fields) == 5


def test_the_typed_fields_of_a_trusted_response_are_the_models() -> None:
    # `ResponseFields` is how the hot path builds a response without validation: a field
    # missing from it is a type error at every builder.
    assert list(ResponseFields.__annotations__) == list(GenerationResponse.model_fields)


def test_the_answer_field_holds_every_kind_of_answer() -> None:
    # One type per `Answer` kind, tagged by it: a new kind is a member of both.
    kinds = {kind.model_fields["kind"].default for kind in get_args(AnyAnswer)}
    assert kinds == set(Answer)


def test_success_is_the_constructed_success() -> None:
    value = Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)
    built = success(value)
    assert type(built) is Success
    assert built == Success(value)
    assert is_successful(built)
    assert built.unwrap() is value
    assert built.map(lambda usage: usage.total_tokens) == Success(5)
    match built:
        case Success(inner):
            assert inner is value
        case _:
            raise AssertionError("not matched as a Success")
