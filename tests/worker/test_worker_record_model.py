"""The worker builds its records unvalidated; they must equal and serialize like validated ones."""

from __future__ import annotations

from returns.result import Result, Success

from assay.core import (
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.records import Completed, RequestRecord
from assay.testing import FakeClock
from assay.validators import default_chain
from assay.worker import execute

REQUEST = GenerationRequest(
    request_id="req-7",
    endpoint=Endpoint.chat,
    model="tiny-llama",
    messages=({"role": "user", "content": "Name a river."},),
    max_output_tokens=2,
)


async def _resolve(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
    return Success(
        GenerationResponse(
            request_id=request.request_id,
            endpoint=request.endpoint,
            streamed=True,
            echo=request.echo(),
            model=request.model,
            answer=TextAnswer(text="The Nile"),
            finish_reason="length",
            usage=Usage(prompt_tokens=12, completion_tokens=2, total_tokens=14),
            content_chunks=2,
            streamed_tokens=2,
            streamed_token_source=TokenSource.stream,
            terminal_seen=True,
            timing=ResponseTiming(
                send_ns=1_000,
                first_token_ns=40_000,
                last_token_ns=60_000,
                end_ns=70_000,
                chunk_times_ns=(40_000, 60_000),
                chunk_tokens=(1, 1),
            ),
        )
    )


async def test_completed_record_equals_its_validated_copy() -> None:
    sunk: list[RequestRecord[GenerationResponse]] = []
    record = await execute(
        REQUEST,
        request_id=REQUEST.request_id,
        resolve=_resolve,
        validate=default_chain(Endpoint.chat),
        clock=FakeClock(start_ns=500),
        targeted_start_ns=400,
        step=2,
        sink=sunk.append,
    )
    assert sunk == [record]
    assert isinstance(record.outcome, Completed)
    validated = RequestRecord[GenerationResponse](
        request_id=record.request_id,
        step=record.step,
        targeted_start_ns=record.targeted_start_ns,
        dispatched_ns=record.dispatched_ns,
        finished_ns=record.finished_ns,
        outcome=Completed(response=record.outcome.response),
    )
    assert validated.model_dump() == record.model_dump()
    assert validated.model_dump_json() == record.model_dump_json()
    assert list(validated.__dict__) == list(record.__dict__)
    assert record.step == 2
    assert record.targeted_start_ns == 400
