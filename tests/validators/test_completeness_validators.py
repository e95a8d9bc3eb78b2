"""truncated_stream, empty_response and missing_finish_reason on realistic compiled answers."""

from __future__ import annotations

import pytest
from returns.result import Success

from assay.core import (
    DiagnosticCode,
    EmbeddingSummary,
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    TokenSource,
    ToolCall,
    Usage,
    Vectors,
)
from assay.validators import (
    empty_response,
    missing_finish_reason,
    truncated_before_finish,
    truncated_stream,
)


def _streamed_chat(**fields: object) -> GenerationResponse:
    """A vLLM-style streamed chat answer: 8 tokens, finish_reason, usage chunk, [DONE]."""
    base: dict[str, object] = {
        "request_id": "req-17",
        "endpoint": Endpoint.chat,
        "streamed": True,
        "model": "tiny-llama",
        "text": "The capital of France is Paris.",
        "finish_reason": "stop",
        "usage": Usage(prompt_tokens=21, completion_tokens=8, total_tokens=29),
        "content_chunks": 8,
        "streamed_tokens": 8,
        "streamed_token_source": TokenSource.stream,
        "terminal_seen": True,
        "timing": ResponseTiming(
            send_ns=1_000,
            first_byte_ns=40_000,
            first_token_ns=41_000,
            last_token_ns=90_000,
            end_ns=95_000,
            chunk_times_ns=tuple(41_000 + 7_000 * i for i in range(8)),
            chunk_tokens=(1,) * 8,
        ),
    }
    return GenerationResponse.model_validate({**base, **fields})


def test_complete_stream_passes_every_completeness_check() -> None:
    response = _streamed_chat()
    for validate in (truncated_stream, empty_response, missing_finish_reason):
        assert validate(response) == Success(response)


def test_stream_without_done_and_without_finish_reason_is_truncated_stream() -> None:
    response = _streamed_chat(
        terminal_seen=False, finish_reason=None, usage=None, text="The capital of"
    )
    diagnostic = truncated_stream(response).failure()
    assert diagnostic.code is DiagnosticCode.truncated_stream
    assert "after 8 content chunks (8 tokens streamed, 14 characters of text)" in (
        diagnostic.message
    )
    assert diagnostic.evidence.partial is response


def test_stream_cut_after_the_finish_chunk_is_truncated_stream_naming_what_arrived() -> None:
    # llmock's `truncate` fault can fall after the finish chunk: the usage chunk and [DONE] never
    # come, and the response ends cleanly. The server did not finish it.
    response = _streamed_chat(terminal_seen=False, usage=None)
    diagnostic = truncated_stream(response).failure()
    assert diagnostic.code is DiagnosticCode.truncated_stream
    assert diagnostic.message.startswith(
        "stream ended without [DONE] or a terminal event after finish_reason='stop' "
        "(no usage chunk), after 8 content chunks"
    )


def test_lenient_check_lets_a_stream_without_done_through_once_finish_reason_arrived() -> None:
    # Servers that never send [DONE] (TGI before 2.2, llama.cpp before September 2024).
    finished = _streamed_chat(terminal_seen=False)
    assert truncated_before_finish(finished) == Success(finished)
    cut = _streamed_chat(terminal_seen=False, finish_reason=None, usage=None)
    assert truncated_before_finish(cut).failure().code is DiagnosticCode.truncated_stream


def test_stream_with_done_but_no_finish_reason_is_not_truncated() -> None:
    response = _streamed_chat(finish_reason=None)
    assert truncated_stream(response) == Success(response)


def test_non_streamed_answer_is_never_truncated_stream() -> None:
    response = _streamed_chat(streamed=False, terminal_seen=False, finish_reason=None)
    assert truncated_stream(response) == Success(response)


def test_empty_payload_with_zero_usage_is_empty_response_with_specific_message() -> None:
    response = _streamed_chat(
        text="",
        usage=Usage(prompt_tokens=21, completion_tokens=0, total_tokens=21),
        content_chunks=0,
        streamed_tokens=0,
    )
    diagnostic = empty_response(response).failure()
    assert diagnostic.code is DiagnosticCode.empty_response
    assert diagnostic.message.startswith(
        "empty response payload: no text, no tool calls, no reasoning; "
        "server reported 0 completion tokens"
    )
    assert "finish_reason='stop'" in diagnostic.message
    assert diagnostic.evidence.partial is not None
    assert diagnostic.evidence.partial.usage == response.usage


def test_empty_stream_without_usage_is_empty_response() -> None:
    response = _streamed_chat(
        text="", usage=None, content_chunks=0, streamed_tokens=0, finish_reason=None
    )
    assert empty_response(response).failure().code is DiagnosticCode.empty_response


def test_output_tokens_with_empty_text_are_empty_response_saying_what_was_reported() -> None:
    # Issue 8: vLLM reports completion_tokens=1 (the EOS) for a forced-empty answer. A count
    # with no text, tool call or reasoning to show for it is not output. (A split multi-byte
    # character streams as "" deltas, but the character itself follows, so a served answer
    # still has text.)
    response = _streamed_chat(
        text="", usage=Usage(prompt_tokens=21, completion_tokens=1), streamed_tokens=0
    )
    diagnostic = empty_response(response).failure()
    assert diagnostic.code is DiagnosticCode.empty_response
    assert "server reported 1 completion token " in diagnostic.message
    many = _streamed_chat(text="", usage=Usage(completion_tokens=128), streamed_tokens=0)
    assert "server reported 128 completion tokens" in empty_response(many).failure().message


def test_empty_stream_without_usage_says_how_many_tokens_streamed() -> None:
    response = _streamed_chat(text="", usage=None, streamed_tokens=2)
    message = empty_response(response).failure().message
    assert "no usage reported, 2 tokens streamed" in message


def test_tool_call_only_answer_is_usable() -> None:
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')
    response = _streamed_chat(
        text="", tool_calls=(call,), finish_reason="tool_calls", usage=None, streamed_tokens=0
    )
    assert empty_response(response) == Success(response)


def test_reasoning_only_answer_is_usable() -> None:
    response = _streamed_chat(
        text="", reasoning="Let me think.", usage=Usage(completion_tokens=0), streamed_tokens=0
    )
    assert empty_response(response) == Success(response)


def test_embeddings_are_not_judged_by_empty_response() -> None:
    response = GenerationResponse(
        request_id="e1",
        endpoint=Endpoint.embeddings,
        streamed=False,
        answer=Vectors(summary=EmbeddingSummary(count=1, dimension=384, all_finite=True)),
        usage=Usage(prompt_tokens=7, total_tokens=7),
        timing=ResponseTiming(send_ns=0, end_ns=10),
    )
    assert empty_response(response) == Success(response)
    assert missing_finish_reason(response) == Success(response)


@pytest.mark.parametrize("streamed", [True, False])
def test_answer_without_finish_reason_is_missing_finish_reason(streamed: bool) -> None:
    response = _streamed_chat(finish_reason=None, streamed=streamed)
    diagnostic = missing_finish_reason(response).failure()
    assert diagnostic.code is DiagnosticCode.missing_finish_reason
    assert "8 output tokens" in diagnostic.message
    assert ("terminal marker seen: True" in diagnostic.message) is streamed
