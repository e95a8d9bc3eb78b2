"""`/v1/completions`: a text prompt in, `choices[].text` out."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue
from returns.result import Failure, Result

from assay.core.answer import TextAnswer
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.handlers.base import SseFrame, Transfer
from assay.handlers.choice_stream import ChoiceStream
from assay.handlers.stream import frame_data
from assay.handlers.wire import (
    body_answer,
    body_list,
    decode_body,
    generation_body,
    str_field,
    text_prompt,
    unusable,
)
from assay.spec.endpoint import Endpoint


class CompletionsHandler:
    """Text completions, streamed or not.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.completions, model="m",
    ...     prompt="Once upon", max_output_tokens=16, ignore_eos=True, stream=False)
    >>> CompletionsHandler().build_body(request)
    {'model': 'm', 'prompt': 'Once upon', 'max_tokens': 16, 'ignore_eos': True, 'stream': False}
    """

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.completions

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """Model, prompt, `max_tokens`, `ignore_eos` when asked, stream options, then extras."""
        return generation_body(request, "prompt", text_prompt(request))

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A `text_completion` object: the text of its choices, finish reason and usage."""
        obj = decode_body(body, transfer, "completions")
        if isinstance(obj, UnusableResponse):
            return Failure(obj)
        choices = body_list(obj, "choices", body, transfer, "completions")
        if isinstance(choices, UnusableResponse):
            return Failure(choices)
        text: list[str] = []
        finish_reason: str | None = None
        for position, choice in enumerate(choices):
            piece = choice.get("text") if isinstance(choice, dict) else None
            if not isinstance(piece, str):
                return Failure(
                    unusable(
                        DiagnosticCode.unexpected_shape,
                        f"completions body choice {position} has no `text` string",
                        transfer,
                        body,
                    )
                )
            text.append(piece)
            finish_reason = str_field(choice, "finish_reason") or finish_reason
        return body_answer(
            request,
            Endpoint.completions,
            obj,
            transfer,
            TextAnswer(text="".join(text)),
            finish_reason=finish_reason,
        )

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> CompletionsAccumulator:
        """A fresh accumulator for one streamed completion."""
        return CompletionsAccumulator(request)


class CompletionsAccumulator(ChoiceStream):
    """Compiles a `text_completion` chunk stream one SSE event at a time.

    Every chunk whose choice carries a `text` string is a token, `""` included, except a `""`
    that only closes the choice with a `finish_reason` (llama.cpp's and GuideLLM's mock's last
    chunk). Some servers count `choices[].index` up per chunk instead of keeping 0; the index is
    not used.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.completions, model="m",
    ...                            prompt="Once")
    >>> stream = CompletionsAccumulator(request)
    >>> stream.feed(b'{"choices":[{"index":0,"text":" upon"}]}', 10)
    >>> stream.feed(b'{"choices":[{"index":1,"text":" a","finish_reason":"stop"}]}', 25)
    >>> stream.partial(Transfer(send_ns=0, end_ns=40)).timing.chunk_times_ns
    (10, 25)
    """

    __slots__ = ()

    def __init__(self, request: GenerationRequest) -> None:
        super().__init__(request, "completions")

    def _feed_choices(
        self, obj: dict[str, Any], choices: list[Any], frame: SseFrame, received_ns: int
    ) -> None:
        """Any chunk: several choices, a choice without text, and every malformed one."""
        bearing = False
        for choice in choices:
            if not isinstance(choice, dict):
                self._fail(
                    DiagnosticCode.unexpected_shape,
                    "completions stream choice is not an object",
                    frame_data(frame),
                )
                return
            finish = choice.get("finish_reason")
            if isinstance(finish, str):
                self._finish_reason = finish
            piece = choice.get("text")
            if piece is None:
                continue
            if not isinstance(piece, str):
                self._fail(
                    DiagnosticCode.unexpected_shape,
                    "completions stream choice text is not a string",
                    frame_data(frame),
                )
                return
            if piece:
                bearing = True
                self._text.append(piece)
                if self._first_content_ns is None:
                    self._first_content_ns = received_ns
            elif not isinstance(finish, str):
                bearing = True  # a `""` mid-stream: a split multi-byte character
        usage = obj.get("usage")
        if usage is None:
            if bearing:
                self._token(received_ns, 1)
        else:
            self._count_choices(received_ns, bearing, usage)
