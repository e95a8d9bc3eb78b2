"""`judge_bytes`: captured bytes get the verdict a live run gives the same answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus

import aiohttp
import pytest
from returns.result import Failure, Result, Success

from assay.backend import wire_request_id
from assay.backend.received import PARTIAL_TEXT_LIMIT
from assay.core import (
    CustomCode,
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    Scores,
    Stage,
    UnusableResponse,
    outcome,
)
from assay.handlers import handler_for
from assay.handlers.by_endpoint import encoded_body
from assay.mock.faults import FAULT_HEADER, FAULTS
from assay.records import Completed, Errored
from assay.validators import chain, default_chain, reject
from assay.worker.captured import judge_bytes
from tests.backend.backend_loopback import serve_raw
from tests.backend.test_against_mock import FAULT_CASES, MODES, request_for, run_one

# The transport faults a capture cannot hold: a dropped connection and a stalled one are
# events of the exchange, not bytes of the answer.
_NOT_IN_BYTES = ("drop", "stall")
PARITY_CASES = [
    *(case for case in FAULT_CASES if case.values[0] not in _NOT_IN_BYTES),
    *(
        pytest.param(
            None, endpoint, stream, id=f"clean-{endpoint}-{'stream' if stream else 'body'}"
        )
        for endpoint, stream in MODES
    ),
]


def problem(result: Result[GenerationResponse, UnusableResponse]) -> UnusableResponse:
    match outcome(result):
        case Failure(unusable):
            return unusable
        case Success(response):
            raise AssertionError(f"expected a failure, got {response}")


def answer(result: Result[GenerationResponse, UnusableResponse]) -> GenerationResponse:
    match outcome(result):
        case Success(response):
            return response
        case Failure(unusable):
            raise AssertionError(f"expected a response, got {unusable}")


async def capture(
    url: str, request: GenerationRequest, headers: dict[str, str]
) -> tuple[int, str | None, bytes]:
    """The status, Content-Type and raw body the server sends for `request`, as a proxy would
    log them."""
    body, content_type = encoded_body(request, handler_for(request.endpoint).build_body(request))
    sent = {
        **headers,
        "Content-Type": content_type or "application/json",
        "X-Request-Id": wire_request_id(request.request_id),
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + request.endpoint.path, data=body, headers=sent) as response,
    ):
        return response.status, response.headers.get("Content-Type"), await response.read()


@asynccontextmanager
async def replay(status: int, content_type: str | None, body: bytes) -> AsyncIterator[str]:
    """A loopback server that answers every request with exactly these bytes."""
    head = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
    if content_type is not None:
        head += f"Content-Type: {content_type}\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"

    async def answer(writer: asyncio.StreamWriter, _: asyncio.Event) -> None:
        writer.write(head.encode("latin-1") + body)
        await writer.drain()

    async with serve_raw(answer) as server:
        yield server.url


@pytest.mark.parametrize(("fault", "endpoint", "stream"), PARITY_CASES)
async def test_captured_answer_gets_the_verdict_of_a_live_run_on_the_same_bytes(
    mock_url: str, fault: str | None, endpoint: Endpoint, stream: bool
) -> None:
    request = request_for(endpoint, stream, fault)
    headers = {} if fault is None else {FAULT_HEADER: f"{fault}; after=2"}
    status, content_type, body = await capture(mock_url, request, headers)
    async with replay(status, content_type, body) as url:
        live = await run_one(url, request)

    judged = judge_bytes(endpoint, body, content_type, request=request, status=status)

    match live.outcome:
        case Completed(response=response):
            # Captured bytes carry no exchange (no id was sent or echoed), only the answer's id;
            # timing and the body bytes sent are measured by the live exchange.
            assert answer(judged).model_dump(
                exclude={"timing", "ids", "sent"}
            ) == response.model_dump(exclude={"timing", "ids", "sent"})
            judged_ids, live_ids = answer(judged).ids, response.ids
            assert live_ids is not None
            assert (judged_ids and judged_ids.answer) == live_ids.answer
        case Errored(diagnostic=diagnostic):
            assert diagnostic.code is FAULTS[str(fault)].code
            assert problem(judged).model_dump(exclude={"evidence"}) == diagnostic.model_dump(
                exclude={"evidence"}
            )
        case other:
            raise AssertionError(f"the live run ended {other}")


def test_json_body_with_text_is_completed() -> None:
    body = b'{"choices": [{"message": {"content": "Hello"}, "finish_reason": "stop"}]}'
    assert answer(judge_bytes(Endpoint.chat, body, "application/json")).text == "Hello"


def test_stream_with_only_a_finish_marker_is_empty_response() -> None:
    stream = (
        b'data: {"choices": [{"delta": {"content": ""}, "finish_reason": "stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    result = judge_bytes(Endpoint.chat, stream, "text/event-stream; charset=utf-8")
    assert problem(result).code is DiagnosticCode.empty_response


def test_html_page_under_200_is_bad_content_type() -> None:
    result = judge_bytes(Endpoint.completions, b"<html>gateway</html>", "text/html")
    assert problem(result).code is DiagnosticCode.bad_content_type


def test_error_status_is_http_status_whatever_the_body() -> None:
    body = b'{"error": {"message": "overloaded"}}'
    result = judge_bytes(Endpoint.chat, body, "application/json", status=503)
    assert problem(result).code is DiagnosticCode.http_status
    assert "overloaded" in problem(result).message


def test_given_validator_replaces_the_default_chain() -> None:
    # The default chain would call this answer empty; the given validator alone decides.
    empty = b'{"choices": [{"message": {"content": ""}, "finish_reason": "stop"}]}'
    accepted = judge_bytes(Endpoint.chat, empty, "application/json", validate=Success)
    assert answer(accepted).text == ""


def test_custom_code_of_a_given_validator_is_the_verdict() -> None:
    shouting = CustomCode("mypkg.shouting", meaning="the answer is all capitals")

    def not_shouting(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
        if response.text.isupper():
            return reject(response, shouting, "the answer is all capitals")
        return Success(response)

    body = b'{"choices": [{"message": {"content": "HELLO"}, "finish_reason": "stop"}]}'
    validate = chain(default_chain(Endpoint.chat), not_shouting)
    found = problem(judge_bytes(Endpoint.chat, body, "application/json", validate=validate))
    assert (found.code, found.stage) == ("mypkg.shouting", Stage.content)


def test_validator_that_raises_is_validator_error_as_in_a_run() -> None:
    def broken(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
        raise KeyError("oops")

    body = b'{"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}'
    found = problem(judge_bytes(Endpoint.chat, body, "application/json", validate=broken))
    assert found.code is DiagnosticCode.validator_error
    assert "broken" in found.message


def test_request_token_limit_is_what_usage_is_checked_against() -> None:
    body = (
        b'{"choices": [{"message": {"content": "hi"}, "finish_reason": "length"}],'
        b' "usage": {"prompt_tokens": 3, "completion_tokens": 9}}'
    )
    asked = GenerationRequest(
        request_id="r1", endpoint=Endpoint.chat, model="m", prompt="hi", max_output_tokens=4
    )
    assert answer(judge_bytes(Endpoint.chat, body, "application/json")).output_tokens == 9
    limited = judge_bytes(Endpoint.chat, body, "application/json", request=asked)
    assert problem(limited).code is DiagnosticCode.impossible_usage


def test_request_for_another_endpoint_is_refused() -> None:
    asked = GenerationRequest(request_id="r1", endpoint=Endpoint.completions, model="m", prompt="")
    with pytest.raises(ValueError, match="completions endpoint, not chat"):
        judge_bytes(Endpoint.chat, b"{}", "application/json", request=asked)


def test_unregistered_error_status_is_http_status() -> None:
    result = judge_bytes(Endpoint.chat, b"", "text/plain", status=599)
    assert problem(result).code is DiagnosticCode.http_status
    assert "599" in problem(result).message


def test_partial_answer_of_a_long_broken_stream_is_capped_as_in_a_run() -> None:
    chunk = b'data: {"choices": [{"delta": {"content": "' + b"x" * 1000 + b'"}}]}\n\n'
    broken = chunk * 40 + b'data: {"error": {"message": "engine died"}}\n\n'
    found = problem(judge_bytes(Endpoint.chat, broken, "text/event-stream"))
    assert found.code is DiagnosticCode.inband_error
    assert found.evidence.partial is not None
    assert len(found.evidence.partial.text) <= PARTIAL_TEXT_LIMIT + 100  # the cap and its note
    assert found.evidence.partial.text.startswith("x" * 1000)


def test_a_captured_ranking_without_its_request_is_judged_on_what_it_holds() -> None:
    # The documents' count is unknown: no count or range check, but repeats and NaN still fail.
    body = (
        b'{"id": "r", "model": "m", "usage": {"prompt_tokens": 9, "total_tokens": 9}, '
        b'"results": [{"index": 4, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}'
    )
    scores = answer(judge_bytes(Endpoint.rerank, body, "application/json")).answer
    assert isinstance(scores, Scores)
    assert scores.summary is not None
    repeated = body.replace(b'"index": 0', b'"index": 4')
    verdict = problem(judge_bytes(Endpoint.rerank, repeated, "application/json"))
    assert verdict.code is DiagnosticCode.invalid_result_index
    nan = body.replace(b"results", b"data").replace(b"relevance_score", b"score")
    verdict = problem(judge_bytes(Endpoint.score, nan.replace(b"0.1", b"NaN"), "application/json"))
    assert verdict.code is DiagnosticCode.non_finite_score
