"""Issue 8 on byte-exact streams of real engines (the shapes in the wire notes): finish-only
chunks are not tokens, and a stream cut before any finish_reason is an error by default."""

from __future__ import annotations

import json

from returns.result import Failure, Success

from assay.core import DiagnosticCode, Endpoint, GenerationRequest, GenerationResponse, outcome
from assay.core.diagnostics import AnyCode
from assay.handlers import handler_for
from assay.validators import default_chain
from tests.handlers.handler_results import ok, stream


def _request(
    endpoint: Endpoint, max_tokens: int = 16, ignore_eos: bool = False
) -> GenerationRequest:
    return GenerationRequest(
        request_id="r1",
        endpoint=endpoint,
        model="tiny-llama",
        prompt="Say something.",
        max_output_tokens=max_tokens,
        ignore_eos=ignore_eos,
    )


def _llama_completion(text: str, finish: str | None = None, index: int = 0) -> bytes:
    """A llama-cpp-python completions chunk: spaces after `:` and `,`, no usage."""
    chunk = {
        "id": "cmpl-6d9d",
        "object": "text_completion",
        "created": 1796201045,
        "model": "tiny-llama",
        "choices": [{"text": text, "index": index, "logprobs": None, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


def _llama_chat(delta: dict[str, str], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-6d9d",
        "model": "tiny-llama",
        "created": 1796201045,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


DONE = b"data: [DONE]\r\n\r\n"


def _judged(endpoint: Endpoint, raw: bytes, ignore_eos: bool = False) -> GenerationResponse:
    """The compiled stream, asserted to pass the default chain."""
    req = _request(endpoint, ignore_eos=ignore_eos)
    result = stream(handler_for(endpoint), req, raw).bind(default_chain(endpoint))
    match outcome(result):
        case Success(response):
            return response
        case Failure(problem):
            raise AssertionError(problem)


def _rejected(endpoint: Endpoint, raw: bytes) -> AnyCode:
    req = _request(endpoint)
    result = stream(handler_for(endpoint), req, raw).bind(default_chain(endpoint))
    match outcome(result):
        case Success(response):
            raise AssertionError(f"expected an error, got {response!r}")
        case Failure(problem):
            return problem.code


def test_llama_cpp_ignore_eos_final_empty_chunk_is_not_an_extra_token() -> None:
    # llama.cpp --ignore-eos, max_tokens 16: 16 text chunks, then "" with finish "length".
    # Counting that last chunk gave a false max_tokens_not_honoured ("returned 17, 1 more").
    raw = b"".join(_llama_completion(f" w{i}") for i in range(16))
    raw += _llama_completion("", "length") + DONE
    response = _judged(Endpoint.completions, raw, ignore_eos=True)
    assert response.streamed_tokens == 16
    assert len(response.timing.chunk_times_ns) == 16
    assert response.finish_reason == "length"


def test_guidellm_mock_completions_stream_counts_as_many_tokens_as_its_usage() -> None:
    # GuideLLM's mock: index counting up, a "" closing chunk with "stop", then usage 16.
    raw = b"".join(_llama_completion(f" w{i}", index=i) for i in range(16))
    raw += _llama_completion("", "stop", index=16)
    usage = {"prompt_tokens": 8, "completion_tokens": 16, "total_tokens": 24}
    raw += f"data: {json.dumps({'choices': [], 'usage': usage})}\r\n\r\n".encode() + DONE
    response = _judged(Endpoint.completions, raw)
    assert response.streamed_tokens == 16
    # 16 token arrivals give 15 inter-token gaps, not 16.
    assert len(response.timing.chunk_times_ns) - 1 == 15


def test_llama_cpp_forced_empty_completions_stream_is_empty_response() -> None:
    raw = _llama_completion("", "stop") + DONE
    assert _rejected(Endpoint.completions, raw) is DiagnosticCode.empty_response


def test_vllm_empty_chat_stream_has_no_first_token() -> None:
    vllm = (
        b'data: {"id":"chatcmpl-a8e0","object":"chat.completion.chunk","created":1796201699,'
        b'"model":"tiny-llama","choices":[{"index":0,"delta":{"role":"assistant","content":""},'
        b'"logprobs":null,"finish_reason":null}],"prompt_token_ids":null,"prompt_text":null}\n\n'
        b'data: {"id":"chatcmpl-a8e0","object":"chat.completion.chunk","created":1796201699,'
        b'"model":"tiny-llama","choices":[{"index":0,"delta":{"content":""},"logprobs":null,'
        b'"finish_reason":"stop","stop_reason":null,"token_ids":null}]}\n\n'
        b'data: {"id":"chatcmpl-a8e0","object":"chat.completion.chunk","created":1796201699,'
        b'"model":"tiny-llama","choices":[],"usage":{"prompt_tokens":21,"total_tokens":22,'
        b'"completion_tokens":1}}\n\n'
        b"data: [DONE]\n\n"
    )
    req = GenerationRequest(
        request_id="r1",
        endpoint=Endpoint.chat,
        model="tiny-llama",
        messages=({"role": "user", "content": "Say something."},),
        max_output_tokens=16,
    )
    response = ok(stream(handler_for(Endpoint.chat), req, vllm))
    assert response.streamed_tokens == 0
    assert response.timing.first_token_ns is None
    assert response.finish_reason == "stop"
    assert default_chain(Endpoint.chat)(response).failure().code is DiagnosticCode.empty_response


def test_split_character_empty_delta_mid_stream_is_still_a_token() -> None:
    # Byte-level tokenizers stream "" for the first bytes of a multi-byte character.
    raw = (
        _llama_completion("caf")
        + _llama_completion("")
        + _llama_completion("\u00e9", "stop")
        + DONE
    )
    response = _judged(Endpoint.completions, raw)
    assert response.text == "caf\u00e9"
    assert response.streamed_tokens == 3


def test_llama_cpp_interrupted_chat_stream_without_finish_reason_is_an_error() -> None:
    # llama-cpp-python (interrupt_requests=True) cuts a concurrent stream after one chunk and
    # still sends [DONE]: no finish_reason anywhere.
    raw = _llama_chat({"role": "assistant"}) + _llama_chat({"content": "uld"}) + DONE
    assert _rejected(Endpoint.chat, raw) is DiagnosticCode.missing_finish_reason


def test_llama_cpp_interrupted_completions_stream_without_finish_reason_is_an_error() -> None:
    raw = _llama_completion("uld") + DONE
    assert _rejected(Endpoint.completions, raw) is DiagnosticCode.missing_finish_reason


def test_responses_events_after_completed_are_ignored_but_a_done_is_not_counted() -> None:
    completed = (
        b"event: response.completed\ndata: "
        b'{"type":"response.completed","response":{"status":"completed",'
        b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
    )
    delta = (
        b"event: response.output_text.delta\n"
        b'data: {"type":"response.output_text.delta","delta":"Hi"}\n\n'
    )
    req = _request(Endpoint.responses)
    response = ok(stream(handler_for(Endpoint.responses), req, delta + completed + delta + DONE))
    assert response.text == "Hi"
    assert response.streamed_tokens == 1
    assert response.events_after_terminal == 1
