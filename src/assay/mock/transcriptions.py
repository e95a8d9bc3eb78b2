"""`/v1/audio/transcriptions` in vLLM's shape: the multipart form read, the transcript written.

The transcript's length follows the audio: `ceil(seconds * 3)` tokens (about the pace of
speech), at least one, at most `max_completion_tokens` when the form sets it. The prompt is
charged as audio input (`assay.mock.media`). A whole answer is `{"text": ..., "usage": {"type":
"duration", "seconds": N}}`; a stream is `transcription.chunk` objects with the text in
`choices[0].delta.content`, the last one with `finish_reason`, a usage-only chunk when
`stream_include_usage` is true, and `data: [DONE]`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import orjson
from aiohttp import BodyPartReader, MultipartReader, web

from assay.mock.asks import BadRequest
from assay.mock.faults import FaultSpec
from assay.mock.media import AUDIO_TOKENS_PER_SECOND, MediaRejected, wav_seconds
from assay.mock.script import Answer, BodyScript, error_object, faulted_body

TRANSCRIPT_TOKENS_PER_SECOND: Final = 3
_MAX_AUDIO_BYTES: Final = 256 * 1024 * 1024
_FIELD_LIMIT: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class TranscriptionAsk:
    """The facts of one transcription request the mock acts on."""

    model: str
    stream: bool
    include_usage: bool
    max_tokens: int | None
    audio_seconds: float
    prompt_tokens: int
    transcript_tokens: int
    form: dict[str, str]


async def read_transcription(request: web.Request, default_model: str) -> TranscriptionAsk:
    """The form of a transcription request; `BadRequest` for anything a server would refuse."""
    if not request.content_type.startswith("multipart/"):
        raise BadRequest(
            f"transcriptions take multipart/form-data, not {request.content_type or 'no type'}"
        )
    try:
        reader = await request.multipart()
        form, audio = await _read_form(reader)
    except (ValueError, AssertionError) as error:
        raise BadRequest(f"unreadable multipart form: {error}") from None
    if audio is None:
        raise BadRequest("transcriptions request without a `file` part")
    try:
        seconds = wav_seconds(audio)
    except MediaRejected as error:
        raise BadRequest(str(error)) from None
    max_tokens = _form_int(form, "max_completion_tokens")
    tokens = max(1, math.ceil(seconds * TRANSCRIPT_TOKENS_PER_SECOND))
    if max_tokens is not None:
        tokens = min(tokens, max_tokens)
    model = form.get("model") or default_model
    return TranscriptionAsk(
        model=model,
        stream=form.get("stream", "false").lower() == "true",
        include_usage=form.get("stream_include_usage", "false").lower() == "true",
        max_tokens=max_tokens,
        audio_seconds=seconds,
        prompt_tokens=math.ceil(seconds * AUDIO_TOKENS_PER_SECOND),
        transcript_tokens=tokens,
        form=form,
    )


async def _read_form(reader: MultipartReader) -> tuple[dict[str, str], bytes | None]:
    form: dict[str, str] = {}
    audio: bytes | None = None
    while True:
        part = await reader.next()
        if part is None:
            return form, audio
        if not isinstance(part, BodyPartReader):
            raise BadRequest("nested multipart parts are not a transcription form")
        name = part.name or ""
        if name == "file":
            audio = bytes(await part.read())
            if len(audio) > _MAX_AUDIO_BYTES:
                raise BadRequest("audio file larger than the mock reads")
        else:
            form[name] = (await part.read()).decode("utf-8", "replace")[:_FIELD_LIMIT]


def _form_int(form: dict[str, str], key: str) -> int | None:
    value = form.get(key)
    if value is None:
        return None
    if not value.isdigit():
        raise BadRequest(f"`{key}` must be an integer >= 0, got {value!r}")
    return int(value)


def transcription_body(answer: Answer, seconds: float, fault: FaultSpec | None) -> BodyScript:
    """The whole answer of a transcription, with `fault` applied."""
    name = fault.name if fault is not None else None
    text = answer.text
    match name:
        case "empty_stream":
            text = ""
        case "inband_error":
            message = "engine failure during transcription (injected by the mock)"
            return BodyScript(
                body=orjson.dumps({"error": error_object(message, "InternalServerError", 500)})
            )
        case "invalid_json":
            return BodyScript(body=b'{"text": "' + text.encode()[:8])
        case _:
            pass
    payload: dict[str, Any] = {
        "text": text,
        "usage": {"type": "duration", "seconds": math.ceil(seconds)},
    }
    if name == "unexpected_shape":
        payload = {"transcript": text}
    return faulted_body(orjson.dumps(payload), fault)


__all__ = [
    "TRANSCRIPT_TOKENS_PER_SECOND",
    "TranscriptionAsk",
    "read_transcription",
    "transcription_body",
]
