"""Shared by the endpoint-handler tests: unwrapping a compiled result, feeding a whole stream."""

from __future__ import annotations

from returns.result import Failure, Result, Success

from assay.core import GenerationRequest, GenerationResponse, UnusableResponse, outcome
from assay.handlers import EndpointHandler, SseParser, Transfer


def ok(result: Result[GenerationResponse, UnusableResponse]) -> GenerationResponse:
    """The response of a result that must be a success."""
    match outcome(result):
        case Success(response):
            return response
        case Failure(problem):
            raise AssertionError(f"expected a response, got {problem}")


def fault(result: Result[GenerationResponse, UnusableResponse]) -> UnusableResponse:
    """The fault of a result that must be a failure."""
    match outcome(result):
        case Success(response):
            raise AssertionError(f"expected a fault, got {response}")
        case Failure(problem):
            return problem


def stream(
    handler: EndpointHandler, request: GenerationRequest, raw: bytes
) -> Result[GenerationResponse, UnusableResponse]:
    """Parse all of `raw` and feed each event to a fresh accumulator 1 µs apart."""
    parser = SseParser()
    accumulator = handler.open_accumulator(request, send_ns=0)
    now = 0
    for event in [*parser.feed(raw), *parser.close()]:
        now += 1_000
        accumulator.feed(event, now)
    return accumulator.finish(Transfer(send_ns=0, end_ns=now + 1_000))
