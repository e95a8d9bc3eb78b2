"""The local image files a dataset names: read only inside the folders allowed, and once each.

A dataset is input from elsewhere: a LLaVA-style file downloaded from the web can name
`../../.ssh/id_ed25519.png`, `/home/me/Pictures/screenshot.png` or a symlink that leads there,
and assay would send the file to whatever server the run targets. So a path is resolved (every
symlink followed) and must land inside the data file's own folder or a folder named with
`--allowed-media-path` (as vLLM's `--allowed-local-media-path` guards the same on its side).
What it names must be a regular file (never a device such as /dev/zero or a named pipe, which
would never end) of at most `MAX_IMAGE_FILE_BYTES`, checked before it is opened and again on
the open file, which is opened without blocking and without following a link. Each distinct
file is read once: rows that name it share one copy of what is sent.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from assay.data.image_bytes import ImageBytesError, image_to_send
from assay.spec.limits import MAX_IMAGE_FILE_BYTES

_OPEN_FLAGS: Final = (
    os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)
ALLOWED_FLAG: Final = "--allowed-media-path"
"""The flag that names more folders a dataset's local images may be read from."""


class LocalMediaError(ValueError):
    """A local image a dataset names that assay refuses to read; the message names the rule."""


class LocalMedia:
    """Reads the local images of one data file: relative paths from `base`, only inside `roots`.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     media = LocalMedia(Path(folder), [Path(folder)])
    ...     media.image_url("../elsewhere.png")
    Traceback (most recent call last):
    ...
    assay.data.local_media.LocalMediaError: ...
    """

    def __init__(self, base: Path, roots: Iterable[Path]) -> None:
        self.base = base
        self.roots = tuple(dict.fromkeys(_real_folder(root) for root in roots))
        self._read: dict[Path, str] = {}

    def image_url(self, text: str) -> str:
        """The `data:` URL the local image `text` names is sent as; the same object for every
        row that names the same file. `LocalMediaError` names the rule a refused path broke."""
        path = Path(text)
        if not path.is_absolute():
            path = self.base / path
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError, ValueError) as error:  # ValueError: a NUL in the path
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise LocalMediaError(f"image {_shown(text)}: {reason}") from None
        known = self._read.get(resolved)
        if known is not None:
            return known
        shown = _shown(text)
        self._check_inside(shown, resolved)
        data = _read_regular_file(shown, resolved)
        try:
            image, mime = image_to_send(data, f"image {shown}")
        except ImageBytesError as error:
            raise LocalMediaError(str(error)) from None
        url = f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"
        self._read[resolved] = url
        return url

    def _check_inside(self, text: str, resolved: Path) -> None:
        if any(resolved.is_relative_to(root) for root in self.roots):
            return
        folders = ", ".join(str(root) for root in self.roots) or "none"
        raise LocalMediaError(
            f"image {text} is {resolved}, outside the folders local images are read from "
            f"({folders}): a dataset's images are read only from its own folder, or from a "
            f"folder named with {ALLOWED_FLAG} DIR"
        )


def _shown(text: str) -> str:
    """A path as messages show it: at most 200 characters."""
    return text if len(text) <= 200 else f"{text[:200]}…"


def _real_folder(folder: Path) -> Path:
    try:
        return folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return folder.absolute()


def _read_regular_file(text: str, resolved: Path) -> bytes:
    """The bytes of a regular file of at most `MAX_IMAGE_FILE_BYTES`, checked by `stat` before
    it is opened and by `fstat` once open (a pipe put in its place meanwhile blocks nothing)."""
    try:
        _check_regular(text, os.stat(resolved))
        descriptor = os.open(resolved, _OPEN_FLAGS)
    except OSError as error:
        raise LocalMediaError(f"image {text}: {error.strerror or error}") from None
    with open(descriptor, "rb", closefd=True) as file:
        try:
            _check_regular(text, os.fstat(descriptor))
            data = file.read(MAX_IMAGE_FILE_BYTES + 1)
        except OSError as error:
            raise LocalMediaError(f"image {text}: {error.strerror or error}") from None
    if len(data) > MAX_IMAGE_FILE_BYTES:
        raise LocalMediaError(_too_large(text, len(data)))
    return data


def _check_regular(text: str, status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise LocalMediaError(
            f"image {text} is not a regular file: a device, a named pipe or a folder is never "
            "read as an image"
        )
    if status.st_size > MAX_IMAGE_FILE_BYTES:
        raise LocalMediaError(_too_large(text, status.st_size))


def _too_large(text: str, size: int) -> str:
    return (
        f"image {text} holds {size:,} bytes, above the {MAX_IMAGE_FILE_BYTES:,} bytes one image "
        "file may hold (see docs/security.md)"
    )


__all__ = ["ALLOWED_FLAG", "LocalMedia", "LocalMediaError"]
