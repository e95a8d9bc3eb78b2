"""Chat completions: realistic vLLM and llama.cpp streams and bodies, token timing, faults."""

from __future__ import annotations

import json

import orjson
from pydantic import JsonValue
from returns.result import Result

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    TextAnswer,
    TokenSource,
    ToolCall,
    UnusableResponse,
)
from assay.handlers import ChatHandler, EndpointHandler, SseParser, Transfer, handler_for
from tests.handlers.handler_results import fault as _fault
from tests.handlers.handler_results import ok as _ok

REQUEST = GenerationRequest(
    request_id="r1",
    endpoint=Endpoint.chat,
    model="tiny-llama",
    messages=({"role": "user", "content": "Say something."},),
    max_output_tokens=3,
)
HANDLER: EndpointHandler = ChatHandler()
STEP_NS = 1_000


def _vllm(
    delta: dict[str, JsonValue] | None, finish: str | None = None, **extra: JsonValue
) -> bytes:
    """A compact vLLM chunk with its non-standard keys."""
    chunk: dict[str, JsonValue] = {
        "id": "chatcmpl-a8e0",
        "object": "chat.completion.chunk",
        "created": 1796201699,
        "model": "tiny-llama",
        "choices": []
        if delta is None
        else [
            {
                "index": 0,
                "delta": delta,
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
                "token_ids": None,
            }
        ],
        **extra,
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _llama(delta: dict[str, JsonValue], finish: str | None = None) -> bytes:
    """A llama.cpp chunk: spaces after `:` and `,`, no usage."""
    chunk = {
        "id": "chatcmpl-6d9d",
        "model": "tiny-llama",
        "created": 1796201045,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


VLLM_STREAM = (
    _vllm({"role": "assistant", "content": ""}, prompt_token_ids=None, prompt_text=None)
    + _vllm({"content": "ult"})
    + _vllm({"content": " I"})
    + _vllm({"content": "ise"}, "length")
    + _vllm(
        None,
        usage={"prompt_tokens": 21, "total_tokens": 24, "completion_tokens": 3},
        system_fingerprint="vllm-0.32.0-fcb985cc",
    )
    + b"data: [DONE]\n\n"
)


def _stream(raw: bytes, piece: int = 0) -> Result[GenerationResponse, UnusableResponse]:
    """Parse `raw` (in `piece`-byte chunks when given) and feed each event one step apart."""
    parser = SseParser()
    accumulator = HANDLER.open_accumulator(REQUEST, send_ns=0)
    now = 0
    pieces = [raw[i : i + piece] for i in range(0, len(raw), piece)] if piece else [raw]
    for chunk in pieces:
        for event in parser.feed(chunk):
            now += STEP_NS
            accumulator.feed(event, now)
    for event in parser.close():
        now += STEP_NS
        accumulator.feed(event, now)
    return accumulator.finish(Transfer(send_ns=0, end_ns=now + STEP_NS, first_byte_ns=500))


def test_vllm_stream_compiles_text_usage_and_per_chunk_timing() -> None:
    response = _ok(_stream(VLLM_STREAM))

    assert response.text == "ult Iise"
    assert response.finish_reason == "length"
    assert response.terminal_seen
    assert response.model == "tiny-llama"
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (21, 3)
    assert response.streamed_tokens == 3
    assert response.streamed_token_source is TokenSource.stream
    assert response.echo.max_output_tokens == 3
    # The role chunk (at 1000) is not a token; the three content chunks are.
    assert response.timing.chunk_times_ns == (2000, 3000, 4000)
    assert response.timing.chunk_tokens == (1, 1, 1)
    assert response.timing.first_token_ns == 2000
    assert response.timing.first_content_ns == 2000
    assert response.timing.last_token_ns == 4000
    assert response.timing.first_byte_ns == 500


def test_stream_split_into_small_pieces_compiles_the_same() -> None:
    assert _ok(_stream(VLLM_STREAM, piece=7)) == _ok(_stream(VLLM_STREAM))


def test_llama_cpp_stream_without_usage_counts_empty_deltas_as_tokens() -> None:
    raw = (
        _llama({"role": "assistant"})
        + b": ping\r\n\r\n"
        + _llama({"content": ""})
        + _llama({"content": "uld"})
        + _llama({}, "length")
        + b"data: [DONE]\r\n\r\n"
    )
    response = _ok(_stream(raw))

    assert response.text == "uld"
    assert response.usage is None
    assert response.streamed_tokens == 2
    assert response.output_tokens == 2
    assert response.output_token_source is TokenSource.stream
    assert response.finish_reason == "length"
    # The "" delta is the first token; the first content text came one chunk later.
    assert response.timing.first_token_ns == 2000
    assert response.timing.first_content_ns == 3000


def test_split_multibyte_characters_stream_as_empty_deltas_and_still_count() -> None:
    raw = (
        _vllm({"role": "assistant", "content": ""})
        + _vllm({"content": ""})
        + _vllm({"content": "\ufffd"})
        + _vllm({"content": "é"}, "stop")
        + b"data: [DONE]\n\n"
    )
    response = _ok(_stream(raw))
    assert response.streamed_tokens == 3
    assert response.timing.chunk_tokens == (1, 1, 1)


def test_reasoning_then_content_sets_first_token_before_first_content() -> None:
    raw = (
        _vllm({"role": "assistant", "content": ""})
        + _vllm({"reasoning_content": "Let me think"})
        + _vllm({"reasoning": " briefly."})
        + _vllm({"content": "Yes."}, "stop")
        + b"data: [DONE]\n\n"
    )
    response = _ok(_stream(raw))

    assert isinstance(response.answer, TextAnswer)
    assert response.answer.reasoning == "Let me think briefly."
    assert response.text == "Yes."
    assert response.timing.first_token_ns == 2000
    assert response.timing.first_content_ns == 4000
    assert response.streamed_tokens == 3


def test_tool_call_deltas_merge_by_index() -> None:
    def call(index: int, **fields: JsonValue) -> dict[str, JsonValue]:
        return {"tool_calls": [{"index": index, **fields}]}

    raw = (
        _vllm({"role": "assistant", "content": None})
        + _vllm(call(0, id="call_1", type="function", function={"name": "get_weather"}))
        + _vllm(call(0, function={"arguments": '{"city": '}))
        + _vllm(call(1, id="call_2", function={"name": "get_time", "arguments": "{}"}))
        + _vllm(call(0, function={"arguments": '"Paris"}'}), "tool_calls")
        + b"data: [DONE]\n\n"
    )
    response = _ok(_stream(raw))

    assert isinstance(response.answer, TextAnswer)
    assert response.answer.tool_calls == (
        ToolCall(index=0, id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(index=1, id="call_2", name="get_time", arguments="{}"),
    )
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert response.streamed_tokens == 4
    assert response.timing.first_content_ns is None


def test_continuous_usage_counts_running_completion_tokens_per_chunk() -> None:
    def running(completion: int) -> JsonValue:
        return {"prompt_tokens": 21, "completion_tokens": completion}

    raw = (
        _vllm({"role": "assistant", "content": ""}, usage=running(0))
        + _vllm({"content": "ult"}, usage=running(1))
        + _vllm({"content": " I ise"}, usage=running(4))  # a server that batched 3 tokens
        + _vllm({"content": "d"}, "length", usage=running(5))
        + _vllm(None, usage={"prompt_tokens": 21, "completion_tokens": 5, "total_tokens": 26})
        + b"data: [DONE]\n\n"
    )
    response = _ok(_stream(raw))

    assert response.streamed_tokens == 5
    assert response.streamed_token_source is TokenSource.continuous_usage
    assert response.timing.chunk_tokens == (1, 3, 1)
    assert response.usage is not None
    assert response.usage.total_tokens == 26


def test_stream_without_done_is_compiled_with_terminal_not_seen() -> None:
    raw = _vllm({"role": "assistant", "content": ""}) + _vllm({"content": "par"})
    response = _ok(_stream(raw))
    assert not response.terminal_seen
    assert response.finish_reason is None
    assert response.text == "par"


def test_stream_of_only_done_is_compiled_empty_for_the_validators() -> None:
    response = _ok(_stream(b"data: [DONE]\n\n"))
    assert response.terminal_seen
    assert response.text == ""
    assert response.output_tokens == 0


def test_stream_with_no_events_is_no_terminal_response() -> None:
    problem = _fault(_stream(b": ping\n\n"))
    assert problem.code is DiagnosticCode.no_terminal_response
    assert problem.evidence.partial is not None


def test_inband_error_mid_stream_is_inband_error_with_partial_text() -> None:
    raw = (
        _vllm({"role": "assistant", "content": ""})
        + _vllm({"content": "Hel"})
        + b'data: {"error":{"object":"error","message":"EngineCore encountered an issue",'
        + b'"type":"InternalServerError","code":500}}\n\n'
        + _vllm({"content": "lo"})
    )
    problem = _fault(_stream(raw))

    assert problem.code is DiagnosticCode.inband_error
    assert "EngineCore encountered an issue" in problem.message
    assert problem.evidence.partial is not None
    assert problem.evidence.partial.text == "Hel"
    assert problem.evidence.excerpt is not None
    assert "InternalServerError" in problem.evidence.excerpt


def test_error_event_frame_is_sse_error_event() -> None:
    raw = (
        _vllm({"role": "assistant", "content": ""})
        + b'event: error\ndata: {"error": {"message": "upstream timed out"}}\n\n'
    )
    problem = _fault(_stream(raw))
    assert problem.code is DiagnosticCode.sse_error_event
    assert "upstream timed out" in problem.message


def test_data_that_is_not_json_is_invalid_json() -> None:
    raw = _vllm({"role": "assistant", "content": ""}) + b'data: {"choices": [{"delta": \n\n'
    problem = _fault(_stream(raw))
    assert problem.code is DiagnosticCode.invalid_json
    assert problem.evidence.excerpt == '{"choices": [{"delta": '


def test_chunk_without_choices_is_unexpected_shape() -> None:
    problem = _fault(_stream(b'data: {"object": "chat.completion.chunk", "model": "m"}\n\n'))
    assert problem.code is DiagnosticCode.unexpected_shape
    assert "choices" in problem.message


def test_accumulator_is_failed_after_the_first_fault_and_keeps_it() -> None:
    accumulator = HANDLER.open_accumulator(REQUEST, send_ns=0)
    parser = SseParser()
    for event in parser.feed(b"data: [1, 2]\n\ndata: not json\n\n"):
        accumulator.feed(event, 10)
    assert accumulator.failed
    problem = _fault(accumulator.finish(Transfer(send_ns=0, end_ns=20)))
    assert problem.code is DiagnosticCode.unexpected_shape


VLLM_BODY = orjson.dumps(
    {
        "id": "chatcmpl-b1",
        "object": "chat.completion",
        "created": 1796201699,
        "model": "tiny-llama",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Paris.",
                    "reasoning_content": "The capital of France",
                    "tool_calls": [],
                },
                "logprobs": None,
                "finish_reason": "stop",
                "stop_reason": None,
                "token_ids": None,
            }
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 9,
            "total_tokens": 21,
            "completion_tokens_details": {"reasoning_tokens": 6},
            "prompt_tokens_details": {"cached_tokens": 8},
        },
        "prompt_logprobs": None,
        "kv_transfer_params": None,
    }
)
BODY_TRANSFER = Transfer(send_ns=100, end_ns=900, first_byte_ns=850)


def test_vllm_body_compiles_text_reasoning_usage_and_timing() -> None:
    response = _ok(HANDLER.compile_body(REQUEST, VLLM_BODY, BODY_TRANSFER))

    assert response.answer == TextAnswer(text="Paris.", reasoning="The capital of France")
    assert response.finish_reason == "stop"
    assert response.usage is not None
    assert (response.usage.reasoning_tokens, response.usage.cached_tokens) == (6, 8)
    assert not response.streamed
    assert response.terminal_seen
    timing = response.timing
    assert timing.first_token_ns == timing.first_content_ns == timing.last_token_ns == 900


def test_tool_call_only_body_compiles() -> None:
    body = orjson.dumps(
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_9",
                                "type": "function",
                                "function": {"name": "lookup", "arguments": {"q": "x"}},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        }
    )
    response = _ok(HANDLER.compile_body(REQUEST, body, BODY_TRANSFER))
    assert isinstance(response.answer, TextAnswer)
    assert response.answer.tool_calls == (
        ToolCall(index=0, id="call_9", name="lookup", arguments='{"q":"x"}'),
    )


def test_empty_choices_with_empty_usage_compiles_for_the_validators_to_reject() -> None:
    # PR #615 regression shape: the handler compiles it, the content validators reject it.
    response = _ok(HANDLER.compile_body(REQUEST, b'{"choices": [], "usage": {}}', BODY_TRANSFER))
    assert response.text == ""
    assert response.output_tokens == 0


def test_error_body_is_inband_error_with_the_server_message() -> None:
    body = (
        b'{"error":{"message":"The model `nope` does not exist.","type":"NotFoundError",'
        b'"param":"model","code":404}}'
    )
    problem = _fault(HANDLER.compile_body(REQUEST, body, BODY_TRANSFER))
    assert problem.code is DiagnosticCode.inband_error
    assert "The model `nope` does not exist." in problem.message
    assert problem.evidence.http_status == 200


def test_html_body_is_invalid_json() -> None:
    problem = _fault(HANDLER.compile_body(REQUEST, b"<html>502 Bad Gateway</html>", BODY_TRANSFER))
    assert problem.code is DiagnosticCode.invalid_json
    assert problem.evidence.excerpt == "<html>502 Bad Gateway</html>"


def test_body_without_choices_is_unexpected_shape() -> None:
    problem = _fault(
        HANDLER.compile_body(REQUEST, b'{"object": "list", "data": []}', BODY_TRANSFER)
    )
    assert problem.code is DiagnosticCode.unexpected_shape


def test_json_array_body_is_unexpected_shape() -> None:
    problem = _fault(HANDLER.compile_body(REQUEST, b"[]", BODY_TRANSFER))
    assert problem.code is DiagnosticCode.unexpected_shape


def test_empty_body_is_no_terminal_response() -> None:
    problem = _fault(HANDLER.compile_body(REQUEST, b"", BODY_TRANSFER))
    assert problem.code is DiagnosticCode.no_terminal_response


def test_streamed_body_asks_for_usage_and_extra_body_overrides_last() -> None:
    request = REQUEST.model_copy(
        update={
            "ignore_eos": True,
            "extra_body": {"max_tokens": 7, "stream_options": {"continuous_usage_stats": True}},
        }
    )
    body = HANDLER.build_body(request)
    assert body == {
        "model": "tiny-llama",
        "messages": [{"role": "user", "content": "Say something."}],
        "max_tokens": 7,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"continuous_usage_stats": True},
    }


def test_non_streamed_body_has_no_stream_options_nor_ignore_eos() -> None:
    body = HANDLER.build_body(REQUEST.model_copy(update={"stream": False}))
    assert body["stream"] is False
    assert "stream_options" not in body
    assert "ignore_eos" not in body


def test_handler_for_chat_is_the_chat_handler() -> None:
    assert isinstance(handler_for(Endpoint.chat), ChatHandler)
