"""A traffic mix's records name their request's model (issue 39); the worker writes it on every
terminal record, a cancelled one included, and a single-model run's records name none."""

from __future__ import annotations

import asyncio

import pytest
from returns.result import Result, Success

from assay.core import UnusableResponse
from assay.records import Cancelled, Completed, RequestRecord
from assay.testing import FakeClock
from assay.worker import execute


async def _echo(text: str) -> Result[str, UnusableResponse]:
    return Success(text)


async def _never(text: str) -> Result[str, UnusableResponse]:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def _run(model: str | None) -> RequestRecord[str]:
    sunk: list[RequestRecord[str]] = []
    return await execute(
        "hi",
        request_id="req-00000001",
        resolve=_echo,
        validate=Success,
        clock=FakeClock(),
        targeted_start_ns=0,
        model=model,
        sink=sunk.append,
    )


async def test_a_mixed_runs_record_names_its_model() -> None:
    record = await _run("lora-b")
    assert isinstance(record.outcome, Completed)
    assert record.model == "lora-b"
    assert RequestRecord[str].model_validate(record.model_dump()).model == "lora-b"


async def test_a_single_model_record_names_none() -> None:
    assert (await _run(None)).model is None


async def test_a_cancelled_record_keeps_its_model() -> None:
    sunk: list[RequestRecord[str]] = []
    task = asyncio.ensure_future(
        execute(
            "hi",
            request_id="req-00000002",
            resolve=_never,
            validate=Success,
            clock=FakeClock(),
            targeted_start_ns=0,
            model="c",
            sink=sunk.append,
        )
    )
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (record,) = sunk
    assert isinstance(record.outcome, Cancelled)
    assert record.model == "c"
