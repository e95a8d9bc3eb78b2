"""The contract every endpoint handler meets: build a body, compile an answer into a `Result`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeAlias

from pydantic import JsonValue
from returns.result import Result

from assay.core.diagnostics import UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import ExchangeIds, GenerationResponse
from assay.spec.endpoint import Endpoint


@dataclass(slots=True)
class SseEvent:
    """A dispatched server-sent event that names its type (`event: ...`), with its data bytes.

    A plain `message` event reaches an accumulator as its data bytes alone (see `SseFrame`).
    """

    data: bytes
    event: str = "message"


# One event as the parser hands it on: a `message` event (nearly every event of an OpenAI-style
# stream) is its data bytes, with no object built for it; a named event is an `SseEvent`.
SseFrame: TypeAlias = bytes | SseEvent


@dataclass(frozen=True, slots=True)
class Transfer:
    """Transport facts the backend measured, handed to the handler when the body is complete.

    `ids` are the request-id and trace headers sent and the id the server echoed; the handler
    adds the answer's own id (see `assay.handlers.wire.answer_ids`).
    """

    send_ns: int
    end_ns: int
    first_byte_ns: int | None = None
    http_status: int = 200
    ids: ExchangeIds | None = None


class StreamAccumulator(Protocol):
    """Takes one SSE event at a time (cheap, no `Result` per chunk) and compiles at the end."""

    def feed(self, frame: SseFrame, received_ns: int) -> None:
        """Take one event: a `message` event's data bytes, or a named `SseEvent`. Never raises
        for anything a server can send."""
        ...

    def feed_all(self, frames: list[SseFrame], received_ns: int) -> None:
        """Take the events of one read, in order, as `feed` takes each (in fewer steps)."""
        ...

    @property
    def failed(self) -> bool:
        """A fatal fault (in-band error, invalid JSON, ...) was seen; reading on is pointless."""
        ...

    @property
    def ended(self) -> bool:
        """The terminal marker (`[DONE]`, a terminal event) came: nothing later is the answer."""
        ...

    @property
    def first_token_ns(self) -> int | None:
        """When the first token-bearing chunk arrived, if one has."""
        ...

    def finish(self, transfer: Transfer) -> Result[GenerationResponse, UnusableResponse]:
        """Compile everything fed so far into the response or the first fault seen."""
        ...

    def partial(self, transfer: Transfer) -> GenerationResponse:
        """What has been received so far, for the evidence of a transport fault."""
        ...


class EndpointHandler(Protocol):
    """One endpoint's wire format, in both directions."""

    @property
    def endpoint(self) -> Endpoint: ...

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """The JSON body to POST for `request`."""
        ...

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """Compile a complete non-streamed (JSON) body. Never raises."""
        ...

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> StreamAccumulator:
        """A fresh accumulator for one streamed answer to `request`."""
        ...
