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
    timing: ResponseTiming

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
