"""The Responses API: vLLM's typed event stream and response objects."""

from __future__ import annotations

import orjson
from pydantic import JsonValue
from returns.result import Result

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    TextAnswer,
    ToolCall,
    UnusableResponse,
)
from assay.handlers import EndpointHandler, ResponsesHandler, Transfer
from tests.handlers.handler_results import fault as _fault
from tests.handlers.handler_results import ok as _ok
from tests.handlers.handler_results import stream

REQUEST = GenerationRequest(
    request_id="s1",
    endpoint=Endpoint.responses,
    model="tiny-llama",
    prompt="Write a haiku.",
    max_output_tokens=3,
)
HANDLER: EndpointHandler = ResponsesHandler()


def _frame(kind: str, sequence: int, **fields: JsonValue) -> bytes:
    payload = orjson.dumps({"type": kind, "sequence_number": sequence, **fields})
    return f"event: {kind}\n".encode() + b"data: " + payload + b"\n\n"


def _response(status: str, **fields: JsonValue) -> JsonValue:
    return {"id": "resp_1", "object": "response", "model": "tiny-llama", "status": status, **fields}


USAGE: JsonValue = {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12}


def _text_stream(terminal: bytes) -> bytes:
    return (
        _frame("response.created", 0, response=_response("in_progress"))
        + _frame("response.in_progress", 1, response=_response("in_progress"))
        + _frame(
            "response.output_item.added",
            2,
            output_index=0,
            item={"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        )
        + _frame(
            "response.content_part.added",
            3,
            output_index=0,
            content_index=0,
            part={"type": "output_text", "text": ""},
        )
        + _frame("response.output_text.delta", 4, output_index=0, delta="Old")
        + _frame("response.output_text.delta", 5, output_index=0, delta=" pond")
        + _frame("response.output_text.delta", 6, output_index=0, delta=",")
        + _frame("response.output_text.done", 7, output_index=0, text="Old pond,")
        + _frame("response.output_item.done", 8, output_index=0, item={"type": "message"})
        + terminal
    )


def _stream(raw: bytes) -> Result[GenerationResponse, UnusableResponse]:
    return stream(HANDLER, REQUEST, raw)


def test_vllm_event_sequence_compiles_text_usage_and_timing() -> None:
    completed = _frame("response.completed", 9, response=_response("completed", usage=USAGE))
    response = _ok(_stream(_text_stream(completed)))

    assert response.text == "Old pond,"
    assert response.finish_reason == "stop"
    assert response.terminal_seen
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (9, 3)
    assert response.streamed_tokens == 3
    assert response.timing.chunk_times_ns == (5000, 6000, 7000)
    assert response.timing.first_content_ns == 5000
    assert response.model == "tiny-llama"


def test_incomplete_for_max_output_tokens_is_length() -> None:
    incomplete = _frame(
        "response.incomplete",
        9,
        response=_response(
            "incomplete", incomplete_details={"reason": "max_output_tokens"}, usage=USAGE
        ),
    )
    response = _ok(_stream(_text_stream(incomplete)))
    assert response.finish_reason == "length"
    assert response.terminal_seen


def test_stream_cut_before_the_terminal_event_has_terminal_not_seen() -> None:
    response = _ok(_stream(_text_stream(b"")))
    assert not response.terminal_seen
    assert response.finish_reason is None


def test_response_failed_is_inband_error_with_the_server_message() -> None:
    failed = _frame(
        "response.failed",
        9,
        response=_response("failed", error={"code": "server_error", "message": "engine crashed"}),
    )
    problem = _fault(_stream(_text_stream(failed)))
    assert problem.code is DiagnosticCode.inband_error
    assert "engine crashed" in problem.message
    assert problem.evidence.partial is not None
    assert problem.evidence.partial.text == "Old pond,"


def test_error_event_is_sse_error_event() -> None:
    error = _frame("error", 4, code="rate_limit_exceeded", message="Too many requests", param=None)
    problem = _fault(_stream(_text_stream(b"")[:0] + error))
    assert problem.code is DiagnosticCode.sse_error_event
    assert "Too many requests" in problem.message


def test_error_type_without_event_name_is_sse_error_event() -> None:
    raw = b'data: {"type": "error", "message": "bad things"}\n\n'
    assert _fault(_stream(raw)).code is DiagnosticCode.sse_error_event


def test_event_data_that_is_not_an_object_is_unexpected_shape() -> None:
    raw = b'event: response.output_text.delta\ndata: "Old"\n\n'
    assert _fault(_stream(raw)).code is DiagnosticCode.unexpected_shape


def test_reasoning_and_function_call_events_are_compiled() -> None:
    raw = (
        _frame("response.reasoning_text.delta", 0, output_index=0, delta="Think")
        + _frame("response.reasoning_summary_text.delta", 1, output_index=0, delta=" less")
        + _frame(
            "response.output_item.added",
            2,
            output_index=1,
            item={"type": "function_call", "call_id": "call_7", "name": "search", "arguments": ""},
        )
        + _frame("response.function_call_arguments.delta", 3, output_index=1, delta='{"q":')
        + _frame("response.function_call_arguments.delta", 4, output_index=1, delta='"haiku"}')
        + _frame("response.completed", 5, response=_response("completed", usage=USAGE))
    )
    response = _ok(_stream(raw))

    assert isinstance(response.answer, TextAnswer)
    assert response.answer.reasoning == "Think less"
    assert response.answer.tool_calls == (
        ToolCall(index=1, id="call_7", name="search", arguments='{"q":"haiku"}'),
    )
    assert response.streamed_tokens == 4
    assert response.timing.first_token_ns == 1000
    assert response.timing.first_content_ns is None


def test_unknown_event_types_are_ignored() -> None:
    raw = _frame("response.audio.delta", 0, delta="AAAA") + _frame(
        "response.completed", 1, response=_response("completed")
    )
    response = _ok(_stream(raw))
    assert response.streamed_tokens == 0
    assert response.terminal_seen


def _body(**fields: JsonValue) -> bytes:
    return orjson.dumps(
        {
            "id": "resp_1",
            "object": "response",
            "model": "tiny-llama",
            "error": None,
            "incomplete_details": None,
            "output": [
                {
                    "type": "reasoning",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": "Seasons."}],
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Old pond,", "annotations": []}],
                },
            ],
            "usage": {
                "input_tokens": 9,
                "output_tokens": 3,
                "total_tokens": 12,
                "output_tokens_details": {"reasoning_tokens": 1},
                "input_tokens_details": {"cached_tokens": 0},
            },
            **fields,
        }
    )


def test_completed_body_compiles() -> None:
    response = _ok(
        HANDLER.compile_body(REQUEST, _body(status="completed"), Transfer(send_ns=0, end_ns=50))
    )
    assert isinstance(response.answer, TextAnswer)
    assert (response.text, response.answer.reasoning, response.finish_reason) == (
        "Old pond,",
        "Seasons.",
        "stop",
    )
    assert response.usage is not None
    assert (response.usage.reasoning_tokens, response.usage.cached_tokens) == (1, 0)


def test_incomplete_body_cut_by_max_output_tokens_is_length() -> None:
    body = _body(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    response = _ok(HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=50)))
    assert response.finish_reason == "length"


def test_failed_body_is_inband_error() -> None:
    body = _body(status="failed", error={"code": "server_error", "message": "boom"}, output=[])
    problem = _fault(HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=50)))
    assert problem.code is DiagnosticCode.inband_error
    assert "boom" in problem.message


def test_body_without_output_is_unexpected_shape() -> None:
    body = b'{"choices": [{"message": {"content": "chat shape"}}]}'
    problem = _fault(HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=50)))
    assert problem.code is DiagnosticCode.unexpected_shape


def test_responses_request_body_uses_max_output_tokens() -> None:
    body = HANDLER.build_body(REQUEST.model_copy(update={"ignore_eos": True}))
    assert body == {
        "model": "tiny-llama",
        "input": "Write a haiku.",
        "max_output_tokens": 3,
        "ignore_eos": True,
        "stream": True,
    }
