"""What a streamed answer has delivered so far, shared by the streaming accumulators.

`StreamDraft` holds the per-chunk state (text pieces, token arrival times, tool-call drafts, the
first fault) in plain slots and builds the frozen `GenerationResponse` and the `Result` only once,
in `finish`, so the per-chunk path allocates no `Result` and no pydantic model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, cast

import orjson
from returns.result import Failure, Result

from assay.core.answer import AnyAnswer, TextAnswer, ToolCall, answer_type
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import (
    MAX_KEPT_CHUNK_TIMES,
    GenerationResponse,
    ResponseFields,
    ResponseTiming,
    TokenSource,
)
from assay.core.trusted import success, trusted
from assay.handlers.base import SseEvent, SseFrame, Transfer
from assay.handlers.chunk_template import ChunkTemplate
from assay.handlers.wire import answer_ids, error_message, int_field, parse_usage, unusable
from assay.spec.endpoint import Answer

DONE = b"[DONE]"


class _ToolCallDraft:
    """One tool call being assembled from deltas that share its index."""

    __slots__ = ("arguments", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []

    def freeze(self) -> ToolCall:
        return ToolCall(
            index=self.index, id=self.id, name=self.name, arguments="".join(self.arguments)
        )


class StreamDraft(ABC):
    """The state every streaming accumulator keeps; subclasses add `feed` for their wire format.

    Counting rule (documented on `GenerationResponse.streamed_tokens`): a chunk that carries
    content (text, reasoning or a tool-call delta, `""` included mid-stream: a split multi-byte
    character) counts one token unless it carries a running usage, in which case it counts the
    increase of `completion_tokens`. A `""` delta that only closes the choice with a
    `finish_reason` is a marker, not a token. After `[DONE]` or the terminal event nothing is
    part of the answer: later events are counted in `events_after_terminal` and otherwise
    ignored.
    """

    __slots__ = (
        "_answer_id",
        "_chunk_template",
        "_chunk_times",
        "_chunk_tokens",
        "_closed",
        "_continuous",
        "_events",
        "_fault",
        "_finish_reason",
        "_first_content_ns",
        "_first_token_ns",
        "_merged",
        "_model",
        "_reasoning",
        "_reasoning_blocks",
        "_request",
        "_running",
        "_terminal",
        "_text",
        "_text_blocks",
        "_tools",
        "_trailing",
        "_usage",
        "_what",
    )

    def __init__(self, request: GenerationRequest, what: str) -> None:
        self._request = request
        self._what = what
        self._events = 0
        self._terminal = False
        # Set with `_terminal` or `_fault`: one check per chunk tells that the answer is over.
        self._closed = False
        self._trailing = 0
        self._fault: tuple[DiagnosticCode, str, str] | None = None
        self._model: str | None = None
        self._answer_id: object = None
        self._finish_reason: str | None = None
        self._usage: object = None
        self._text: list[str] = []
        # How many leading entries of `_text` and `_reasoning` are pieces already joined
        # (`fold_chunk_times`).
        self._text_blocks = 0
        self._reasoning: list[str] = []
        self._reasoning_blocks = 0
        self._tools: dict[int, _ToolCallDraft] = {}
        self._chunk_times: list[int] = []
        self._chunk_tokens: list[int] = []
        # Entries merged away to keep the chunk times bounded (see `fold_chunk_times`).
        self._merged = 0
        self._first_token_ns: int | None = None
        self._first_content_ns: int | None = None
        self._running: int | None = None
        self._continuous = False
        # The stream's common chunk (`ChoiceStream`): None until learned, False once it could
        # not be (it is tried once per stream).
        self._chunk_template: ChunkTemplate | bool | None = None

    @abstractmethod
    def feed(self, frame: SseFrame, received_ns: int) -> None:
        """Take one event (see `StreamAccumulator.feed`)."""

    def feed_all(self, frames: list[SseFrame], received_ns: int) -> None:
        """Take the events of one read, in order, as `feed` takes each."""
        feed = self.feed
        for frame in frames:
            feed(frame, received_ns)

    @property
    def failed(self) -> bool:
        """A fault was seen; everything after it is ignored."""
        return self._fault is not None

    @property
    def ended(self) -> bool:
        """The terminal marker (`[DONE]`, `response.completed`) came: the answer is complete."""
        return self._terminal

    @property
    def first_token_ns(self) -> int | None:
        """When the first token-bearing chunk arrived."""
        return self._first_token_ns

    def _load(self, frame: SseFrame) -> Any:
        """The decoded JSON of a data event, or None when the event is done with.

        Handles what every endpoint shares: a fault already seen, `[DONE]`, an `event: error`
        frame and data that is not JSON. The result is `Any` because it is orjson's output; the
        caller narrows it with `isinstance`.
        """
        self._events += 1
        data = frame_data(frame)
        if self._closed:
            if self._terminal and data != DONE:  # a `[DONE]` after the event is benign
                self._trailing += 1
            return None
        if isinstance(frame, SseEvent) and frame.event == "error":
            self._fail(
                DiagnosticCode.sse_error_event,
                f"{self._what} stream sent an `event: error` frame: {_frame_message(data)}",
                data,
            )
            return None
        if data == DONE:
            self._terminal = self._closed = True
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            self._fail(
                DiagnosticCode.invalid_json,
                f"{self._what} stream data is not valid JSON: {exc}",
                data,
            )
            return None

    def _fail(self, code: DiagnosticCode, message: str, data: bytes) -> None:
        if self._fault is None:
            self._closed = True
            self._fault = (code, _printable(message), data.decode("utf-8", "replace"))

    def _open_chunk(self, frame: SseFrame) -> Any:
        """A chat/completions chunk with a non-empty `choices` list, or None when done with.

        Read by `ChoiceStream.feed` (it inlines `_load`, so no extra call per chunk): a
        named event these servers do not define is skipped; a chunk that is not an object or has
        no `choices` list is unexpected_shape, except a usage-only chunk that omits `choices`;
        `{"error": ...}` is inband_error. `Any` as for `_load`; the caller reads `choices` and
        `usage` from it.
        """
        if not isinstance(frame, bytes):
            return self._open_named_chunk(frame)
        # `_load` inlined for `message` events: this runs once per chunk of every stream.
        self._events += 1
        if self._closed:
            if self._terminal and frame != DONE:  # a `[DONE]` after the event is benign
                self._trailing += 1
            return None
        if frame == DONE:
            self._terminal = self._closed = True
            return None
        try:
            obj = orjson.loads(frame)
        except orjson.JSONDecodeError as exc:
            self._fail(
                DiagnosticCode.invalid_json,
                f"{self._what} stream data is not valid JSON: {exc}",
                frame,
            )
            return None
        if type(obj) is not dict:
            self._fail(
                DiagnosticCode.unexpected_shape,
                f"{self._what} stream chunk is JSON {type(obj).__name__}, not an object",
                frame,
            )
            return None
        get = obj.get
        error = get("error")
        if error is not None:
            self._fail(
                DiagnosticCode.inband_error,
                f"{self._what} stream carried an error object: {error_message(error)}",
                frame,
            )
            return None
        if self._model is None:
            model = get("model")
            if type(model) is str:
                self._model = model
        if self._answer_id is None:
            self._answer_id = get("id")
        usage = get("usage")
        if usage is not None and type(usage) is dict:
            self._usage = usage
        choices = get("choices")
        if type(choices) is list:
            return obj if choices else None
        if choices is None and type(usage) is dict:
            return None
        self._fail(
            DiagnosticCode.unexpected_shape,
            f"{self._what} stream chunk has no `choices` list",
            frame,
        )
        return None

    def _open_named_chunk(self, frame: SseEvent) -> Any:
        """`_open_chunk` of a named event: a `message` event is a plain one after all, an
        `error` event is recorded, any other name is not these servers' and is skipped."""
        if frame.event == "message":
            return self._open_chunk(frame.data)
        if frame.event == "error":
            self._load(frame)  # records the error frame; an error event yields no chunk
        else:
            self._events += 1  # nothing to read
            if self._terminal:
                self._trailing += 1
        return None

    def _count_choices(self, received_ns: int, bearing: bool, usage: object) -> None:
        """Record a chunk's tokens: one, or the increase of a running usage when it has one."""
        running = int_field(usage, "completion_tokens") if isinstance(usage, dict) else None
        if running is None:
            if bearing:
                self._token(received_ns, 1)
            return
        previous = self._running or 0
        self._running = running
        if bearing:
            self._continuous = True
            self._token(received_ns, max(running - previous, 0))

    def _token(self, received_ns: int, tokens: int) -> None:
        if self._first_token_ns is None:
            self._first_token_ns = received_ns
        self._chunk_times.append(received_ns)
        self._chunk_tokens.append(tokens)
        if len(self._chunk_times) > MAX_KEPT_CHUNK_TIMES:
            self.fold_chunk_times()

    def fold_chunk_times(self) -> None:
        """Merge the kept chunk times pairwise (the later time, the tokens of both), halving
        them: an endless stream keeps at most `MAX_KEPT_CHUNK_TIMES` entries, not one per
        chunk. The count merged away is kept for the record (`merged_chunk_times`)."""
        times, tokens = self._chunk_times, self._chunk_tokens
        pairs = len(times) // 2
        kept_times = times[1 : 2 * pairs : 2]
        kept_tokens = [tokens[2 * i] + tokens[2 * i + 1] for i in range(pairs)]
        if len(times) % 2:
            kept_times.append(times[-1])
            kept_tokens.append(tokens[-1])
        self._merged += len(times) - len(kept_times)
        self._chunk_times, self._chunk_tokens = kept_times, kept_tokens
        # The pieces since the last fold joined into one string: a piece held alone costs
        # about 60 bytes of object for a few characters of text (an endless stream of 64 MiB
        # kept 25.7 MB per stream in flight), a joined block about one byte a character.
        self._text_blocks = _join_tail(self._text, self._text_blocks)
        self._reasoning_blocks = _join_tail(self._reasoning, self._reasoning_blocks)

    def _tool_delta(
        self, index: int, call_id: str | None, name: str | None, arguments: str | None
    ) -> None:
        draft = self._tools.get(index)
        if draft is None:
            draft = self._tools[index] = _ToolCallDraft(index)
        if call_id and draft.id is None:
            draft.id = call_id
        # Names come whole in one delta; a server that repeats the name must not double it.
        if name and name != draft.name:
            draft.name = name if draft.name is None else draft.name + name
        if arguments:
            draft.arguments.append(arguments)

    def partial(self, transfer: Transfer) -> GenerationResponse:
        """Everything received so far as a response (the evidence of a fault)."""
        if self._continuous and self._running is not None:
            streamed, source = self._running, TokenSource.continuous_usage
        else:
            streamed, source = len(self._chunk_tokens) + self._merged, TokenSource.stream
        chunk_times = self._chunk_times
        request = self._request
        # Every value below is one assay typed itself, so the models are built unvalidated;
        # the keys follow the models' field order.
        timing = trusted(
            ResponseTiming,
            {
                "send_ns": transfer.send_ns,
                "first_byte_ns": transfer.first_byte_ns,
                "first_token_ns": self._first_token_ns,
                "first_content_ns": self._first_content_ns,
                "last_token_ns": chunk_times[-1] if chunk_times else None,
                "end_ns": transfer.end_ns,
                "chunk_times_ns": tuple(chunk_times),
                "chunk_tokens": tuple(self._chunk_tokens),
                "merged_chunk_times": self._merged,
            },
        )
        # Typed as every field (a missing one is a type error), in the model's order.
        fields: ResponseFields = {
            "request_id": request.request_id,
            "endpoint": request.endpoint,
            "streamed": True,
            "echo": request.echo(),
            "model": self._model,
            "answer": self._answer(),
            "finish_reason": self._finish_reason,
            "usage": parse_usage(self._usage),
            "content_chunks": len(chunk_times) + self._merged,
            "streamed_tokens": streamed,
            "streamed_token_source": source,
            "terminal_seen": self._terminal,
            "events_after_terminal": self._trailing,
            "http_status": transfer.http_status or None,
            "ids": answer_ids(transfer.ids, self._answer_id),
            "timing": timing,
            "sent": None,
        }
        return trusted(GenerationResponse, cast("dict[str, object]", fields))

    def _answer(self) -> AnyAnswer:
        """What the stream delivered, as an answer of its endpoint's kind: text, reasoning and
        tool calls for a text answer; a stream of another kind holds nothing usable."""
        kind = self._request.endpoint.traits.answer
        if kind is not Answer.text:
            return answer_type(kind)()
        tools = self._tools
        text: TextAnswer = trusted(
            TextAnswer,
            {
                "kind": Answer.text,
                "text": "".join(self._text),
                "reasoning": "".join(self._reasoning),
                "tool_calls": tuple(tools[i].freeze() for i in sorted(tools)) if tools else (),
            },
        )
        return text

    def finish(self, transfer: Transfer) -> Result[GenerationResponse, UnusableResponse]:
        """The compiled answer, the first fault seen, or no_terminal_response for no events."""
        if self._fault is not None:
            code, message, data = self._fault
            return Failure(unusable(code, message, transfer, data, self.partial(transfer)))
        if self._events == 0:
            return Failure(
                unusable(
                    DiagnosticCode.no_terminal_response,
                    f"{self._what} stream ended without a single SSE event",
                    transfer,
                    partial=self.partial(transfer),
                )
            )
        return success(self.partial(transfer))


class NotStreamed(StreamDraft):
    """The accumulator of an endpoint that never streams (embeddings, rerank, score): an SSE
    answer is unexpected_shape, none at all no_terminal_response (it exists so every endpoint
    meets one protocol)."""

    __slots__ = ()

    def feed(self, frame: SseFrame, received_ns: int) -> None:
        """Any event is a fault: the server streamed an answer that has no streamed form."""
        self._events += 1
        self._fail(
            DiagnosticCode.unexpected_shape,
            f"{self._what} answer came as an SSE stream, which the endpoint does not define",
            frame_data(frame),
        )


def _join_tail(parts: list[str], blocks: int) -> int:
    """Join the entries of `parts` after its first `blocks` into one, in place; the count of
    joined blocks now, so `"".join(parts)` is unchanged and each piece is joined once.

    >>> parts = ["ab", "c", "d"]
    >>> _join_tail(parts, 1), parts
    (2, ['ab', 'cd'])
    """
    if len(parts) - blocks > 1:
        parts[blocks:] = ["".join(parts[blocks:])]
    return len(parts)


def frame_data(frame: SseFrame) -> bytes:
    """The data bytes of a frame, a `message` event's or a named event's."""
    return frame if isinstance(frame, bytes) else frame.data


def _printable(text: str) -> str:
    """`text` with any lone surrogate (from undecodable server bytes) as U+FFFD, so a message
    that quotes the server can be stored as valid text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _frame_message(data: bytes) -> str:
    """The server's message inside an error frame's data, or the data itself."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return error_message(data.decode("utf-8", "replace")) if data else "(no data)"
    if isinstance(obj, dict) and obj.get("error") is not None:
        return error_message(obj["error"])
    return error_message(obj)
