"""Why a response is not usable: the stable diagnostic codes and the `UnusableResponse` value.

The built-in codes are the `DiagnosticCode` enum; a library user's validator may report its own
`CustomCode` (a namespaced name such as `myorg.not_polite`), so a custom check is counted under
its own name instead of borrowing a built-in one.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Self, TypeAlias, final

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, model_validator
from pydantic_core import core_schema

from assay.core.response import ExchangeIds, GenerationResponse

EXCERPT_LIMIT = 2048


class Stage(StrEnum):
    """Where in the pipeline the problem was found."""

    transport = "transport"
    protocol = "protocol"
    content = "content"
    internal = "internal"
    user = "user"  # a user-supplied validator failed to run (its own bug, not the server's)


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
    impossible_usage = "impossible_usage"
    truncated_stream = "truncated_stream"
    missing_finish_reason = "missing_finish_reason"
    usage_mismatch = "usage_mismatch"
    max_tokens_not_honoured = "max_tokens_not_honoured"
    empty_embedding = "empty_embedding"
    no_results = "no_results"
    result_count_mismatch = "result_count_mismatch"
    invalid_result_index = "invalid_result_index"
    non_finite_score = "non_finite_score"
    invalid_json_output = "invalid_json_output"
    invalid_tool_call = "invalid_tool_call"
    internal_error = "internal_error"
    validator_error = "validator_error"


_C = DiagnosticCode
_T, _P, _S = Stage.transport, Stage.protocol, Stage.content
# Every code's stage and meaning (`assay validators` lists the meanings).
_CODES: dict[DiagnosticCode, tuple[Stage, str]] = {
    _C.connect_error: (_T, "connection refused or reset before a response"),
    _C.timeout_connect: (_T, "the connect deadline passed"),
    _C.timeout_first_token: (_T, "the first-token deadline passed"),
    _C.timeout_idle: (_T, "no bytes arrived within the idle deadline"),
    _C.timeout_total: (_T, "the total deadline for the request passed"),
    _C.http_status: (_T, "non-2xx HTTP status"),
    _C.stream_interrupted: (_T, "the connection dropped in the middle of the body"),
    _C.response_too_large: (
        _T,
        "the response passed --max-response-bytes (an endless or runaway body)",
    ),
    _C.bad_content_type: (_P, "2xx body that is neither JSON nor SSE"),
    _C.invalid_json: (_P, "a body or SSE data line that is not valid JSON"),
    _C.inband_error: (_P, "a 2xx body or stream event that is an error object"),
    _C.sse_error_event: (_P, "an SSE `event: error` frame"),
    _C.unexpected_shape: (_P, "valid JSON that is not the endpoint's schema"),
    _C.malformed_http: (
        _P,
        "the HTTP response cannot be read: bad chunk framing or head, or an encoding assay "
        "does not decode (Brotli, zstd)",
    ),
    _C.no_terminal_response: (_S, "the backend resolved with nothing at all"),
    _C.empty_response: (
        _S,
        "no text, no tool calls and no reasoning, whatever usage the server reports",
    ),
    _C.impossible_usage: (_S, "server usage that cannot be true: negative, or above max_tokens"),
    _C.truncated_stream: (
        _S,
        "the stream ended without a terminal marker and without finish_reason",
    ),
    _C.missing_finish_reason: (
        _S,
        "a finished answer without finish_reason (chat/completions streams; everything in "
        "strict mode)",
    ),
    _C.usage_mismatch: (_S, "server-reported output tokens disagree with the streamed count"),
    _C.max_tokens_not_honoured: (
        _S,
        "ignore_eos asked for N output tokens and got a different count",
    ),
    _C.empty_embedding: (_S, "no vectors, wrong count, zero dimension or non-finite values"),
    _C.no_results: (_S, "a rerank or score answer with no results at all"),
    _C.result_count_mismatch: (
        _S,
        "a rerank or score answer with more or fewer results than the documents sent (or "
        "than rerank's top_n)",
    ),
    _C.invalid_result_index: (
        _S,
        "a rerank or score result naming a document that was not sent, or one already named",
    ),
    _C.non_finite_score: (_S, "a rerank or score result whose score is NaN or infinite"),
    _C.invalid_json_output: (_S, "JSON mode was requested and the text does not parse or match"),
    _C.invalid_tool_call: (_S, "a tool call whose arguments do not parse as JSON"),
    _C.internal_error: (Stage.internal, "a bug in assay, recorded with its traceback"),
    _C.validator_error: (
        Stage.user,
        "a user validator raised; its name and traceback are in the record",
    ),
}

CODE_MEANINGS: dict[DiagnosticCode, str] = {code: meaning for code, (_, meaning) in _CODES.items()}

_NAMESPACED = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+")


@final
class CustomCode(str):
    """A diagnostic code a library user defines for a validator of their own.

    The name is namespaced (`myorg.not_polite`: lower-case words joined by dots), so it can
    never collide with a built-in code, which has no dot. A code is identified by its name (it
    *is* that string, so it sorts, hashes and serializes like the built-in codes); `stage` and
    `meaning` describe it in `assay validators`. Define it once at module level, beside the
    validator that reports it.

    >>> NOT_POLITE = CustomCode("myorg.not_polite", meaning="the answer did not say please")
    >>> NOT_POLITE, NOT_POLITE.stage, NOT_POLITE == "myorg.not_polite"
    (CustomCode('myorg.not_polite'), <Stage.content: 'content'>, True)
    >>> CustomCode("not_polite")
    Traceback (most recent call last):
      ...
    ValueError: custom diagnostic code 'not_polite' is not namespaced: use lower-case words \
joined by dots, such as 'myorg.not_polite'
    """

    stage: Stage
    meaning: str

    def __new__(cls, name: str, stage: Stage = Stage.content, meaning: str = "") -> Self:
        if not _NAMESPACED.fullmatch(name):
            raise ValueError(
                f"custom diagnostic code {name!r} is not namespaced: use lower-case words "
                "joined by dots, such as 'myorg.not_polite'"
            )
        stage = Stage(stage)
        if stage in (Stage.internal, Stage.user):
            raise ValueError(
                f"custom diagnostic code {name!r} cannot have stage {stage.value!r}: that stage "
                "is reserved for assay's own codes"
            )
        code = super().__new__(cls, name)
        object.__setattr__(code, "stage", stage)
        object.__setattr__(code, "meaning", meaning)
        return code

    @property
    def value(self) -> str:
        """The name, as `DiagnosticCode.value` is for a built-in code."""
        return str.__str__(self)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CustomCode is frozen: cannot set {name!r}")

    def __repr__(self) -> str:
        return f"CustomCode({self.value!r})"

    def __str__(self) -> str:
        return self.value

    def __reduce__(self) -> tuple[type[CustomCode], tuple[str, Stage, str]]:
        return CustomCode, (self.value, self.stage, self.meaning)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # Validated from an instance or from its name (a stored record or report); serialized
        # as the plain name, exactly like a built-in code.
        return core_schema.no_info_plain_validator_function(
            _custom_code, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )


def _custom_code(value: object) -> CustomCode:
    if isinstance(value, CustomCode):
        return value
    if isinstance(value, str):
        return CustomCode(value)  # a stored name; the stage is the diagnostic's own field
    raise ValueError(f"a custom diagnostic code is a namespaced string, not {value!r}")


AnyCode: TypeAlias = DiagnosticCode | CustomCode
"""A built-in or a user-defined diagnostic code."""

_BUILTIN_NAMES = frozenset(code.value for code in DiagnosticCode)


def parse_code(name: str, stage: Stage | str | None = None) -> AnyCode:
    """The code called `name`: a built-in one, or else a custom (namespaced) one.

    `stage` gives a custom code read back from a record its stage; a built-in code's stage is
    fixed, so it is not needed there.

    >>> parse_code("empty_response"), parse_code("myorg.not_polite", "protocol").stage
    (<DiagnosticCode.empty_response: 'empty_response'>, <Stage.protocol: 'protocol'>)
    """
    if name in _BUILTIN_NAMES:
        return DiagnosticCode(name)
    if "." not in name:
        raise ValueError(
            f"unknown diagnostic code {name!r}: not a built-in code, and a custom code is "
            "namespaced (such as 'myorg.not_polite')"
        )
    return CustomCode(name, Stage.content if stage is None else Stage(stage))


def stage_of(code: AnyCode) -> Stage:
    """The pipeline stage a code belongs to.

    >>> stage_of(DiagnosticCode.empty_response)
    <Stage.content: 'content'>
    """
    if isinstance(code, CustomCode):
        return code.stage
    return _CODES[code][0]


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
    """What was seen: the status, a capped excerpt, the partial response, a traceback.

    `ids` are the exchange's ids when there is no partial answer to hold them (an error
    status, a refused body); a partial answer carries its own.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    http_status: int | None = None
    excerpt: str | None = None
    partial: GenerationResponse | None = None
    traceback: str | None = None
    ids: ExchangeIds | None = None


class UnusableResponse(BaseModel):
    """A response that must not count as served, with a stable code and a specific message.

    The stage is derived from the code (a built-in code's fixed stage, or the stage a
    `CustomCode` was defined with), so the two can never disagree.

    >>> u = UnusableResponse(code=DiagnosticCode.http_status, message="HTTP 503: overloaded")
    >>> u.stage
    <Stage.transport: 'transport'>
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: AnyCode
    # Filled from `code` when omitted (see `_derive_stage`); the default is never kept.
    stage: Stage = Stage.internal
    message: str
    evidence: Evidence = Evidence()

    @model_validator(mode="before")
    @classmethod
    def _derive_stage(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "code" not in data:
            return data
        code = data["code"]
        if type(code) is str:
            # A stored name: a custom code takes the stage stored beside it.
            code = parse_code(code, data.get("stage"))
        if isinstance(code, DiagnosticCode | CustomCode) and data.get("stage") is None:
            return {**data, "code": code, "stage": stage_of(code)}
        return {**data, "code": code}

    @model_validator(mode="after")
    def _stage_matches_code(self) -> Self:
        if self.stage is not stage_of(self.code):
            raise ValueError(f"stage {self.stage} does not match code {self.code}")
        return self
