"""The record of one request and its terminal outcome, a discriminated union for JSON."""

from __future__ import annotations

from typing import Annotated, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from assay.core.diagnostics import UnusableResponse

ResponseT = TypeVar("ResponseT")


class Completed(BaseModel, Generic[ResponseT]):
    """The server answered and every validator accepted the answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["completed"] = "completed"
    response: ResponseT


class Errored(BaseModel):
    """The request produced no usable answer; `diagnostic` says precisely why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["errored"] = "errored"
    diagnostic: UnusableResponse


class Cancelled(BaseModel):
    """The run stopped (Ctrl-C, a constraint) while the request was in flight."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["cancelled"] = "cancelled"
    reason: str = "cancelled"


class RequestRecord(BaseModel, Generic[ResponseT]):
    """One dispatched request: when it was meant to start, when it did, how it ended.

    All times are monotonic nanoseconds of the run's clock. `targeted_start_ns` is when the
    schedule wanted the request sent, so latency from it exposes a client that fell behind.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str
    step: int = 0
    targeted_start_ns: int
    dispatched_ns: int
    finished_ns: int
    outcome: Annotated[Completed[ResponseT] | Errored | Cancelled, Field(discriminator="status")]
