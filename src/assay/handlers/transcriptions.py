"""`/v1/audio/transcriptions`: a WAV file uploaded as multipart form data; a transcript out.

The form (OpenAI's and vLLM's): `file`, `model`, `response_format` (`json`), `stream`, and for
vLLM `stream_include_usage` so a stream ends with its usage; the output limit goes as
`max_completion_tokens`. A JSON answer is `{"text": ..., "usage": ...}` (vLLM reports the
audio's duration as usage, OpenAI tokens). A stream is either vLLM's `transcription.chunk`
objects (`choices[].delta.content`, ended by `[DONE]`) or OpenAI's `transcript.text.delta`
events ended by `transcript.text.done`; both are read.
"""

from __future__ import annotations

import uuid

import orjson
from pydantic import JsonValue
from returns.result import Failure, Result

from assay.core.answer import TextAnswer
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.errors import DataError
from assay.handlers.base import SseFrame, Transfer
from assay.handlers.chat import ChatAccumulator
from assay.handlers.stream import StreamDraft, frame_data
from assay.handlers.wire import body_answer, decode_body, str_field, unusable, with_extra
from assay.spec.endpoint import Endpoint

_DELTA = "transcript.text.delta"
_DONE = "transcript.text.done"


class TranscriptionsHandler:
    """Transcriptions, streamed or not; the body is form fields, sent with the audio file.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.transcriptions,
    ...     model="m", audio_file=b"RIFF", max_output_tokens=32)
    >>> TranscriptionsHandler().build_body(request)
    {'model': 'm', 'response_format': 'json', 'max_completion_tokens': 32, 'stream': True, \
'stream_include_usage': True}
    """

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.transcriptions

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """The form fields besides the file: model, format, limit, stream options, extras."""
        body: dict[str, JsonValue] = {"model": request.model, "response_format": "json"}
        if request.max_output_tokens is not None:
            body["max_completion_tokens"] = request.max_output_tokens
        body["stream"] = request.stream
        if request.stream:
            body["stream_include_usage"] = True
        return with_extra(body, request)

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A transcription object: its `text`, and its usage when counted in tokens."""
        obj = decode_body(body, transfer, "transcriptions")
        if isinstance(obj, UnusableResponse):
            return Failure(obj)
        text = str_field(obj, "text")
        if text is None:
            return Failure(
                unusable(
                    DiagnosticCode.unexpected_shape,
                    "transcriptions body has no `text` string",
                    transfer,
                    body,
                )
            )
        return body_answer(request, Endpoint.transcriptions, obj, transfer, TextAnswer(text=text))

    def open_accumulator(
        self, request: GenerationRequest, send_ns: int
    ) -> TranscriptionsAccumulator:
        """A fresh accumulator for one streamed transcript."""
        return TranscriptionsAccumulator(request)


class TranscriptionsAccumulator(ChatAccumulator):
    """Compiles a transcription stream: vLLM's chunks as chat chunks, or OpenAI's events.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.transcriptions,
    ...     model="m", audio_file=b"RIFF")
    >>> stream = TranscriptionsAccumulator(request)
    >>> stream.feed(b'{"type":"transcript.text.delta","delta":"Hi"}', 20)
    >>> stream.feed(b'{"type":"transcript.text.done","text":"Hi"}', 30)
    >>> answer = stream.partial(Transfer(send_ns=0, end_ns=40))
    >>> answer.text, answer.terminal_seen, answer.timing.first_token_ns
    ('Hi', True, 20)
    """

    __slots__ = ()

    def __init__(self, request: GenerationRequest) -> None:
        StreamDraft.__init__(self, request, "transcriptions")

    def feed(self, frame: SseFrame, received_ns: int) -> None:
        """Take one event: an OpenAI transcript event, or a vLLM chunk, `[DONE]`, an error."""
        if isinstance(frame, bytes):
            typed = b'"transcript.text.' in frame
        else:
            typed = frame.event in (_DELTA, _DONE)
        if typed:
            self._feed_event(frame, received_ns)
        else:
            super().feed(frame, received_ns)

    def feed_all(self, frames: list[SseFrame], received_ns: int) -> None:
        """Each event through `feed`: a typed event is never a chat chunk."""
        StreamDraft.feed_all(self, frames, received_ns)

    def _feed_event(self, frame: SseFrame, received_ns: int) -> None:
        obj = self._load(frame)
        if obj is None:
            return
        if type(obj) is not dict:
            self._fail(
                DiagnosticCode.unexpected_shape,
                f"transcriptions stream event is JSON {type(obj).__name__}, not an object",
                frame_data(frame),
            )
            return
        kind = obj.get("type")
        if kind == _DELTA:
            delta = obj.get("delta")
            if not isinstance(delta, str):
                self._fail(
                    DiagnosticCode.unexpected_shape,
                    "transcript.text.delta event has no `delta` string",
                    frame_data(frame),
                )
                return
            if delta:
                self._text.append(delta)
                if self._first_content_ns is None:
                    self._first_content_ns = received_ns
            self._token(received_ns, 1)
        elif kind == _DONE:
            usage = obj.get("usage")
            if isinstance(usage, dict):
                self._usage = usage
            text = obj.get("text")
            if isinstance(text, str) and not self._text:
                # Every word came in the final event: it is the answer, arriving now.
                self._text.append(text)
                if text:
                    self._first_content_ns = received_ns
                    self._token(received_ns, 1)
            self._terminal = self._closed = True


def form_body(request: GenerationRequest, fields: dict[str, JsonValue]) -> tuple[bytes, str]:
    """The `multipart/form-data` body of a transcription and its Content-Type header.

    Fields are sent as text (strings as they are, booleans as `true`/`false`, anything else
    as JSON); the file part is `audio.wav` of type `audio/wav`.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.transcriptions,
    ...     model="m", audio_file=b"RIFF")
    >>> body, content_type = form_body(request, {"model": "m", "stream": False})
    >>> content_type.startswith("multipart/form-data; boundary=")
    True
    >>> b'name="stream"\\r\\n\\r\\nfalse\\r\\n' in body, body.count(b"RIFF")
    (True, 1)
    """
    audio = request.audio_file
    if not audio:
        raise DataError(f"transcriptions request {request.request_id!r} has no audio file")
    boundary = f"assay-{uuid.uuid4().hex}"
    dash = f"--{boundary}\r\n".encode()
    parts: list[bytes] = []
    for name, value in fields.items():
        parts += [
            dash,
            f'Content-Disposition: form-data; name="{_quoted(name)}"\r\n\r\n'.encode(),
            _form_value(value),
            b"\r\n",
        ]
    parts += [
        dash,
        b'Content-Disposition: form-data; name="file"; filename="audio.wav"\r\n',
        b"Content-Type: audio/wav\r\n\r\n",
        audio,
        b"\r\n",
        f"--{boundary}--\r\n".encode(),
    ]
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _form_value(value: JsonValue) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bool):
        return b"true" if value else b"false"
    return orjson.dumps(value)


def _quoted(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "")


__all__ = ["TranscriptionsAccumulator", "TranscriptionsHandler", "form_body"]
