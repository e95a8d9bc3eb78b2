"""The generic worker: one terminal record per request, sunk exactly once, whatever happens."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationRequest,
    GenerationResponse,
    ResponseTiming,
    Stage,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.testing import FakeClock
from assay.validators import Validator, chain, default_chain
from assay.worker import execute

REQUEST = GenerationRequest(
    request_id="req-1",
    endpoint=Endpoint.chat,
    model="tiny-llama",
    messages=({"role": "user", "content": "What is the capital of France?"},),
    max_output_tokens=16,
)

Resolver = Callable[[GenerationRequest], Awaitable[Result[GenerationResponse, UnusableResponse]]]


def _answer(
    request: GenerationRequest, text: str = "Paris.", tokens: int = 2
) -> GenerationResponse:
    return GenerationResponse(
        request_id=request.request_id,
        endpoint=request.endpoint,
        streamed=True,
        echo=request.echo(),
        model=request.model,
        answer=TextAnswer(text=text),
        finish_reason="stop",
        usage=Usage(prompt_tokens=14, completion_tokens=tokens, total_tokens=14 + tokens),
        content_chunks=tokens,
        streamed_tokens=tokens,
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(send_ns=1_000, end_ns=2_000_000),
    )


def _serving(clock: FakeClock, text: str = "Paris.", tokens: int = 2) -> Resolver:
    async def resolve(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
        clock.advance(2_000_000)  # the server takes 2 ms
        return Success(_answer(request, text, tokens))

    return resolve


async def _http_503(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
    return Failure(
        UnusableResponse(
            code=DiagnosticCode.http_status,
            message="HTTP 503: server overloaded",
            evidence=Evidence(http_status=503, excerpt='{"error": "overloaded"}'),
        )
    )


async def _resolver_bug(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
    raise KeyError("choices")


def _validator_bug(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    # A user validator with a bug: it assumes every answer holds a tool call.
    if response.answer.tool_calls[0].name is None:  # type: ignore[union-attr]  # the bug
        return Success(response)
    return Success(response)


async def _run(
    resolve: Resolver,
    clock: FakeClock,
    validate: Validator[GenerationResponse] | None = None,
) -> tuple[RequestRecord[GenerationResponse], list[RequestRecord[GenerationResponse]]]:
    sunk: list[RequestRecord[GenerationResponse]] = []
    record = await execute(
        REQUEST,
        request_id=REQUEST.request_id,
        resolve=resolve,
        validate=default_chain(Endpoint.chat) if validate is None else validate,
        clock=clock,
        targeted_start_ns=900,
        step=2,
        sink=sunk.append,
    )
    return record, sunk


async def test_usable_answer_is_completed_with_clock_times() -> None:
    clock = FakeClock(start_ns=1_000)
    record, sunk = await _run(_serving(clock), clock)
    assert sunk == [record]
    assert isinstance(record.outcome, Completed)
    assert record.outcome.response.text == "Paris."
    assert (record.targeted_start_ns, record.dispatched_ns, record.finished_ns) == (
        900,
        1_000,
        2_001_000,
    )
    assert (record.request_id, record.step) == ("req-1", 2)


async def test_resolver_failure_is_errored_with_its_diagnostic() -> None:
    record, sunk = await _run(_http_503, FakeClock())
    assert sunk == [record]
    assert isinstance(record.outcome, Errored)
    assert record.outcome.diagnostic.code is DiagnosticCode.http_status
    assert record.outcome.diagnostic.evidence.http_status == 503
    assert (record.outcome.judged_by, record.outcome.validator) == (JudgedBy.transport, None)


async def test_empty_answer_fails_validation_and_is_errored_empty_response() -> None:
    clock = FakeClock()
    record, sunk = await _run(_serving(clock, text="", tokens=0), clock)
    assert sunk == [record]
    assert isinstance(record.outcome, Errored)
    assert record.outcome.diagnostic.code is DiagnosticCode.empty_response
    assert record.outcome.judged_by is JudgedBy.validator
    assert record.outcome.validator == "empty_response"


async def test_user_validator_raising_is_validator_error_naming_it() -> None:
    # Issue 10, item 2: a user's validator that raises is that validator's bug, not assay's.
    clock = FakeClock()
    validate = chain(default_chain(Endpoint.chat), _validator_bug)
    record, sunk = await _run(_serving(clock), clock, validate)
    assert sunk == [record]
    assert isinstance(record.outcome, Errored)
    assert record.outcome.judged_by is JudgedBy.validator
    name = "tests.worker.test_execute_worker:_validator_bug"
    assert record.outcome.validator == name
    diagnostic = record.outcome.diagnostic
    assert diagnostic.code is DiagnosticCode.validator_error
    assert diagnostic.stage is Stage.user
    assert diagnostic.message == (
        f"validator {name!r} raised IndexError: tuple index out of range "
        "(a bug in that validator, not in the server)"
    )
    assert diagnostic.evidence.traceback is not None
    assert "_validator_bug" in diagnostic.evidence.traceback
    # The judged response is kept, so a fixed validator can judge it again.
    assert diagnostic.evidence.partial == _answer(REQUEST)


async def test_user_validator_returning_no_result_is_validator_error() -> None:
    def forgets_to_return(
        response: GenerationResponse,
    ) -> Result[GenerationResponse, UnusableResponse]:
        return None  # type: ignore[return-value]  # the user's bug under test

    clock = FakeClock()
    record, _ = await _run(_serving(clock), clock, forgets_to_return)
    assert isinstance(record.outcome, Errored)
    assert record.outcome.diagnostic.code is DiagnosticCode.validator_error
    assert record.outcome.diagnostic.message.endswith(
        "raised TypeError: it returned NoneType, not Success or Failure "
        "(a bug in that validator, not in the server)"
    )


async def test_builtin_validator_raising_is_internal_error_naming_it() -> None:
    # A response no handler builds (echo missing) makes a built-in validator fail: assay's bug.
    async def broken(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
        fields = {**dict(_answer(request)), "echo": None}
        return Success(GenerationResponse.model_construct(**fields))

    record, _ = await _run(broken, FakeClock())
    assert isinstance(record.outcome, Errored)
    assert record.outcome.diagnostic.code is DiagnosticCode.internal_error
    assert record.outcome.validator == "impossible_usage"
    assert record.outcome.diagnostic.message.startswith(
        "internal error: the built-in validator 'impossible_usage' raised AttributeError"
    )


async def test_resolver_raising_is_internal_error_naming_the_exception() -> None:
    record, sunk = await _run(_resolver_bug, FakeClock())
    assert sunk == [record]
    assert isinstance(record.outcome, Errored)
    assert record.outcome.diagnostic.message == (
        "internal error: the resolver raised KeyError: 'choices'"
    )
    assert record.outcome.judged_by is JudgedBy.internal
    assert record.outcome.diagnostic.evidence.traceback is not None


async def test_cancellation_mid_await_sinks_cancelled_and_reraises() -> None:
    clock = FakeClock()

    async def stalled(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
        await clock.sleep_until(10**12)  # a stalled server: never reached in this test
        return Success(_answer(request))

    sunk: list[RequestRecord[GenerationResponse]] = []
    task = asyncio.create_task(
        execute(
            REQUEST,
            request_id="req-1",
            resolve=stalled,
            validate=default_chain(Endpoint.chat),
            clock=clock,
            targeted_start_ns=0,
            sink=sunk.append,
        )
    )
    for _ in range(5):
        await asyncio.sleep(0)
    assert clock.next_deadline_ns == 10**12
    clock.advance(5_000)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(sunk) == 1
    assert isinstance(sunk[0].outcome, Cancelled)
    assert sunk[0].outcome.reason == "cancelled while the resolver was running"
    assert sunk[0].finished_ns == 5_000


async def test_worker_is_generic_over_plain_response_types() -> None:
    async def resolve(prompt: str) -> Result[str, UnusableResponse]:
        return Success(prompt[::-1])

    def non_empty(text: str) -> Result[str, UnusableResponse]:
        if text:
            return Success(text)
        return Failure(UnusableResponse(code=DiagnosticCode.empty_response, message="no text"))

    sunk: list[RequestRecord[str]] = []
    done = await execute(
        "abc",
        request_id="s1",
        resolve=resolve,
        validate=non_empty,
        clock=FakeClock(),
        targeted_start_ns=0,
        sink=sunk.append,
    )
    empty = await execute(
        "",
        request_id="s2",
        resolve=resolve,
        validate=non_empty,
        clock=FakeClock(),
        targeted_start_ns=0,
        sink=sunk.append,
    )
    assert sunk == [done, empty]
    assert done.outcome == Completed(response="cba")
    assert isinstance(empty.outcome, Errored)


SCENARIOS = ("served", "http_503", "empty", "validator_bug", "resolver_bug", "cancelled")
EXPECTED_STATUS = {
    "served": "completed",
    "http_503": "errored",
    "empty": "errored",
    "validator_bug": "errored",
    "resolver_bug": "errored",
    "cancelled": "cancelled",
}


async def _run_mix(scenarios: list[str]) -> list[RequestRecord[GenerationResponse]]:
    """Run one request per scenario concurrently; cancel the stalled ones mid-await."""
    clock = FakeClock()
    sunk: list[RequestRecord[GenerationResponse]] = []
    base = default_chain(Endpoint.chat)

    async def stalled(request: GenerationRequest) -> Result[GenerationResponse, UnusableResponse]:
        await clock.sleep_until(10**12)
        return Success(_answer(request))

    resolvers: dict[str, Resolver] = {
        "served": _serving(clock),
        "http_503": _http_503,
        "empty": _serving(clock, text="", tokens=0),
        "validator_bug": _serving(clock),
        "resolver_bug": _resolver_bug,
        "cancelled": stalled,
    }
    tasks: list[asyncio.Task[RequestRecord[GenerationResponse]]] = []
    async with asyncio.TaskGroup() as group:
        for index, scenario in enumerate(scenarios):
            request = REQUEST.model_copy(update={"request_id": f"{scenario}-{index}"})
            validate = chain(base, _validator_bug) if scenario == "validator_bug" else base
            work = execute(
                request,
                request_id=request.request_id,
                resolve=resolvers[scenario],
                validate=validate,
                clock=clock,
                targeted_start_ns=index,
                step=index,
                sink=sunk.append,
            )
            tasks.append(group.create_task(work))
        for _ in range(10):
            await asyncio.sleep(0)
        for scenario, task in zip(scenarios, tasks, strict=True):
            if scenario == "cancelled":
                task.cancel()
    return sunk


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(SCENARIOS), max_size=12))
def test_every_dispatched_request_sinks_exactly_one_terminal_record(scenarios: list[str]) -> None:
    sunk = asyncio.run(_run_mix(scenarios))
    assert sorted(record.request_id for record in sunk) == sorted(
        f"{scenario}-{index}" for index, scenario in enumerate(scenarios)
    )
    for record in sunk:
        scenario = record.request_id.rsplit("-", 1)[0]
        assert record.outcome.status == EXPECTED_STATUS[scenario]
    statuses = Counter(record.outcome.status for record in sunk)
    assert statuses == Counter(EXPECTED_STATUS[scenario] for scenario in scenarios)
    assert statuses.total() == len(scenarios)
