"""What a server gave back, compiled from a JSON body or an SSE stream."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, TypedDict, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from assay.core.answer import AnswerBody, AnyAnswer, TextAnswer, ToolCall, answer_type
from assay.core.request import RequestEcho
from assay.spec.endpoint import Endpoint


class Usage(BaseModel):
    """Token counts as the server reported them; `None` where the server said nothing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    total_tokens: int | None = None


# How much of an id the server chose is kept: enough for any real id, never a megabyte header.
ID_LIMIT = 256


class ExchangeIds(BaseModel):
    """The ids that join one request to the server's own logs and traces.

    `sent_header` and `sent` are the request-id header assay sent and its value; `echoed` is
    that header in the answer (vLLM's middleware echoes it; other servers invent their own or
    send none); `answer` is the answer's own id (`chatcmpl-...`, `cmpl-...`, `resp_...`, an
    embeddings id); `traceparent` is the W3C trace context sent with `--trace-context`. What
    the server chose is capped at `ID_LIMIT` characters and redacted like any server text.

    >>> ExchangeIds(sent_header="X-Request-Id", sent="f84a", echoed="f84a").echoed
    'f84a'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    sent_header: str | None = None
    sent: str | None = None
    echoed: str | None = None
    answer: str | None = None
    traceparent: str | None = None


class SentBody(BaseModel):
    """What a request carrying images or audio put on the wire: its body's size in bytes, and
    how many images and seconds of audio it held (the rest of a request is its text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    body_bytes: int
    images: int = 0
    audio_seconds: float = 0.0


class TokenSource(StrEnum):
    """Where an output token count came from."""

    usage = "usage"  # the server's final usage report
    continuous_usage = "continuous_usage"  # running usage on every chunk
    stream = "stream"  # one token per content-bearing chunk, counted by assay
    none = "none"


MAX_KEPT_CHUNK_TIMES: Final = 16_384
"""The most chunk times one response keeps (see `ResponseTiming`)."""


class ResponseTiming(BaseModel):
    """Monotonic nanosecond timestamps of one response (one clock for the whole run).

    `chunk_times_ns[i]` is when the i-th token-bearing chunk arrived and `chunk_tokens[i]` how many
    tokens it carried, so inter-token latency is measured per gap even when a server batches
    several tokens into one chunk. For a non-streamed answer the first token is the end.

    A record keeps at most `MAX_KEPT_CHUNK_TIMES` chunk times, so an endless or giant answer
    costs bounded memory and a bounded records.jsonl line. Past that, neighbouring entries are
    merged pairwise (the later time, the tokens of both), each merge halving the resolution of
    what was kept; `merged_chunk_times` says how many entries were merged away (0: every chunk
    has its own entry). Inter-token latency over a merged entry is the average of its gaps.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    send_ns: int
    first_byte_ns: int | None = None
    first_token_ns: int | None = None
    first_content_ns: int | None = None
    last_token_ns: int | None = None
    end_ns: int
    chunk_times_ns: tuple[int, ...] = ()
    chunk_tokens: tuple[int, ...] = ()
    merged_chunk_times: int = 0


class GenerationResponse(BaseModel):
    """A compiled answer from any endpoint, before validation decides whether it is usable.

    `answer` is what the answer consists of, one type per kind (`TextAnswer`, `Vectors`,
    `Scores`), always the kind of the endpoint. Stored and loaded flat, as the records have
    always been: `text`, `reasoning`, `tool_calls`, `embeddings` and `scores` beside the other
    fields, and a kind added later its own keys on its own answers only (see `stored_answer`).
    `streamed_tokens` is assay's own count (one per content-bearing chunk, including `""` deltas
    of split multi-byte characters, or the running usage when the server streams it); `usage` is
    what the server reported, if anything. `output_tokens` prefers the server's figure.
    `events_after_terminal` counts SSE events that came after `[DONE]` or the terminal event:
    they are not part of the answer and were ignored.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str
    endpoint: Endpoint
    streamed: bool
    echo: RequestEcho = RequestEcho()
    model: str | None = None
    answer: AnswerBody = TextAnswer()
    finish_reason: str | None = None
    usage: Usage | None = None
    content_chunks: int = 0
    streamed_tokens: int = 0
    streamed_token_source: TokenSource = TokenSource.none
    terminal_seen: bool = False
    events_after_terminal: int = 0
    # The exchange's HTTP status, so a validator's verdict carries it as evidence (`None` in
    # records written before it was kept, and for a response no status was seen for).
    http_status: int | None = None
    # The ids sent and received with this answer (None where none were kept: a response built
    # outside the backend, a record written before ids were kept).
    ids: ExchangeIds | None = None
    timing: ResponseTiming
    # Set for a request that carried images or audio (None for text alone).
    sent: SentBody | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_stored(cls, data: Any) -> Any:
        """The flat stored shape of records.jsonl with the answer folded into `answer`, of the
        endpoint's kind. A key of another kind that holds something stays behind, so validation
        refuses it as an unknown field (`extra="forbid"`)."""
        if not isinstance(data, dict) or "answer" in data:
            return data
        try:
            kind = Endpoint(data["endpoint"]).traits.answer
        except (KeyError, ValueError):
            return data  # the endpoint's own validation says what is wrong
        own = answer_type(kind).STORED_AS
        folded = {k: v for k, v in data.items() if k not in _STORED_KEYS or (k not in own and v)}
        folded["answer"] = {"kind": kind} | {name: data[k] for k, name in own.items() if k in data}
        return folded

    @model_validator(mode="after")
    def _answer_of_its_endpoint(self) -> GenerationResponse:
        expected = self.endpoint.traits.answer
        if self.answer.kind is not expected:
            raise ValueError(f"a {self.endpoint.value} response holds {expected.value}")
        return self

    @model_serializer(mode="wrap")
    def _stored(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if "answer" not in dumped:
            return dumped
        nothing = _NOTHING_STORED | {"tool_calls": [] if info.mode_is_json() else ()}
        flat: dict[str, Any] = {}
        for name, value in dumped.items():
            if name == "answer":
                own = self.answer.STORED_AS
                flat |= nothing | {key: value[field] for key, field in own.items()}
            else:
                flat[name] = value
        return flat

    @property
    def text(self) -> str:
        """The answer's text; "" for an answer of another kind.

        >>> GenerationResponse(request_id="r", endpoint=Endpoint.chat, streamed=False,
        ...     answer=TextAnswer(text="Hi"), timing=ResponseTiming(send_ns=0, end_ns=1)).text
        'Hi'
        """
        answer = self.answer
        return answer.text if type(answer) is TextAnswer else ""

    @property
    def reasoning(self) -> str:
        """The answer's reasoning; "" for an answer of another kind."""
        answer = self.answer
        return answer.reasoning if type(answer) is TextAnswer else ""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The answer's tool calls; () for an answer of another kind."""
        answer = self.answer
        return answer.tool_calls if type(answer) is TextAnswer else ()

    @property
    def output_tokens(self) -> int:
        """Server-reported completion tokens when present, else assay's streamed count."""
        if self.usage is not None and self.usage.completion_tokens is not None:
            return self.usage.completion_tokens
        return self.streamed_tokens

    @property
    def output_token_source(self) -> TokenSource:
        """Which source `output_tokens` used."""
        if self.usage is not None and self.usage.completion_tokens is not None:
            return TokenSource.usage
        return self.streamed_token_source

    @property
    def prompt_tokens(self) -> int | None:
        """Server-reported prompt tokens, if any."""
        return None if self.usage is None else self.usage.prompt_tokens


class ResponseFields(TypedDict):
    """Every field of a `GenerationResponse`, in order: what the hot path builds one from
    without validation (`trusted`), so a new field is a type error there (a test holds the
    two equal)."""

    request_id: str
    endpoint: Endpoint
    streamed: bool
    echo: RequestEcho
    model: str | None
    answer: AnyAnswer
    finish_reason: str | None
    usage: Usage | None
    content_chunks: int
    streamed_tokens: int
    streamed_token_source: TokenSource
    terminal_seen: bool
    events_after_terminal: int
    http_status: int | None
    ids: ExchangeIds | None
    timing: ResponseTiming
    sent: SentBody | None


# The flat keys records.jsonl stores the answers under, every kind's, and the field of its answer
# type each one holds (see `STORED_AS`).
_STORED_KEYS: Final[dict[str, FieldInfo]] = {
    key: kind.model_fields[name]
    for kind in get_args(AnyAnswer)
    for key, name in kind.STORED_AS.items()
}

# Every records.jsonl line has always held these keys, whatever its answer (empty or `null` for
# an answer of another kind), and still does, so the lines stay as they were. The keys of a kind
# of answer added since are written only on its own answers: adding a kind changes no other line.
_ON_EVERY_LINE: Final = ("text", "reasoning", "tool_calls", "embeddings", "scores")

_NOTHING_STORED: Final[dict[str, Any]] = {
    key: _STORED_KEYS[key].get_default(call_default_factory=True) for key in _ON_EVERY_LINE
}


def stored_fields() -> dict[str, FieldInfo]:
    """The fields of a response as records.jsonl stores it: the answer's flat keys in its place.

    >>> [name for name in stored_fields()][4:10]
    ['model', 'text', 'reasoning', 'tool_calls', 'embeddings', 'scores']
    """
    fields: dict[str, FieldInfo] = {}
    for name, field in GenerationResponse.model_fields.items():
        fields |= _STORED_KEYS if name == "answer" else {name: field}
    return fields


def stored_answer(answer: AnyAnswer) -> dict[str, Any]:
    """The flat keys records.jsonl stores for an answer, its models as they are: those every
    line holds, and its own.

    >>> from assay.core.answer import Vectors
    >>> list(stored_answer(Vectors()))
    ['text', 'reasoning', 'tool_calls', 'embeddings', 'scores']
    """
    return _NOTHING_STORED | {key: getattr(answer, name) for key, name in answer.STORED_AS.items()}
