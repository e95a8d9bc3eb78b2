"""`/v1/chat/completions`: messages in; content, reasoning and tool calls out."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue
from returns.result import Failure, Result

from assay.core.answer import TextAnswer, ToolCall
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.errors import DataError
from assay.handlers.base import SseFrame, Transfer
from assay.handlers.choice_stream import ChoiceStream
from assay.handlers.stream import frame_data
from assay.handlers.wire import (
    body_answer,
    body_list,
    decode_body,
    generation_body,
    int_field,
    parse_tool_call,
    str_field,
    tool_arguments,
    unusable,
)
from assay.spec.endpoint import Endpoint


def _messages(request: GenerationRequest) -> list[JsonValue]:
    if request.messages is not None:
        return [dict(message) for message in request.messages]
    if isinstance(request.prompt, str):
        return [{"role": "user", "content": request.prompt}]
    raise DataError(f"chat request {request.request_id!r} has neither messages nor a text prompt")


class ChatHandler:
    """Chat completions, streamed or not.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.chat, model="m",
    ...     messages=({"role": "user", "content": "hi"},), max_output_tokens=4)
    >>> ChatHandler().build_body(request)["stream_options"]
    {'include_usage': True}
    """

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.chat

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """Model, messages, `max_tokens`, `ignore_eos` when asked, stream options, then extras."""
        return generation_body(request, "messages", _messages(request))

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A `chat.completion` object: the messages of its choices, finish reason and usage."""
        obj = decode_body(body, transfer, "chat")
        if isinstance(obj, UnusableResponse):
            return Failure(obj)
        choices = body_list(obj, "choices", body, transfer, "chat")
        if isinstance(choices, UnusableResponse):
            return Failure(choices)
        text: list[str] = []
        reasoning: list[str] = []
        tool_calls: list[ToolCall] = []
        finish_reason: str | None = None
        for position, choice in enumerate(choices):
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                return Failure(
                    unusable(
                        DiagnosticCode.unexpected_shape,
                        f"chat body choice {position} has no `message` object",
                        transfer,
                        body,
                    )
                )
            content = message.get("content")
            if isinstance(content, str):
                text.append(content)
            elif content is not None:
                return Failure(
                    unusable(
                        DiagnosticCode.unexpected_shape,
                        f"chat body choice {position} content is not a string",
                        transfer,
                        body,
                    )
                )
            thought = _reasoning(message)
            if thought:
                reasoning.append(thought)
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                for call_position, raw in enumerate(calls):
                    call = parse_tool_call(raw, call_position)
                    if call is not None:
                        tool_calls.append(call)
            finish_reason = str_field(choice, "finish_reason") or finish_reason
        return body_answer(
            request,
            Endpoint.chat,
            obj,
            transfer,
            TextAnswer(
                text="".join(text), reasoning="".join(reasoning), tool_calls=tuple(tool_calls)
            ),
            finish_reason=finish_reason,
        )

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> ChatAccumulator:
        """A fresh accumulator for one streamed chat answer."""
        return ChatAccumulator(request)


def _reasoning(delta: dict[str, object]) -> str | None:
    # vLLM sends `reasoning_content` (older) or `reasoning` (newer), some versions both.
    thought = delta.get("reasoning_content")
    if isinstance(thought, str):
        return thought
    thought = delta.get("reasoning")
    return thought if isinstance(thought, str) else None


class ChatAccumulator(ChoiceStream):
    """Compiles a `chat.completion.chunk` stream one SSE event at a time.

    A chunk whose delta carries content, reasoning or tool calls is a token (`""` too: a split
    multi-byte character), except the role-announcing first chunk and a `""` delta that only
    closes the choice with a `finish_reason` (vLLM's EOS chunk, llama.cpp's last chunk).

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.chat, model="m", prompt="Hi")
    >>> stream = ChatAccumulator(request)
    >>> stream.feed(b'{"choices":[{"index":0,"delta":{"role":"assistant"}}]}', 10)
    >>> stream.feed(b'{"choices":[{"index":0,"delta":{"content":"Hi"}}]}', 20)
    >>> stream.feed(b"[DONE]", 30)
    >>> stream.partial(Transfer(send_ns=0, end_ns=40)).timing.first_token_ns
    20
    """

    __slots__ = ()
    _IN_DELTA = True

    def __init__(self, request: GenerationRequest) -> None:
        super().__init__(request, "chat")

    def _feed_choices(
        self, obj: dict[str, Any], choices: list[Any], frame: SseFrame, received_ns: int
    ) -> None:
        """Any chunk: roles, reasoning, tool calls, several choices, and every malformed delta."""
        bearing = False
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                if delta is not None or not isinstance(choice, dict):
                    self._fail(
                        DiagnosticCode.unexpected_shape,
                        "chat stream choice has no `delta` object",
                        frame_data(frame),
                    )
                    return
                delta = {}
            finish = choice.get("finish_reason")
            if finish is not None and isinstance(finish, str):
                self._finish_reason = finish
            if delta:
                took = self._take_delta(delta, finish, frame, received_ns)
                if took is None:
                    return
                bearing = bearing or took
        usage = obj.get("usage")
        if usage is None:
            if bearing:
                self._token(received_ns, 1)
        else:
            self._count_choices(received_ns, bearing, usage)

    def _take_delta(
        self, delta: dict[str, Any], finish: object, frame: SseFrame, received_ns: int
    ) -> bool | None:
        """Take one choice's non-empty delta: whether it bears a token, or None on a fault.

        The role-announcing first chunk ("content": "" or none) and a `""` delta that closes
        the choice with a finish_reason are not tokens.
        """
        content = delta.get("content")
        if content is not None and not isinstance(content, str):
            self._fail(
                DiagnosticCode.unexpected_shape,
                "chat stream delta content is not a string",
                frame_data(frame),
            )
            return None
        # Inline `_reasoning`: this runs for every chunk of a reasoning stream.
        thought = delta.get("reasoning_content")
        if not isinstance(thought, str):
            thought = delta.get("reasoning")
            if not isinstance(thought, str):
                thought = None
        calls = delta.get("tool_calls")
        has_calls = isinstance(calls, list) and len(calls) > 0
        if content is None and thought is None and not has_calls:
            return False
        if thought:
            self._reasoning.append(thought)
        if content:
            self._text.append(content)
            if self._first_content_ns is None:
                self._first_content_ns = received_ns
        if has_calls and isinstance(calls, list):
            self._take_tool_calls(calls)
        if content or thought or has_calls:
            return True
        return "role" not in delta and not isinstance(finish, str)

    def _take_tool_calls(self, calls: list[object]) -> None:
        for position, raw in enumerate(calls):
            if not isinstance(raw, dict):
                continue
            index = int_field(raw, "index")
            function = raw.get("function")
            name: str | None = None
            arguments: str | None = None
            if isinstance(function, dict):
                name = str_field(function, "name")
                arguments = tool_arguments(function.get("arguments"))
            self._tool_delta(
                position if index is None else index, str_field(raw, "id"), name, arguments
            )
