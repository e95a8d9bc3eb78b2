"""Run one request to its single terminal record, whatever the server or assay itself does."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable
from typing import TypeVar

from returns.result import Result

from assay.core.clock import Clock
from assay.core.diagnostics import DiagnosticCode, Evidence, UnusableResponse
from assay.core.trusted import trusted
from assay.records.record import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.validators.chain import Validator
from assay.worker.judge import judge

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")


async def execute(
    request: RequestT,
    *,
    request_id: str,
    resolve: Callable[[RequestT], Awaitable[Result[ResponseT, UnusableResponse]]],
    validate: Validator[ResponseT],
    clock: Clock,
    targeted_start_ns: int,
    step: int = 0,
    turn: int | None = None,
    model: str | None = None,
    sink: Callable[[RequestRecord[ResponseT]], None],
) -> RequestRecord[ResponseT]:
    """Resolve `request`, judge the answer, and sink and return exactly one record.

    `turn` is the request's turn in a multi-turn session (from 1), None outside sessions; it
    travels on the record so per-turn figures never parse it back out of the id. `model` is the
    model the request named when the run sends several (a traffic mix), None otherwise; it
    travels on the record likewise, for per-model figures.

    `judge` decides (the same function `assay revalidate` uses): completed, or errored with the
    part that decided. Cancellation sinks a cancelled record and re-raises; any other exception
    is a bug in assay, recorded as `internal_error` with its traceback so it is never lost. The
    worker knows nothing of what "usable" means.

    >>> import asyncio
    >>> from returns.result import Success
    >>> from assay.core import MonotonicClock
    >>> async def echo(text: str) -> Result[str, UnusableResponse]:
    ...     return Success(text.upper())
    >>> sunk: list[RequestRecord[str]] = []
    >>> record = asyncio.run(execute("hi", request_id="r1", resolve=echo, validate=Success,
    ...                              clock=MonotonicClock(), targeted_start_ns=0,
    ...                              sink=sunk.append))
    >>> record.outcome, len(sunk)
    (Completed(status='completed', response='HI'), 1)
    """
    dispatched_ns = clock.now_ns()
    stage = "resolver"
    try:
        answer = await resolve(request)
        stage = "validator"
        terminal: Completed[ResponseT] | Errored | Cancelled = judge(answer, validate)
    except asyncio.CancelledError:
        reason = f"cancelled while the {stage} was running"
        sink(
            _record(
                request_id,
                step,
                turn,
                model,
                targeted_start_ns,
                dispatched_ns,
                clock,
                Cancelled(reason=reason),
            )
        )
        raise
    except Exception as error:
        terminal = Errored(diagnostic=_internal_error(stage, error), judged_by=JudgedBy.internal)
    record = _record(
        request_id, step, turn, model, targeted_start_ns, dispatched_ns, clock, terminal
    )
    sink(record)
    return record


def _record(
    request_id: str,
    step: int,
    turn: int | None,
    model: str | None,
    targeted_start_ns: int,
    dispatched_ns: int,
    clock: Clock,
    terminal: Completed[ResponseT] | Errored | Cancelled,
) -> RequestRecord[ResponseT]:
    # One record per request: every value is typed by this function's signature, so the record
    # is built without pydantic's validation (the keys follow `RequestRecord`'s field order).
    record: RequestRecord[ResponseT] = trusted(
        RequestRecord,
        {
            "request_id": request_id,
            "step": step,
            "turn": turn,
            "model": model,
            "targeted_start_ns": targeted_start_ns,
            "dispatched_ns": dispatched_ns,
            "finished_ns": clock.now_ns(),
            "outcome": terminal,
        },
    )
    return record


def _internal_error(stage: str, error: Exception) -> UnusableResponse:
    return UnusableResponse(
        code=DiagnosticCode.internal_error,
        message=f"internal error: the {stage} raised {type(error).__name__}: {error}",
        evidence=Evidence(
            traceback="".join(traceback.format_exception(type(error), error, error.__traceback__))
        ),
    )
