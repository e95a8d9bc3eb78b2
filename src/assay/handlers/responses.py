"""`/v1/responses`: input in; a typed event stream (or one `response` object) out."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue
from returns.result import Failure, Result

from assay.core.answer import TextAnswer, ToolCall
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.handlers.base import SseFrame, Transfer
from assay.handlers.stream import StreamDraft, frame_data
from assay.handlers.wire import (
    body_answer,
    body_list,
    decode_body,
    error_message,
    generation_body,
    int_field,
    str_field,
    text_prompt,
    tool_arguments,
    unusable,
)
from assay.spec.endpoint import Endpoint


class ResponsesHandler:
    """The Responses API, streamed or not.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.responses, model="m",
    ...     prompt="Hello", max_output_tokens=32)
    >>> ResponsesHandler().build_body(request)
    {'model': 'm', 'input': 'Hello', 'max_output_tokens': 32, 'stream': True}
    """

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.responses

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """Model, input, `max_output_tokens`, `ignore_eos` when asked, `stream`, then extras."""
        prompt: JsonValue = (
            [dict(message) for message in request.messages]
            if request.messages is not None
            else text_prompt(request)
        )
        return generation_body(
            request, "input", prompt, max_tokens_key="max_output_tokens", stream_options=False
        )

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A `response` object: its output items, status and usage."""
        obj = decode_body(body, transfer, "responses")
        if isinstance(obj, UnusableResponse):
            return Failure(obj)
        if obj.get("status") == "failed":
            return Failure(
                unusable(
                    DiagnosticCode.inband_error,
                    f"responses body has status failed: {error_message(obj.get('error'))}",
                    transfer,
                    body,
                )
            )
        output = body_list(obj, "output", body, transfer, "responses")
        if isinstance(output, UnusableResponse):
            return Failure(output)
        text, reasoning, tool_calls = read_output(output)
        return body_answer(
            request,
            Endpoint.responses,
            obj,
            transfer,
            TextAnswer(text=text, reasoning=reasoning, tool_calls=tool_calls),
            finish_reason=finish_reason(obj),
        )

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> ResponsesAccumulator:
        """A fresh accumulator for one streamed response."""
        return ResponsesAccumulator(request)


def finish_reason(response: dict[str, Any]) -> str | None:
    """The chat-style finish reason of a `response` object's status.

    >>> finish_reason({"status": "incomplete",
    ...                "incomplete_details": {"reason": "max_output_tokens"}})
    'length'
    """
    status = response.get("status")
    if status == "completed":
        return "stop"
    if status != "incomplete":
        return None
    details = response.get("incomplete_details")
    reason = str_field(details, "reason") if isinstance(details, dict) else None
    if reason is None or reason == "max_output_tokens":
        return "length"
    return reason


def read_output(output: list[Any]) -> tuple[str, str, tuple[ToolCall, ...]]:
    """Text, reasoning and function calls of a `response.output` list; unknown items are skipped.

    >>> read_output([{"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}])
    ('Hi', '', ())
    """
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for position, item in enumerate(output):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            text.extend(_part_texts(item.get("content"), "output_text"))
        elif kind == "reasoning":
            thoughts = _part_texts(item.get("content"), "reasoning_text")
            reasoning.extend(thoughts or _part_texts(item.get("summary"), "summary_text"))
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    index=position,
                    id=str_field(item, "call_id") or str_field(item, "id"),
                    name=str_field(item, "name"),
                    arguments=tool_arguments(item.get("arguments")),
                )
            )
    return "".join(text), "".join(reasoning), tuple(calls)


def _part_texts(parts: object, kind: str) -> list[str]:
    if not isinstance(parts, list):
        return []
    return [
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type", kind) == kind
        and isinstance(part.get("text"), str)
    ]


_TEXT_DELTA = "response.output_text.delta"
_REASONING_DELTAS = frozenset(
    {"response.reasoning_text.delta", "response.reasoning_summary_text.delta"}
)


class ResponsesAccumulator(StreamDraft):
    """Compiles the Responses event stream one SSE event at a time.

    Each text, reasoning or function-argument delta is a token; `response.completed` and
    `response.incomplete` are terminal and carry the usage; `response.failed` is inband_error
    and an `error` event is sse_error_event. Other event types are ignored.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.responses, model="m",
    ...                            prompt="Hi")
    >>> from assay.handlers.base import SseEvent
    >>> stream = ResponsesAccumulator(request)
    >>> stream.feed(SseEvent(b'{"type":"response.output_text.delta","delta":"Hi"}',
    ...                      event="response.output_text.delta"), 15)
    >>> stream.feed(SseEvent(b'{"type":"response.completed","response":{"status":"completed"}}',
    ...                      event="response.completed"), 30)
    >>> stream.partial(Transfer(send_ns=0, end_ns=40)).finish_reason
    'stop'
    """

    __slots__ = ()

    def __init__(self, request: GenerationRequest) -> None:
        super().__init__(request, "responses")

    def feed(self, frame: SseFrame, received_ns: int) -> None:
        """Take one event of the typed stream."""
        obj = self._load(frame)
        if obj is None:
            return
        if not isinstance(obj, dict):
            self._fail(
                DiagnosticCode.unexpected_shape,
                f"responses stream event is JSON {type(obj).__name__}, not an object",
                frame_data(frame),
            )
            return
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = "message" if isinstance(frame, bytes) else frame.event
        if kind == _TEXT_DELTA and obj.get("error") is None:
            # The common event, read here; every other one in `_feed_event`.
            delta = obj.get("delta")
            if isinstance(delta, str):
                if delta:
                    self._text.append(delta)
                    if self._first_content_ns is None:
                        self._first_content_ns = received_ns
                self._token(received_ns, 1)
            return
        self._feed_event(kind, obj, frame_data(frame), received_ns)

    def _feed_event(self, kind: str, obj: dict[str, Any], data: bytes, received_ns: int) -> None:
        """Any event but a plain text delta: errors, reasoning, tool calls, the lifecycle."""
        if kind == "error":
            error = obj.get("error")
            self._fail(
                DiagnosticCode.sse_error_event,
                f"responses stream sent an error event: {error_message(error or obj)}",
                data,
            )
        elif obj.get("error") is not None:
            self._fail(
                DiagnosticCode.inband_error,
                f"responses stream carried an error object: {error_message(obj['error'])}",
                data,
            )
        elif kind in _REASONING_DELTAS:
            delta = obj.get("delta")
            if isinstance(delta, str):
                self._reasoning.append(delta)
                self._token(received_ns, 1)
        elif kind == "response.function_call_arguments.delta":
            delta = obj.get("delta")
            if isinstance(delta, str):
                self._tool_delta(int_field(obj, "output_index") or 0, None, None, delta)
                self._token(received_ns, 1)
        elif kind == "response.output_item.added":
            item = obj.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                self._tool_delta(
                    int_field(obj, "output_index") or 0,
                    str_field(item, "call_id") or str_field(item, "id"),
                    str_field(item, "name"),
                    tool_arguments(item.get("arguments")),
                )
        elif kind in ("response.completed", "response.incomplete"):
            self._terminal = self._closed = True
            self._take_response(obj.get("response"))
        elif kind == "response.failed":
            response = obj.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            self._fail(
                DiagnosticCode.inband_error,
                f"responses stream reported response.failed: {error_message(error)}",
                data,
            )
        elif kind in ("response.created", "response.in_progress"):
            self._take_response(obj.get("response"))

    def _take_response(self, response: object) -> None:
        if not isinstance(response, dict):
            return
        if self._answer_id is None:
            self._answer_id = response.get("id")
        model = response.get("model")
        if isinstance(model, str):
            self._model = model
        reason = finish_reason(response)
        if reason is not None:
            self._finish_reason = reason
        usage = response.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        output = response.get("output")
        if self._terminal and not self._text and not self._tools and isinstance(output, list):
            # A server that sent the answer only in the final object still served it.
            text, _, calls = read_output(output)
            if text:
                self._text.append(text)
            for call in calls:
                self._tool_delta(call.index, call.id, call.name, call.arguments)
