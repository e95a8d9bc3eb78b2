"""Text completions: vLLM and GuideLLM-mock streams, bodies, request bodies."""

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
    TokenSource,
    UnusableResponse,
)
from assay.handlers import CompletionsHandler, EndpointHandler, Transfer
from tests.handlers.handler_results import fault as _fault
from tests.handlers.handler_results import ok as _ok
from tests.handlers.handler_results import stream

REQUEST = GenerationRequest(
    request_id="c1",
    endpoint=Endpoint.completions,
    model="tiny-llama",
    prompt="Once upon a time",
    max_output_tokens=4,
    ignore_eos=True,
)
HANDLER: EndpointHandler = CompletionsHandler()


def _vllm(text: str | None, finish: str | None = None, **extra: JsonValue) -> bytes:
    chunk: dict[str, JsonValue] = {
        "id": "cmpl-5f2",
        "object": "text_completion",
        "created": 1796201699,
        "model": "tiny-llama",
        "choices": []
        if text is None
        else [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
                "token_ids": None,
                "prompt_token_ids": None,
            }
        ],
        **extra,
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _stream(raw: bytes) -> Result[GenerationResponse, UnusableResponse]:
    return stream(HANDLER, REQUEST, raw)


def test_vllm_completions_stream_compiles_text_usage_and_timing() -> None:
    raw = (
        _vllm(",")
        + _vllm(" there")
        + _vllm("")  # half of a multi-byte character
        + _vllm(" was", "length")
        + _vllm(None, usage={"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9})
        + b"data: [DONE]\n\n"
    )
    response = _ok(_stream(raw))

    assert response.text == ", there was"
    assert response.finish_reason == "length"
    assert response.streamed_tokens == 4
    assert response.streamed_token_source is TokenSource.stream
    assert response.output_tokens == 4
    assert response.timing.chunk_times_ns == (1000, 2000, 3000, 4000)
    assert response.timing.first_content_ns == 1000
    assert response.terminal_seen


def test_guidellm_mock_stream_with_counting_choice_index_is_accepted() -> None:
    def chunk(index: int, text: str) -> bytes:
        payload = {"id": "cmpl-x", "choices": [{"index": index, "text": text}]}
        return f"data: {json.dumps(payload)}\n\n".encode()

    raw = chunk(0, "a") + chunk(1, " b") + chunk(2, " c") + b"data: [DONE]\n\n"
    # GuideLLM's mock also says "stop" even when max_tokens cut the output.
    raw = raw.replace(b'" c"}', b'" c", "finish_reason": "stop"}')
    response = _ok(_stream(raw))
    assert response.text == "a b c"
    assert response.streamed_tokens == 3
    assert response.finish_reason == "stop"


def test_completions_chunk_with_non_string_text_is_unexpected_shape() -> None:
    problem = _fault(_stream(b'data: {"choices": [{"index": 0, "text": 42}]}\n\n'))
    assert problem.code is DiagnosticCode.unexpected_shape


def test_completions_stream_inband_error_is_inband_error() -> None:
    raw = _vllm("a") + b'data: {"error": {"message": "out of KV cache blocks"}}\n\n'
    problem = _fault(_stream(raw))
    assert problem.code is DiagnosticCode.inband_error
    assert "out of KV cache blocks" in problem.message
    assert problem.evidence.partial is not None
    assert problem.evidence.partial.text == "a"


def test_completions_stream_with_no_events_is_no_terminal_response() -> None:
    assert _fault(_stream(b"")).code is DiagnosticCode.no_terminal_response


def test_completions_body_compiles() -> None:
    body = orjson.dumps(
        {
            "id": "cmpl-1",
            "object": "text_completion",
            "model": "tiny-llama",
            "choices": [
                {"index": 0, "text": ", there was", "finish_reason": "length", "stop_reason": None}
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
        }
    )
    response = _ok(HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=70)))
    assert (response.text, response.finish_reason, response.output_tokens) == (
        ", there was",
        "length",
        4,
    )
    assert response.echo.ignore_eos
    assert response.timing.last_token_ns == 70


def test_completions_body_choice_without_text_is_unexpected_shape() -> None:
    body = b'{"choices": [{"message": {"content": "chat shape"}}]}'
    problem = _fault(HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=1)))
    assert problem.code is DiagnosticCode.unexpected_shape


def test_completions_request_body_uses_max_tokens_and_asks_for_usage() -> None:
    assert HANDLER.build_body(REQUEST) == {
        "model": "tiny-llama",
        "prompt": "Once upon a time",
        "max_tokens": 4,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
