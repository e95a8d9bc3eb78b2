"""Regression cases of GuideLLM issue #613 / PR #615: unusable answers must never count as served.

Each case runs the real pipeline below the transport: the endpoint handler compiles the wire
payload, the default validator chain judges it, and the generic worker records the outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import pytest
from returns.result import Result

from assay.core import (
    AnyCode,
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    TextAnswer,
    UnusableResponse,
)
from assay.handlers import Transfer, handler_for
from assay.records import Completed, Errored, RequestRecord
from assay.testing import FakeClock
from assay.validators import default_chain
from assay.worker import execute

Resolver = Callable[[GenerationRequest], Awaitable[Result[GenerationResponse, UnusableResponse]]]

TRANSFER = Transfer(send_ns=1_000, end_ns=9_000_000, first_byte_ns=3_000_000)


def _request(endpoint: Endpoint, stream: bool) -> GenerationRequest:
    if endpoint is Endpoint.chat:
        return GenerationRequest(
            request_id="pr615",
            endpoint=endpoint,
            model="tiny-llama",
            messages=({"role": "user", "content": "Say something."},),
            max_output_tokens=16,
            stream=stream,
        )
    return GenerationRequest(
        request_id="pr615",
        endpoint=endpoint,
        model="tiny-llama",
        prompt="Say something.",
        max_output_tokens=None if endpoint is Endpoint.embeddings else 16,
        stream=stream,
    )


async def _run_stream(
    endpoint: Endpoint, frames: Sequence[str]
) -> RequestRecord[GenerationResponse]:
    """Feed SSE `data:` frames to the endpoint's accumulator, then validate and record."""
    request = _request(endpoint, stream=True)

    async def resolve(req: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
        accumulator = handler_for(req.endpoint).open_accumulator(req, TRANSFER.send_ns)
        for index, data in enumerate(frames):
            accumulator.feed(data.encode(), 4_000_000 + 1_000 * index)
        return accumulator.finish(TRANSFER)

    return await _record(request, resolve)


async def _run_body(endpoint: Endpoint, body: bytes) -> RequestRecord[GenerationResponse]:
    """Compile a non-streamed JSON body with the endpoint's handler, then validate and record."""
    request = _request(endpoint, stream=False)

    async def resolve(req: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
        return handler_for(req.endpoint).compile_body(req, body, TRANSFER)

    return await _record(request, resolve)


async def _record(
    request: GenerationRequest, resolve: Resolver
) -> RequestRecord[GenerationResponse]:
    sunk: list[RequestRecord[GenerationResponse]] = []
    record = await execute(
        request,
        request_id=request.request_id,
        resolve=resolve,
        validate=default_chain(request.endpoint),
        clock=FakeClock(start_ns=1_000),
        targeted_start_ns=0,
        sink=sunk.append,
    )
    assert sunk == [record]
    return record


def _errored_code(record: RequestRecord[GenerationResponse]) -> AnyCode:
    assert isinstance(record.outcome, Errored), record.outcome
    return record.outcome.diagnostic.code


CHUNK = '{"id":"chatcmpl-a8e0","object":"chat.completion.chunk","created":1796201699,'
MODEL = '"model":"tiny-llama",'


def _chat_chunk(delta: str, finish_reason: str = "null") -> str:
    return (
        f'{CHUNK}{MODEL}"choices":[{{"index":0,"delta":{delta},"logprobs":null,'
        f'"finish_reason":{finish_reason}}}]}}'
    )


def _usage_chunk(completion_tokens: int) -> str:
    return (
        f'{CHUNK}{MODEL}"choices":[],"usage":{{"prompt_tokens":21,'
        f'"total_tokens":{21 + completion_tokens},"completion_tokens":{completion_tokens}}}}}'
    )


@pytest.mark.parametrize("endpoint", [Endpoint.completions, Endpoint.chat, Endpoint.responses])
async def test_pr615_no_terminal_response_is_errored(endpoint: Endpoint) -> None:
    # The backend resolved with an empty 200 stream: not one SSE event.
    record = await _run_stream(endpoint, [])
    assert _errored_code(record) is DiagnosticCode.no_terminal_response


async def test_pr615_empty_generation_response_is_errored_empty_response() -> None:
    # vLLM with EOS forced first: role chunk, finish_reason stop, 0 completion tokens, [DONE].
    frames = [
        _chat_chunk('{"role":"assistant","content":""}'),
        _chat_chunk("{}", '"stop"'),
        _usage_chunk(0),
        "[DONE]",
    ]
    record = await _run_stream(Endpoint.chat, frames)
    assert _errored_code(record) is DiagnosticCode.empty_response
    assert isinstance(record.outcome, Errored)
    diagnostic = record.outcome.diagnostic
    assert diagnostic.message.startswith(
        "empty response payload: no text, no tool calls, no reasoning; "
        "server reported 0 completion tokens"
    )
    assert diagnostic.evidence.partial is not None
    assert diagnostic.evidence.partial.usage is not None
    assert diagnostic.evidence.partial.usage.completion_tokens == 0


async def test_pr615_only_done_stream_is_errored() -> None:
    # A server that filtered an error before the first token sends only `data: [DONE]`.
    record = await _run_stream(Endpoint.chat, ["[DONE]"])
    assert _errored_code(record) is DiagnosticCode.empty_response


async def test_pr615_output_tokens_with_empty_text_is_errored_since_issue_8() -> None:
    # This case was "completed" in the PR #615 list (and in the first design): output tokens
    # with empty text were taken for split multi-byte characters. Real engines showed it is the
    # empty answer itself: vLLM counts the EOS token of a forced-empty answer
    # (`completion_tokens: 1`), so 120 of 120 empty vLLM answers were counted as served. A
    # split character streams "" deltas *and then the character*, so a served answer still
    # has text; tokens with no text, tool call or reasoning to show are unusable.
    frames = [
        _chat_chunk('{"role":"assistant","content":""}'),
        _chat_chunk('{"content":""}'),
        _chat_chunk('{"content":""}', '"length"'),
        _usage_chunk(2),
        "[DONE]",
    ]
    record = await _run_stream(Endpoint.chat, frames)
    assert _errored_code(record) is DiagnosticCode.empty_response
    assert isinstance(record.outcome, Errored)
    assert "server reported 2 completion tokens" in record.outcome.diagnostic.message


async def test_split_multibyte_character_with_its_text_is_completed() -> None:
    # What the PR #615 case meant to protect: "" deltas of a split character, then the text.
    frames = [
        _chat_chunk('{"role":"assistant","content":""}'),
        _chat_chunk('{"content":""}'),
        _chat_chunk('{"content":"\u00e9t\u00e9"}', '"length"'),
        _usage_chunk(2),
        "[DONE]",
    ]
    record = await _run_stream(Endpoint.chat, frames)
    assert isinstance(record.outcome, Completed), record.outcome
    assert record.outcome.response.text == "été"
    assert record.outcome.response.streamed_tokens == 2
    assert record.outcome.response.output_tokens == 2


async def test_vllm_empty_answer_reporting_one_eos_token_is_empty_response() -> None:
    # Issue 8, the vLLM 0.32 bytes of a forced-empty answer (logit_bias on EOS): role chunk
    # with "content": "", a "" finish chunk, usage completion_tokens 1, [DONE].
    frames = [
        _chat_chunk('{"role":"assistant","content":""}'),
        _chat_chunk('{"content":""}', '"stop"'),
        _usage_chunk(1),
        "[DONE]",
    ]
    record = await _run_stream(Endpoint.chat, frames)
    assert _errored_code(record) is DiagnosticCode.empty_response
    assert isinstance(record.outcome, Errored)
    diagnostic = record.outcome.diagnostic
    assert "server reported 1 completion token " in diagnostic.message
    assert diagnostic.evidence.partial is not None
    # The "" finish chunk is not a token: nothing was streamed and there is no first token.
    assert diagnostic.evidence.partial.streamed_tokens == 0
    assert diagnostic.evidence.partial.timing.first_token_ns is None


@pytest.mark.parametrize("endpoint", [Endpoint.completions, Endpoint.chat, Endpoint.responses])
async def test_non_streamed_empty_answer_with_one_token_is_empty_response(
    endpoint: Endpoint,
) -> None:
    bodies = {
        Endpoint.chat: b'{"choices":[{"index":0,"message":{"role":"assistant","content":""},'
        b'"finish_reason":"stop"}],"usage":{"prompt_tokens":21,"completion_tokens":1}}',
        Endpoint.completions: b'{"choices":[{"index":0,"text":"","finish_reason":"stop"}],'
        b'"usage":{"prompt_tokens":21,"completion_tokens":1}}',
        Endpoint.responses: b'{"object":"response","status":"completed","output":[{"type":'
        b'"message","content":[{"type":"output_text","text":""}]}],'
        b'"usage":{"input_tokens":21,"output_tokens":1}}',
    }
    record = await _run_body(endpoint, bodies[endpoint])
    assert _errored_code(record) is DiagnosticCode.empty_response


async def test_pr615_tool_call_only_response_is_completed() -> None:
    call = (
        '{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
        '"function":{"name":"get_weather","arguments":"{\\"city\\": \\"Paris\\"}"}}]}'
    )
    frames = [
        _chat_chunk('{"role":"assistant","content":null}'),
        _chat_chunk(call),
        _chat_chunk("{}", '"tool_calls"'),
        "[DONE]",
    ]
    record = await _run_stream(Endpoint.chat, frames)
    assert isinstance(record.outcome, Completed), record.outcome
    assert record.outcome.response.text == ""
    answer = record.outcome.response.answer
    assert isinstance(answer, TextAnswer)
    assert [c.name for c in answer.tool_calls] == ["get_weather"]


@pytest.mark.parametrize("endpoint", [Endpoint.completions, Endpoint.chat])
async def test_pr615_empty_choices_and_empty_usage_body_is_errored(endpoint: Endpoint) -> None:
    record = await _run_body(endpoint, b'{"choices": [], "usage": {}}')
    assert isinstance(record.outcome, Errored)
    assert record.outcome.diagnostic.code in (
        DiagnosticCode.empty_response,
        DiagnosticCode.unexpected_shape,
    )


async def test_pr615_embeddings_without_vectors_are_errored_too() -> None:
    # The PR left embeddings unguarded; here every endpoint has a default chain.
    body = (
        b'{"object":"list","data":[],"model":"bge-small",'
        b'"usage":{"prompt_tokens":7,"total_tokens":7}}'
    )
    record = await _run_body(Endpoint.embeddings, body)
    assert _errored_code(record) in (
        DiagnosticCode.empty_embedding,
        DiagnosticCode.unexpected_shape,
    )
