"""The bytes of an image file that are the image: up to its end marker, never what follows.

A file can carry more than its image: bytes appended after a PNG's `IEND` chunk or a JPEG's
end-of-image marker are ignored by every decoder and would travel to the server unseen. PNG,
JPEG and WebP files are cut where their own structure says the image ends (the bytes sent are
the file's, unchanged, up to there); any other format is decoded and sent re-encoded as PNG.

Only the formats in `DECODED_FORMATS` are opened: Pillow decodes them in its own process. Some
of its other formats hand the file to an external program (an EPS file runs Ghostscript on the
dataset's PostScript), which a dataset must never make assay do.
"""

from __future__ import annotations

import io
import struct
import warnings
from typing import Final

from assay.spec.limits import MAX_IMAGE_PIXELS_PER_REQUEST

_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_JPEG_START: Final = b"\xff\xd8"
_JPEG_END: Final = 0xD9
_JPEG_SCAN: Final = 0xDA
# Markers that stand alone, with no length after them: TEM and the restart markers RST0-RST7.
_JPEG_STANDALONE: Final = frozenset({0x01, *range(0xD0, 0xD8)})
DECODED_FORMATS: Final = (
    "PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF", "ICO", "TGA", "PPM", "PCX",
    "AVIF", "JPEG2000", "SGI",
)  # fmt: skip
"""The Pillow formats a dataset's image may be in: each decoded by Pillow itself, no program
run (a JPEG's multi-picture variant, MPO, opens as JPEG)."""


class ImageBytesError(ValueError):
    """An image that cannot be sent: not decodable, or its structure does not say where it ends."""


def image_format(data: bytes, what: str) -> str:
    """The Pillow format name of an image in one of `DECODED_FORMATS`; `ImageBytesError`
    otherwise."""
    from PIL import Image, UnidentifiedImageError  # only a run that sends images loads Pillow

    try:
        with warnings.catch_warnings():
            # Above Pillow's bomb limit (89,478,485 pixels) it warns, above twice that it
            # raises: either way the image is refused, never decoded.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=DECODED_FORMATS) as image:
                image.verify()
                kind = image.format
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise ImageBytesError(f"{what} is too large to decode safely: {error}") from None
    except UnidentifiedImageError:
        other = _other_format(data)
        if other is not None:
            raise ImageBytesError(
                f"{what} is not an image of a supported format ({other}); the formats read are "
                f"{', '.join(DECODED_FORMATS)}"
            ) from None
        raise ImageBytesError(f"{what} is not an image (no image format recognised)") from None
    # A decoder meeting a malformed file raises what it meets (struct.error, IndexError...):
    # every kind is the file's fault, one line for the user, never an internal error.
    except Exception as error:
        raise ImageBytesError(f"{what} is not a decodable image ({_described(error)})") from None
    if kind is None or Image.MIME.get(kind) is None:
        raise ImageBytesError(f"{what} is an image of a format with no MIME type ({kind})")
    return kind


def _other_format(data: bytes) -> str | None:
    """The format whose signature `data` starts with, among all Pillow knows, found by that
    signature alone (nothing is parsed or decoded); None if none matches."""
    from PIL import Image

    Image.init()
    prefix = data[:16]
    for kind, (_, accept) in Image.OPEN.items():
        if kind in DECODED_FORMATS or accept is None:
            continue
        try:
            if accept(prefix):
                return kind
        # A signature check reads fixed offsets: a file shorter than them raises one of these,
        # which Pillow's own open takes as "not this format"; so does this.
        except (SyntaxError, IndexError, TypeError, struct.error):
            continue
    return None


def _described(error: Exception) -> str:
    return str(error) or type(error).__name__


def image_to_send(data: bytes, what: str) -> tuple[bytes, str]:
    """The bytes of the image in `data` and their MIME type: the file's own bytes up to the end
    its structure names (PNG, JPEG, WebP), or the image decoded and re-encoded as PNG.

    >>> import random
    >>> from assay.data.media import ImageSize, synthetic_image
    >>> png = synthetic_image(ImageSize(width=8, height=8), "png", random.Random(1))
    >>> image_to_send(png + b"SECRET", "image a.png") == (png, "image/png")
    True
    """
    kind = image_format(data, what)
    end: int | None
    match kind:
        case "PNG":
            end = png_end(data)
        case "JPEG" | "MPO":
            # An MPO (a phone's multi-picture JPEG) is its first picture, then the others:
            # the first is a whole JPEG, and what a server decodes.
            end = jpeg_end(data)
            kind = "JPEG"
        case "WEBP":
            end = riff_end(data)
        case _:
            return _reencoded(data, what), "image/png"
    if end is None:
        raise ImageBytesError(f"{what}: the {kind} image has no end marker where it should")
    from PIL import Image

    return data[:end], Image.MIME[kind]


def png_end(data: bytes) -> int | None:
    """Where the PNG in `data` ends: just after its `IEND` chunk (None if it has none)."""
    if not data.startswith(_PNG_SIGNATURE):
        return None
    at = len(_PNG_SIGNATURE)
    while at + 12 <= len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        end = at + 12 + length  # length, type, the data, CRC
        if end > len(data):
            return None
        if data[at + 4 : at + 8] == b"IEND":
            return end
        at = end
    return None


def jpeg_end(data: bytes) -> int | None:
    """Where the JPEG in `data` ends: just after its end-of-image marker, found by walking its
    segments (an EXIF thumbnail's own marker, inside a segment, is skipped whole)."""
    if not data.startswith(_JPEG_START):
        return None
    size = len(data)
    at = len(_JPEG_START)
    while at < size:
        if data[at] != 0xFF:
            return None
        while at < size and data[at] == 0xFF:  # fill bytes before a marker
            at += 1
        if at >= size:
            return None
        marker = data[at]
        at += 1
        if marker == _JPEG_END:
            return at
        if marker in _JPEG_STANDALONE:
            continue
        if at + 2 > size:
            return None
        length = int.from_bytes(data[at : at + 2], "big")
        if length < 2:
            return None
        at += length
        if marker == _JPEG_SCAN:
            found = _scan_end(data, at)
            if found is None:
                return None
            at = found
    return None


def _scan_end(data: bytes, at: int) -> int | None:
    """The position of the marker that ends the entropy-coded data starting at `at`."""
    size = len(data)
    while True:
        at = data.find(b"\xff", at)
        if at < 0 or at + 1 >= size:
            return None
        following = data[at + 1]
        # 0xFF00 is a stuffed 0xFF, RSTn a restart inside the scan, 0xFFFF a fill byte.
        if following == 0x00 or 0xD0 <= following <= 0xD7:
            at += 2
        elif following == 0xFF:
            at += 1
        else:
            return at


def riff_end(data: bytes) -> int | None:
    """Where a RIFF file (WebP) ends: the size its header names, padded to an even length."""
    if len(data) < 12 or data[:4] != b"RIFF":
        return None
    size = int.from_bytes(data[4:8], "little")
    end = 8 + size + (size & 1)
    return end if end <= len(data) else None


def _reencoded(data: bytes, what: str) -> bytes:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data), formats=DECODED_FORMATS) as image:
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS_PER_REQUEST:
                raise ImageBytesError(
                    f"{what} is {width}x{height}, above {MAX_IMAGE_PIXELS_PER_REQUEST:,} pixels"
                )
            image.load()
            decoded: Image.Image = image
            if decoded.mode not in {"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"}:
                decoded = decoded.convert("RGBA" if "A" in decoded.mode else "RGB")
            out = io.BytesIO()
            decoded.save(out, format="PNG")
    except ImageBytesError:
        raise
    # As in `image_format`: whatever a decoder raises on a malformed file is the file's fault.
    except Exception as error:
        raise ImageBytesError(
            f"{what} could not be decoded and re-encoded ({_described(error)})"
        ) from None
    return out.getvalue()


__all__ = [
    "DECODED_FORMATS",
    "ImageBytesError",
    "image_format",
    "image_to_send",
    "jpeg_end",
    "png_end",
    "riff_end",
]
