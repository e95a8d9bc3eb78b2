"""Transcriptions: vLLM's and OpenAI's streams and bodies, the form sent, and the verdicts the
default chain gives an empty or cut transcript."""

from __future__ import annotations

import orjson
from returns.result import Result

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    UnusableResponse,
)
from assay.handlers import Transfer, handler_for
from assay.handlers.transcriptions import form_body
from assay.validators import default_chain
from tests.handlers.handler_results import fault, ok, stream

REQUEST = GenerationRequest(
    request_id="r1",
    endpoint=Endpoint.transcriptions,
    model="whisper",
    audio_file=b"RIFF....WAVEfmt ",
    max_output_tokens=32,
)
HANDLER = handler_for(Endpoint.transcriptions)


def _vllm_chunk(content: str | None, finish: str | None = None, **extra: object) -> bytes:
    choices = (
        []
        if content is None
        else [{"delta": {"content": content}, "finish_reason": finish, "stop_reason": None}]
    )
    chunk = {
        "id": "trsc-1",
        "object": "transcription.chunk",
        "created": 1,
        "model": "whisper",
        "choices": choices,
        **extra,
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _openai_event(kind: str, **fields: object) -> bytes:
    return (
        f"event: {kind}\n".encode() + b"data: " + orjson.dumps({"type": kind, **fields}) + b"\n\n"
    )


def judged(
    result: Result[GenerationResponse, UnusableResponse],
) -> Result[GenerationResponse, UnusableResponse]:
    return result.bind(default_chain(Endpoint.transcriptions))


def test_a_vllm_stream_is_read_as_text_with_token_timings() -> None:
    raw = (
        _vllm_chunk(" The")
        + _vllm_chunk(" quick")
        + _vllm_chunk(" fox", "stop")
        + _vllm_chunk(None, usage={"prompt_tokens": 50, "completion_tokens": 3, "total_tokens": 53})
        + b"data: [DONE]\n\n"
    )
    response = ok(judged(stream(HANDLER, REQUEST, raw)))
    assert response.text == " The quick fox"
    assert response.finish_reason == "stop"
    assert response.terminal_seen
    assert response.output_tokens == 3
    assert response.timing.chunk_times_ns == (1_000, 2_000, 3_000)


def test_an_openai_stream_ends_with_transcript_text_done() -> None:
    usage = {"type": "tokens", "input_tokens": 14, "output_tokens": 2, "total_tokens": 16}
    raw = (
        _openai_event("transcript.text.delta", delta="Hello")
        + _openai_event("transcript.text.delta", delta=" there")
        + _openai_event("transcript.text.done", text="Hello there", usage=usage)
    )
    response = ok(judged(stream(HANDLER, REQUEST, raw)))
    assert response.text == "Hello there"
    assert response.terminal_seen
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (14, 2)
    assert response.timing.first_token_ns == 1_000


def test_a_stream_cut_before_its_terminal_event_is_truncated() -> None:
    raw = _openai_event("transcript.text.delta", delta="Hello")
    problem = fault(judged(stream(HANDLER, REQUEST, raw)))
    assert problem.code is DiagnosticCode.truncated_stream


def test_an_empty_transcript_is_empty_response() -> None:
    body = orjson.dumps({"text": "", "usage": {"type": "duration", "seconds": 3}})
    result = HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=10))
    assert ok(result).text == ""
    assert fault(judged(result)).code is DiagnosticCode.empty_response


def test_a_body_without_text_is_unexpected_shape() -> None:
    body = orjson.dumps({"transcript": "hi"})
    result = HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=10))
    assert fault(result).code is DiagnosticCode.unexpected_shape


def test_a_json_body_is_the_transcript() -> None:
    body = orjson.dumps({"text": "It rained.", "usage": {"type": "duration", "seconds": 2}})
    response = ok(judged(HANDLER.compile_body(REQUEST, body, Transfer(send_ns=0, end_ns=10))))
    assert response.text == "It rained."
    assert not response.streamed


def test_the_form_holds_the_fields_as_text_and_the_wav_as_a_file_part() -> None:
    fields = HANDLER.build_body(REQUEST)
    assert fields == {
        "model": "whisper",
        "response_format": "json",
        "max_completion_tokens": 32,
        "stream": True,
        "stream_include_usage": True,
    }
    body, content_type = form_body(REQUEST, {**fields, "temperature": 0.5})
    boundary = content_type.removeprefix("multipart/form-data; boundary=").encode()
    parts = body.split(b"--" + boundary)
    assert parts[0] == b""
    assert parts[-1] == b"--\r\n"
    named = {
        part.split(b'name="')[1].split(b'"')[0]: part.split(b"\r\n\r\n", 1)[1].removesuffix(b"\r\n")
        for part in parts[1:-1]
    }
    assert named == {
        b"model": b"whisper",
        b"response_format": b"json",
        b"max_completion_tokens": b"32",
        b"stream": b"true",
        b"stream_include_usage": b"true",
        b"temperature": b"0.5",
        b"file": REQUEST.audio_file,
    }
