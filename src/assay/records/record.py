"""The record of one request and its terminal outcome, a discriminated union for JSON."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Generic, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.core.diagnostics import DiagnosticCode, Stage, UnusableResponse

ResponseT = TypeVar("ResponseT")


class Completed(BaseModel, Generic[ResponseT]):
    """The server answered and every validator accepted the answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["completed"] = "completed"
    response: ResponseT


class JudgedBy(StrEnum):
    """Which part of the pipeline produced an errored verdict.

    Only a validator's verdict can be judged again later (`assay revalidate`): when the
    transport or the handler failed there was no usable answer to judge, whatever the
    validators.
    """

    transport = "transport"  # no answer arrived: connection, deadline, HTTP status, dropped body
    handler = "handler"  # an answer arrived but could not be read as the endpoint's response
    validator = "validator"  # a validator of the chain rejected the response, or raised
    internal = "internal"  # assay itself raised while sending or reading (a bug in assay)

    @classmethod
    def of_resolver_failure(cls, diagnostic: UnusableResponse) -> JudgedBy:
        """The part behind a failure the resolver (backend and handler) returned.

        Transport-stage codes come from the backend's transport; every other code the resolver
        returns (protocol codes, `no_terminal_response`) is the handler's reading of the body.

        >>> from assay.core import DiagnosticCode
        >>> JudgedBy.of_resolver_failure(
        ...     UnusableResponse(code=DiagnosticCode.no_terminal_response, message="nothing"))
        <JudgedBy.handler: 'handler'>
        """
        return cls.transport if diagnostic.stage is Stage.transport else cls.handler

    @classmethod
    def inferred(cls, diagnostic: UnusableResponse) -> JudgedBy:
        """The part behind a diagnostic stored without it (records written before it was kept).

        The inference is conservative: a validator is named only where nothing else could have
        produced the code (content and user codes other than `no_terminal_response`, and custom
        codes), so an old run never has a transport or handler failure judged again.

        >>> from assay.core import DiagnosticCode
        >>> JudgedBy.inferred(UnusableResponse(code=DiagnosticCode.truncated_stream, message="m"))
        <JudgedBy.validator: 'validator'>
        """
        code = diagnostic.code
        if code is DiagnosticCode.internal_error:
            return cls.internal
        if code is DiagnosticCode.no_terminal_response:
            return cls.handler
        if diagnostic.stage in (Stage.content, Stage.user) or not isinstance(code, DiagnosticCode):
            return cls.validator
        return cls.of_resolver_failure(diagnostic)


class Errored(BaseModel):
    """The request produced no usable answer; `diagnostic` says precisely why.

    `judged_by` names the part that decided, and `validator` which validator when it was one
    (`None` only for records stored before validator names were kept).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["errored"] = "errored"
    diagnostic: UnusableResponse
    judged_by: JudgedBy
    validator: str | None = None

    @model_validator(mode="after")
    def _validator_only_for_validator_verdicts(self) -> Self:
        if self.validator is not None and self.judged_by is not JudgedBy.validator:
            raise ValueError(f"a verdict by the {self.judged_by.value} names no validator")
        return self


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
    # The request's turn in a multi-turn session, from 1; None outside sessions.
    turn: int | None = Field(default=None, ge=1)
    # The model (or adapter) the request named, when the run sends several (a traffic mix or a
    # data file's model column); None when the run sends one, which its report names.
    model: str | None = None
    targeted_start_ns: int
    dispatched_ns: int
    finished_ns: int
    outcome: Annotated[Completed[ResponseT] | Errored | Cancelled, Field(discriminator="status")]
