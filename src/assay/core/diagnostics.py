"""Why a response is not usable: the stable diagnostic codes and the `UnusableResponse` value."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, model_validator

from assay.core.response import GenerationResponse

EXCERPT_LIMIT = 2048


class Stage(StrEnum):
    """Where in the pipeline the problem was found."""

    transport = "transport"
    protocol = "protocol"
    content = "content"
    internal = "internal"


class DiagnosticCode(StrEnum):
    """Stable diagnostic codes: part of the public API and of the JSON output.

    Codes may be added; an existing code never changes meaning.
    """

    connect_error = "connect_error"
    timeout_connect = "timeout_connect"
    timeout_first_token = "timeout_first_token"
    timeout_idle = "timeout_idle"
    timeout_total = "timeout_total"
    http_status = "http_status"
    stream_interrupted = "stream_interrupted"
    response_too_large = "response_too_large"
    bad_content_type = "bad_content_type"
    invalid_json = "invalid_json"
    inband_error = "inband_error"
    sse_error_event = "sse_error_event"
    unexpected_shape = "unexpected_shape"
    malformed_http = "malformed_http"
    no_terminal_response = "no_terminal_response"
    empty_response = "empty_response"
    truncated_stream = "truncated_stream"
    missing_finish_reason = "missing_finish_reason"
    usage_mismatch = "usage_mismatch"
    max_tokens_not_honoured = "max_tokens_not_honoured"
    empty_embedding = "empty_embedding"
    invalid_json_output = "invalid_json_output"
    invalid_tool_call = "invalid_tool_call"
    internal_error = "internal_error"


_C = DiagnosticCode
_STAGES: dict[DiagnosticCode, Stage] = {
    **dict.fromkeys(
        (
            _C.connect_error,
            _C.timeout_connect,
            _C.timeout_first_token,
            _C.timeout_idle,
            _C.timeout_total,
            _C.http_status,
            _C.stream_interrupted,
            _C.response_too_large,
        ),
        Stage.transport,
    ),
    **dict.fromkeys(
        (
            _C.bad_content_type,
            _C.invalid_json,
            _C.inband_error,
            _C.sse_error_event,
            _C.unexpected_shape,
            _C.malformed_http,
        ),
        Stage.protocol,
    ),
    **dict.fromkeys(
        (
            _C.no_terminal_response,
            _C.empty_response,
            _C.truncated_stream,
            _C.missing_finish_reason,
            _C.usage_mismatch,
            _C.max_tokens_not_honoured,
            _C.empty_embedding,
            _C.invalid_json_output,
            _C.invalid_tool_call,
        ),
        Stage.content,
    ),
    _C.internal_error: Stage.internal,
}

CODE_MEANINGS: dict[DiagnosticCode, str] = {
    _C.connect_error: "connection refused or reset before a response",
    _C.timeout_connect: "the connect deadline passed",
    _C.timeout_first_token: "the first-token deadline passed",
    _C.timeout_idle: "no bytes arrived within the idle deadline",
    _C.timeout_total: "the total deadline for the request passed",
    _C.http_status: "non-2xx HTTP status",
    _C.stream_interrupted: "the connection dropped in the middle of the body",
    _C.response_too_large: "the response passed --max-response-bytes (an endless or runaway body)",
    _C.bad_content_type: "2xx body that is neither JSON nor SSE",
    _C.invalid_json: "a body or SSE data line that is not valid JSON",
    _C.inband_error: "a 2xx body or stream event that is an error object",
    _C.sse_error_event: "an SSE `event: error` frame",
    _C.unexpected_shape: "valid JSON that is not the endpoint's schema",
    _C.malformed_http: "the HTTP response cannot be read: bad chunk framing or head, or an "
    "encoding assay does not decode (Brotli, zstd)",
    _C.no_terminal_response: "the backend resolved with nothing at all",
    _C.empty_response: "no text, no tool calls, no reasoning and 0 output tokens",
    _C.truncated_stream: "the stream ended without a terminal marker and without finish_reason",
    _C.missing_finish_reason: "strict: a terminal chunk without finish_reason",
    _C.usage_mismatch: "server-reported output tokens disagree with the streamed count",
    _C.max_tokens_not_honoured: "ignore_eos asked for N output tokens and got a different count",
    _C.empty_embedding: "no vectors, wrong count, zero dimension or non-finite values",
    _C.invalid_json_output: "JSON mode was requested and the text does not parse or match",
    _C.invalid_tool_call: "a tool call whose arguments do not parse as JSON",
    _C.internal_error: "a bug in assay, recorded with its traceback",
}


def stage_of(code: DiagnosticCode) -> Stage:
    """The pipeline stage a code belongs to.

    >>> stage_of(DiagnosticCode.empty_response)
    <Stage.content: 'content'>
    """
    return _STAGES[code]


def cap_excerpt(raw: bytes | str | None, limit: int = EXCERPT_LIMIT) -> str | None:
    """A bounded, printable excerpt of a raw payload for evidence.

    >>> cap_excerpt(b"x" * 5000, limit=4)
    'xxxx…[4996 more]'
    """
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more]"


class Evidence(BaseModel):
    """What was seen: the status, a capped excerpt, the partial response, a traceback."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    http_status: int | None = None
    excerpt: str | None = None
    partial: GenerationResponse | None = None
    traceback: str | None = None


class UnusableResponse(BaseModel):
    """A response that must not count as served, with a stable code and a specific message.

    The stage is derived from the code, so the two can never disagree.

    >>> u = UnusableResponse(code=DiagnosticCode.http_status, message="HTTP 503: overloaded")
    >>> u.stage
    <Stage.transport: 'transport'>
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: DiagnosticCode
    # Filled from `code` when omitted (see `_derive_stage`); the default is never kept.
    stage: Stage = Stage.internal
    message: str
    evidence: Evidence = Evidence()

    @model_validator(mode="before")
    @classmethod
    def _derive_stage(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("stage") is None and "code" in data:
            return {**data, "stage": stage_of(DiagnosticCode(data["code"]))}
        return data

    @model_validator(mode="after")
    def _stage_matches_code(self) -> Self:
        if self.stage is not stage_of(self.code):
            raise ValueError(f"stage {self.stage} does not match code {self.code}")
        return self
