"""The mock's answers to images and audio in chat, and to `/v1/audio/transcriptions`: what it
charges in prompt tokens (the documented rule), what it refuses, and its transcription wire
format and faults, read with a raw aiohttp client."""

from __future__ import annotations

import base64
import io
import math
import random
from typing import Any

import aiohttp
import orjson

from assay.data.media import ImageSize, data_url, synthetic_image, synthetic_wav
from assay.mock import FAULT_HEADER
from assay.mock.server import MAX_REQUEST_BYTES

CHAT = "/v1/chat/completions"
TRANSCRIPTIONS = "/v1/audio/transcriptions"
TEXT = "Describe the picture."
JSON_HEADERS = {"Content-Type": "application/json"}


async def post_json(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        # A stream, not bytes: aiohttp warns about sending a large body from memory at once.
        session.post(
            url + CHAT, data=io.BytesIO(orjson.dumps(body)), headers=JSON_HEADERS
        ) as response,
    ):
        return response.status, orjson.loads(await response.read())


def chat_body(*parts: dict[str, Any]) -> dict[str, Any]:
    content: Any = [{"type": "text", "text": TEXT}, *parts] if parts else TEXT
    return {
        "model": "assay-mock",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 4,
        "stream": False,
    }


def png_part(width: int, height: int) -> dict[str, Any]:
    image = synthetic_image(ImageSize(width=width, height=height), "png", random.Random(7))
    return {"type": "image_url", "image_url": {"url": data_url(image, "image/png")}}


async def prompt_tokens(url: str, *parts: dict[str, Any]) -> int:
    status, body = await post_json(url, chat_body(*parts))
    assert status == 200, body
    tokens: int = body["usage"]["prompt_tokens"]
    return tokens


async def test_prompt_tokens_grow_with_image_size_by_28_pixel_patches(mock_url: str) -> None:
    text_only = await prompt_tokens(mock_url)
    small = await prompt_tokens(mock_url, png_part(56, 28))
    large = await prompt_tokens(mock_url, png_part(560, 300))
    assert small - text_only == 2 * 1
    assert large - text_only == 20 * math.ceil(300 / 28)
    two = await prompt_tokens(mock_url, png_part(56, 28), png_part(560, 300))
    assert two - text_only == 2 + 20 * 11


async def test_a_remote_image_costs_a_flat_256_tokens(mock_url: str) -> None:
    remote = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    assert await prompt_tokens(mock_url, remote) - await prompt_tokens(mock_url) == 256


async def test_audio_costs_25_tokens_a_second(mock_url: str) -> None:
    wav = synthetic_wav(1.5, random.Random(3))
    part = {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(wav).decode(), "format": "wav"},
    }
    assert await prompt_tokens(mock_url, part) - await prompt_tokens(mock_url) == 38


async def test_an_image_that_does_not_decode_is_a_400(mock_url: str) -> None:
    part = {"type": "image_url", "image_url": {"url": data_url(b"not a png", "image/png")}}
    status, body = await post_json(mock_url, chat_body(part))
    assert status == 400
    assert "not a decodable image" in body["error"]["message"]


async def test_faults_apply_to_image_requests_as_to_text(mock_url: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            mock_url + CHAT,
            json=chat_body(png_part(28, 28)),
            headers={FAULT_HEADER: "http_503"},
        ) as response,
    ):
        assert response.status == 503


def transcription_form(seconds: float, **fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, value in {"model": "assay-mock", "response_format": "json", **fields}.items():
        form.add_field(name, value)
    wav = synthetic_wav(seconds, random.Random(5))
    form.add_field("file", wav, filename="a.wav", content_type="audio/wav")
    return form


async def post_transcription(
    url: str, form: aiohttp.FormData, fault: str | None = None
) -> tuple[int, str, bytes]:
    headers = {FAULT_HEADER: fault} if fault else {}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + TRANSCRIPTIONS, data=form, headers=headers) as response,
    ):
        return response.status, response.content_type, await response.read()


async def test_a_transcription_is_three_tokens_a_second_of_audio(mock_url: str) -> None:
    status, content_type, raw = await post_transcription(mock_url, transcription_form(4.0))
    assert (status, content_type) == (200, "application/json")
    body = orjson.loads(raw)
    assert body["usage"] == {"type": "duration", "seconds": 4}
    assert isinstance(body["text"], str)
    assert body["text"]
    limited = orjson.loads(
        (await post_transcription(mock_url, transcription_form(4.0, max_completion_tokens="5")))[2]
    )
    assert len(limited["text"]) < len(body["text"])


async def test_a_streamed_transcription_is_transcription_chunks_then_done(mock_url: str) -> None:
    form = transcription_form(2.0, stream="true", stream_include_usage="true")
    status, content_type, raw = await post_transcription(mock_url, form)
    assert (status, content_type) == (200, "text/event-stream")
    frames = [block.removeprefix("data: ") for block in raw.decode().split("\n\n") if block]
    assert frames[-1] == "[DONE]"
    chunks = [orjson.loads(frame) for frame in frames[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"transcription.chunk"}
    texts = [c["choices"][0]["delta"]["content"] for c in chunks if c["choices"]]
    assert len(texts) == 6  # ceil(2.0 s * 3)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 50, "total_tokens": 56, "completion_tokens": 6}


async def test_transcription_faults_reach_the_wire(mock_url: str) -> None:
    status, _, raw = await post_transcription(mock_url, transcription_form(1.0), "empty_stream")
    assert status == 200
    assert orjson.loads(raw)["text"] == ""
    status, _, _ = await post_transcription(mock_url, transcription_form(1.0), "http_500")
    assert status == 500
    form = transcription_form(1.0, stream="true")
    status, _, raw = await post_transcription(mock_url, form, "missing_done")
    assert status == 200
    assert b"[DONE]" not in raw


async def test_a_transcription_that_is_not_multipart_or_not_wav_is_a_400(mock_url: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(mock_url + TRANSCRIPTIONS, json={"model": "m"}) as response,
    ):
        assert response.status == 400
        assert "multipart/form-data" in (await response.json())["error"]["message"]
    form = aiohttp.FormData()
    form.add_field("model", "assay-mock")
    form.add_field("file", b"not a wav", filename="a.wav", content_type="audio/wav")
    status, _, raw = await post_transcription(mock_url, form)
    assert status == 400
    assert b"not a WAV file" in raw


async def test_four_1024x768_pngs_fit_in_one_request_issue_38(mock_url: str) -> None:
    """The largest images `--images 4 --image-size 1024x768` makes (over 2 MiB as base64) are
    read, not refused with HTTP 413 as aiohttp's 1 MiB default did."""
    parts = [png_part(1024, 768) for _ in range(4)]
    assert len(orjson.dumps(chat_body(*parts))) > 2 * 2**20
    assert await prompt_tokens(mock_url, *parts) > await prompt_tokens(mock_url)


async def test_a_body_over_the_limit_is_a_413(mock_url: str) -> None:
    body = orjson.dumps(chat_body({"type": "text", "text": "x" * MAX_REQUEST_BYTES}))
    async with (
        aiohttp.ClientSession() as session,
        session.post(mock_url + CHAT, data=io.BytesIO(body), headers=JSON_HEADERS) as response,
    ):
        assert response.status == 413
