"""Images and audio a request carries: synthetic ones, seeded, and a dataset's, checked on load.

Images are encoded by Pillow; audio is 16-bit mono PCM in a WAV container written by the
standard library's `wave`. Both travel in a chat message as content parts: an image as an
`image_url` part holding a `data:` URL (or a remote http(s) URL, passed through), audio as an
`input_audio` part holding base64 WAV bytes. A transcription uploads the WAV bytes themselves.
"""

from __future__ import annotations

import base64
import binascii
import io
import random
import wave
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from assay.data.image_bytes import ImageBytesError, image_format
from assay.data.local_media import LocalMedia, LocalMediaError

ImageFormat = Literal["png", "jpeg"]
"""How synthetic images are encoded."""

AUDIO_SAMPLE_RATE: Final = 16_000
"""Samples per second of synthetic audio (what speech models resample to)."""

# The coarse grid of random colours a synthetic image is smoothed from: distinct per request
# (a server cannot serve it from an image cache) and quick to encode at any size.
_GRID: Final = 8
_MIME: Final[dict[ImageFormat, str]] = {"png": "image/png", "jpeg": "image/jpeg"}
_PIL_FORMAT: Final[dict[ImageFormat, str]] = {"png": "PNG", "jpeg": "JPEG"}
_REMOTE: Final = ("http://", "https://")
# A little-endian sample's high byte, quietened: positive to 0x0f, negative to 0xf0.
_QUIET_HIGH_BYTE: Final = bytes(0x0F if byte < 0x80 else 0xF0 for byte in range(256))


class ImageSize(BaseModel):
    """An image's width and height in pixels.

    >>> ImageSize.parse("640x480")
    ImageSize(width=640, height=480)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    width: int = Field(ge=1, le=16_384)
    height: int = Field(ge=1, le=16_384)

    @classmethod
    def parse(cls, text: str) -> ImageSize:
        """`WxH` in pixels, each from 1 to 16384; anything else is a `ValueError` naming it."""
        width, x, height = text.strip().lower().partition("x")
        # ASCII digits only: int() would also read full-width or other scripts' digits.
        if not x or not _ascii_digits(width) or not _ascii_digits(height):
            raise ValueError(f"image size {text!r}: expected WxH in pixels, e.g. 512x512")
        if not (1 <= int(width) <= 16_384 and 1 <= int(height) <= 16_384):
            raise ValueError(f"image size {text!r}: width and height go from 1 to 16384 pixels")
        return cls(width=int(width), height=int(height))

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


def _ascii_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def synthetic_image(size: ImageSize, image_format: ImageFormat, rng: random.Random) -> bytes:
    """An encoded image of `size`, drawn from `rng`: a grid of random colours, smoothed.

    >>> from PIL import Image
    >>> data = synthetic_image(ImageSize(width=64, height=32), "png", random.Random(1))
    >>> data[:4], Image.open(io.BytesIO(data)).size
    (b'\\x89PNG', (64, 32))
    """
    from PIL import Image  # only a run that sends images loads Pillow

    grid = Image.frombytes("RGB", (_GRID, _GRID), rng.randbytes(_GRID * _GRID * 3))
    image = grid.resize((size.width, size.height), Image.Resampling.BILINEAR)
    out = io.BytesIO()
    # The fastest PNG compression: encoding time is spent in the load loop.
    image.save(out, format=_PIL_FORMAT[image_format], compress_level=1)
    return out.getvalue()


def data_url(data: bytes, mime: str) -> str:
    """`data:` URL of `data` with its MIME type, base64-encoded.

    >>> data_url(b"hi", "image/png")
    'data:image/png;base64,aGk='
    """
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def synthetic_image_url(size: ImageSize, image_format: ImageFormat, rng: random.Random) -> str:
    """A synthetic image as a `data:` URL."""
    return data_url(synthetic_image(size, image_format, rng), _MIME[image_format])


def synthetic_wav(seconds: float, rng: random.Random) -> bytes:
    """`seconds` of 16 kHz mono 16-bit audio in a WAV file: a seeded tone under quiet noise.

    >>> with wave.open(io.BytesIO(synthetic_wav(0.5, random.Random(1)))) as wav:
    ...     wav.getnframes() / wav.getframerate()
    0.5
    """
    frames = round(seconds * AUDIO_SAMPLE_RATE)
    # Noise from the seeded generator, quietened to an eighth of full scale: 16-bit samples
    # whose high byte is masked to 0x0f or sign-extended 0xf0, so no sample is loud.
    noise = bytearray(rng.randbytes(frames * 2))
    noise[1::2] = noise[1::2].translate(_QUIET_HIGH_BYTE)
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(AUDIO_SAMPLE_RATE)
        wav.writeframes(bytes(noise))
    return out.getvalue()


def image_part(url: str) -> dict[str, JsonValue]:
    """A chat content part holding one image by URL (a `data:` URL or http(s))."""
    return {"type": "image_url", "image_url": {"url": url}}


def audio_part(wav_bytes: bytes) -> dict[str, JsonValue]:
    """A chat content part holding WAV audio, base64-encoded."""
    encoded = base64.b64encode(wav_bytes).decode("ascii")
    return {"type": "input_audio", "input_audio": {"data": encoded, "format": "wav"}}


def user_content(text: str, images: tuple[str, ...], audio: bytes | None) -> str | list[JsonValue]:
    """A user message's content: the text alone, or the text part then image and audio parts.

    >>> user_content("Hi", (), None)
    'Hi'
    >>> [part["type"] for part in user_content("Hi", ("https://x/a.png",), None)]
    ['text', 'image_url']
    """
    if not images and audio is None:
        return text
    parts: list[JsonValue] = [{"type": "text", "text": text}]
    parts.extend(image_part(url) for url in images)
    if audio is not None:
        parts.append(audio_part(audio))
    return parts


class MediaError(ValueError):
    """A dataset image that cannot be sent: missing, unreadable, refused or not an image."""


def dataset_image_url(value: str, local: LocalMedia) -> str:
    """The URL a dataset's image value is sent as, checked before any load.

    An http(s) URL passes through unchanged (the server fetches it); a `data:` URL must hold a
    decodable image; anything else is a local file path, read by `local` (inside the folders it
    allows, once per file) and sent as a `data:` URL of the image alone. Raises `MediaError`
    saying what is wrong.
    """
    text = value.strip()
    if text.startswith(_REMOTE):
        return text
    if text.startswith("data:"):
        header, comma, payload = text.partition(",")
        if not comma or not header.endswith(";base64"):
            raise MediaError(f"image data URL {_clip(text)!r} is not base64 (data:MIME;base64,...)")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise MediaError(f"image data URL {_clip(text)!r} is not valid base64") from None
        try:
            image_format(data, "the data URL")
        except ImageBytesError as error:
            raise MediaError(str(error)) from None
        return text
    try:
        return local.image_url(text)
    except LocalMediaError as error:
        raise MediaError(str(error)) from None


def _clip(text: str) -> str:
    return text if len(text) <= 48 else f"{text[:48]}…"


__all__ = [
    "AUDIO_SAMPLE_RATE",
    "ImageFormat",
    "ImageSize",
    "MediaError",
    "audio_part",
    "data_url",
    "dataset_image_url",
    "image_part",
    "synthetic_image",
    "synthetic_image_url",
    "synthetic_wav",
    "user_content",
]
