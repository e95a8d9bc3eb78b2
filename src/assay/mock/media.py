"""What the mock charges for the images and audio of a chat request, in prompt tokens.

The rule (documented in the README and docs/servers.md), close to how vision and audio models
count them:

- an image sent as a `data:` URL costs `ceil(width / 28) * ceil(height / 28)` tokens, one per
  28x28 patch (Qwen2-VL's patch grid after merging), so a 512x512 image costs 19 * 19 = 361;
- an image by http(s) URL costs a flat 256 tokens (the mock fetches nothing);
- audio (`input_audio`, WAV) costs `ceil(seconds * 25)` tokens, 25 per second (Qwen2-Audio's
  rate after pooling).

An image or audio part the mock cannot decode is a 400, as a real server answers it.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import wave
from typing import Final

from PIL import Image, UnidentifiedImageError

IMAGE_PATCH_PIXELS: Final = 28
REMOTE_IMAGE_TOKENS: Final = 256
AUDIO_TOKENS_PER_SECOND: Final = 25


class MediaRejected(ValueError):
    """An image or audio part the mock cannot read."""


def image_tokens(url: object) -> int:
    """The prompt tokens of one image, by the rule above.

    >>> image_tokens("https://example.com/cat.png")
    256
    """
    if not isinstance(url, str):
        raise MediaRejected("image_url part without a `url` string")
    if url.startswith(("http://", "https://")):
        return REMOTE_IMAGE_TOKENS
    if not url.startswith("data:"):
        raise MediaRejected(f"image url must be a data: or http(s) URL, got {url[:32]!r}")
    data = _base64_payload(url)
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError) as error:
        raise MediaRejected(f"image data URL is not a decodable image: {error}") from None
    return math.ceil(width / IMAGE_PATCH_PIXELS) * math.ceil(height / IMAGE_PATCH_PIXELS)


def wav_seconds(data: bytes) -> float:
    """The duration of WAV bytes; `MediaRejected` when they are not a WAV file."""
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            rate = wav.getframerate()
            frames = wav.getnframes()
    except (wave.Error, EOFError) as error:
        raise MediaRejected(f"audio is not a WAV file: {error}") from None
    if rate <= 0:
        raise MediaRejected("audio is a WAV file with a frame rate of 0")
    return frames / rate


def audio_tokens(part: object) -> int:
    """The prompt tokens of one `input_audio` object (`{"data": base64, "format": "wav"}`)."""
    if not isinstance(part, dict):
        raise MediaRejected("input_audio part without an `input_audio` object")
    encoded = part.get("data")
    if not isinstance(encoded, str):
        raise MediaRejected("input_audio part without a `data` string")
    if part.get("format", "wav") != "wav":
        raise MediaRejected(f"input_audio format {part.get('format')!r}: the mock reads wav")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise MediaRejected("input_audio data is not valid base64") from None
    return math.ceil(wav_seconds(data) * AUDIO_TOKENS_PER_SECOND)


def _base64_payload(url: str) -> bytes:
    header, comma, payload = url.partition(",")
    if not comma or not header.endswith(";base64"):
        raise MediaRejected("image data URL is not base64 (data:MIME;base64,...)")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise MediaRejected("image data URL is not valid base64") from None


__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "IMAGE_PATCH_PIXELS",
    "REMOTE_IMAGE_TOKENS",
    "MediaRejected",
    "audio_tokens",
    "image_tokens",
    "wav_seconds",
]
