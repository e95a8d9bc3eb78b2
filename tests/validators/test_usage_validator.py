"""impossible_usage (issue 9): server usage is evidence, not truth. Bodies and streams go through
the real handler and the default chain, as the worker runs them."""

from __future__ import annotations

import pytest
from returns.result import Failure, Result, Success

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    UnusableResponse,
    outcome,
)
from assay.core.diagnostics import AnyCode
from assay.handlers import SseParser, Transfer, handler_for
from assay.validators import default_chain, impossible_usage

TRANSFER = Transfer(send_ns=0, end_ns=5_000_000, first_byte_ns=1_000_000)


def _request(max_tokens: int | None = 16, n: int | None = None) -> GenerationRequest:
    return GenerationRequest(
        request_id="u1",
        endpoint=Endpoint.chat,
        model="tiny-llama",
        messages=({"role": "user", "content": "Say something."},),
        max_output_tokens=max_tokens,
        stream=False,
        extra_body={} if n is None else {"n": n},
    )


def _body(content: str, completion_tokens: int, prompt_tokens: int = 21) -> bytes:
    return (
        b'{"id":"chatcmpl-1","object":"chat.completion","model":"tiny-llama","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"' + content.encode() + b'"},'
        b'"finish_reason":"stop"}],"usage":{"prompt_tokens":' + str(prompt_tokens).encode()
        + b',"completion_tokens":' + str(completion_tokens).encode() + b"}}"
    )  # fmt: skip


def _judge(
    request: GenerationRequest, body: bytes, strict: bool = False
) -> Result[GenerationResponse, UnusableResponse]:
    compiled = handler_for(Endpoint.chat).compile_body(request, body, TRANSFER)
    return compiled.bind(default_chain(Endpoint.chat, strict=strict))


def _code(result: Result[GenerationResponse, UnusableResponse]) -> tuple[AnyCode, str]:
    match outcome(result):
        case Success(response):
            raise AssertionError(f"expected an error, got {response!r}")
        case Failure(problem):
            return problem.code, problem.message


@pytest.mark.parametrize("strict", [False, True])
def test_negative_completion_tokens_are_impossible_usage(strict: bool) -> None:
    code, message = _code(_judge(_request(), _body("Hi there", -1_000_000), strict))
    assert code is DiagnosticCode.impossible_usage
    assert "negative count: completion_tokens=-1000000" in message


def test_negative_prompt_tokens_are_impossible_usage() -> None:
    code, _ = _code(_judge(_request(), _body("Hi there", 2, prompt_tokens=-5)))
    assert code is DiagnosticCode.impossible_usage


def test_more_completion_tokens_than_max_tokens_are_impossible_usage() -> None:
    code, message = _code(_judge(_request(max_tokens=16), _body("Hi", 10**12)))
    assert code is DiagnosticCode.impossible_usage
    assert message == (
        "server usage reports 1000000000000 completion tokens but max_tokens allowed at most 16 "
        "(and 2 more for a late stop)"
    )


@pytest.mark.parametrize("reported", [17, 18])
def test_a_late_stop_of_a_token_or_two_is_not_impossible(reported: int) -> None:
    # Issue 20 item 10: llama-cpp-python returned 17-18 tokens for 16 asked; non-streamed
    # (usage present) they were impossible_usage, streamed (no usage) they completed.
    assert isinstance(outcome(_judge(_request(max_tokens=16), _body("Hi", reported))), Success)
    code, _ = _code(_judge(_request(max_tokens=16), _body("Hi", 19)))
    assert code is DiagnosticCode.impossible_usage


def test_max_tokens_bound_covers_every_choice_asked_for() -> None:
    # `n: 2` asks for two answers; usage counts both.
    request = _request(max_tokens=16, n=2)
    result = _judge(request, _body("Hi", 35))
    assert isinstance(outcome(result), Success)  # 32 and a late stop of 3 (10 %)
    code, message = _code(_judge(request, _body("Hi", 36)))
    assert code is DiagnosticCode.impossible_usage
    assert "at most 32 (2 choices of 16) (and 3 more for a late stop)" in message


def test_no_max_tokens_means_no_upper_bound_and_exactly_max_passes() -> None:
    assert isinstance(outcome(_judge(_request(max_tokens=None), _body("Hi", 5000))), Success)
    assert isinstance(outcome(_judge(_request(max_tokens=16), _body("Hi", 16))), Success)


@pytest.mark.parametrize("strict", [False, True])
def test_no_content_with_usage_128_is_empty_response_even_non_streamed(strict: bool) -> None:
    code, message = _code(_judge(_request(max_tokens=128), _body("", 128), strict))
    assert code is DiagnosticCode.empty_response
    assert "server reported 128 completion tokens" in message


def test_impossible_usage_in_a_stream_is_caught_too() -> None:
    request = _request().model_copy(update={"stream": True})
    raw = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":21,"completion_tokens":-3}}\n\n'
        b"data: [DONE]\n\n"
    )
    parser = SseParser()
    accumulator = handler_for(Endpoint.chat).open_accumulator(request, 0)
    for index, event in enumerate([*parser.feed(raw), *parser.close()]):
        accumulator.feed(event, 1_000 * (index + 1))
    result = accumulator.finish(TRANSFER).bind(default_chain(Endpoint.chat))
    assert _code(result)[0] is DiagnosticCode.impossible_usage


def test_impossible_usage_keeps_the_reported_figures_as_evidence() -> None:
    compiled = handler_for(Endpoint.chat).compile_body(_request(), _body("Hi", -7), TRANSFER)
    match outcome(compiled.bind(impossible_usage)):
        case Failure(problem):
            assert problem.evidence.partial is not None
            assert problem.evidence.partial.usage is not None
            assert problem.evidence.partial.usage.completion_tokens == -7
        case Success(response):
            raise AssertionError(response)
