"""What a server gave back, compiled from a JSON body or an SSE stream."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict

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


class ToolCall(BaseModel):
    """One tool call; `arguments` is the raw JSON text the server produced."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = 0
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class EmbeddingSummary(BaseModel):
    """What an embeddings answer held; the vectors themselves are not kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    dimension: int
    all_finite: bool
    consistent_dimension: bool = True


class ScoreSummary(BaseModel):
    """What a rerank or score answer held; the scores themselves are not kept.

    `lowest_index`/`highest_index` are the document indices the results named (None when there
    are no results), `repeated_index` the first index named twice, `non_finite` how many
    scores were NaN or infinite.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    lowest_index: int | None = None
    highest_index: int | None = None
    repeated_index: int | None = None
    non_finite: int = 0


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

    def trace_id(self) -> str | None:
        """The 32-hex trace id of `traceparent`, if one was sent.

        >>> ExchangeIds(traceparent="00-" + "a" * 32 + "-" + "b" * 16 + "-01").trace_id()
        'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
        """
        parent = self.traceparent
        return None if parent is None else parent[3:35]


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
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    embeddings: EmbeddingSummary | None = None
    scores: ScoreSummary | None = None
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
