"""The local image files a dataset names: read only inside the folders allowed, and once each.

A dataset is input from elsewhere: a LLaVA-style file downloaded from the web can name
`../../.ssh/id_ed25519.png`, `/home/me/Pictures/screenshot.png` or a symlink that leads there,
and assay would send the file to whatever server the run targets. So a path is resolved (every
symlink followed) and must land inside the data file's own folder or a folder named with
`--allowed-media-path` (as vLLM's `--allowed-local-media-path` guards the same on its side).
What it names must be a regular file (never a device such as /dev/zero or a named pipe, which
would never end) of at most `MAX_IMAGE_FILE_BYTES`, checked before it is opened and again on
the open file, which is opened without blocking and without following a link. The open file's
own path is checked against the same folders again: a folder of the path swapped for a symlink
between the check and the open would otherwise lead out. A file with more than one hard link is
refused, as a hard link can be a name inside the folder for a file outside it. Each distinct
file is read once: rows that name it share one copy of what is sent.
"""

from __future__ import annotations

import base64
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from assay.data.image_bytes import ImageBytesError, image_to_send
from assay.printable import printable
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
        data = _read_regular_file(shown, resolved, self._check_inside)
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
        folders = ", ".join(printable(str(root)) for root in self.roots) or "none"
        raise LocalMediaError(
            f"image {text} is {printable(str(resolved))}, outside the folders local images are "
            f"read from ({folders}): a dataset's images are read only from its own folder, or "
            f"from a folder named with {ALLOWED_FLAG} DIR"
        )


def _shown(text: str) -> str:
    """A path as messages show it: at most 200 characters, on one line, every control
    character escaped (a dataset's path could otherwise print a line of its own)."""
    return printable(text if len(text) <= 200 else f"{text[:200]}…")


def _real_folder(folder: Path) -> Path:
    try:
        return folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return folder.absolute()


def _read_regular_file(
    text: str, resolved: Path, check_inside: Callable[[str, Path], None]
) -> bytes:
    """The bytes of a regular file of at most `MAX_IMAGE_FILE_BYTES`, checked by `stat` before
    it is opened and by `fstat` once open (a pipe put in its place meanwhile blocks nothing),
    with one link, and whose open file's own path passes `check_inside`."""
    try:
        _check_regular(text, os.stat(resolved))
        descriptor = os.open(resolved, _OPEN_FLAGS)
    except OSError as error:
        raise LocalMediaError(f"image {text}: {error.strerror or error}") from None
    with open(descriptor, "rb", closefd=True) as file:
        try:
            status = os.fstat(descriptor)
            _check_regular(text, status)
            _check_single_link(text, status)
            opened = _descriptor_path(descriptor)
            if opened is not None:
                check_inside(text, opened)
            data = file.read(MAX_IMAGE_FILE_BYTES + 1)
        except OSError as error:
            raise LocalMediaError(f"image {text}: {error.strerror or error}") from None
    if len(data) > MAX_IMAGE_FILE_BYTES:
        raise LocalMediaError(_too_large(text, len(data)))
    return data


def _descriptor_path(descriptor: int) -> Path | None:
    """The real path of an open file, as the system names it (every symlink of the path it was
    opened by followed); None where the system cannot say, and there the check made on the path
    before it was opened stands alone."""
    if sys.platform == "linux":
        try:
            return Path(os.readlink(f"/proc/self/fd/{descriptor}"))
        except OSError:  # no /proc mounted
            return None
    elif sys.platform == "darwin":
        import fcntl

        named = fcntl.fcntl(descriptor, fcntl.F_GETPATH, bytes(1024))
        return Path(os.fsdecode(named.split(b"\0", 1)[0]))
    else:  # Windows and the other BSDs: no portable way to ask
        return None


def _check_regular(text: str, status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise LocalMediaError(
            f"image {text} is not a regular file: a device, a named pipe or a folder is never "
            "read as an image"
        )
    if status.st_size > MAX_IMAGE_FILE_BYTES:
        raise LocalMediaError(_too_large(text, status.st_size))


def _check_single_link(text: str, status: os.stat_result) -> None:
    if status.st_nlink > 1:
        raise LocalMediaError(
            f"image {text} has {status.st_nlink} hard links, and a hard link may point at a file "
            "outside the dataset's folder, so it is not read; copy the file into the folder "
            "(a copy, not a link)"
        )


def _too_large(text: str, size: int) -> str:
    return (
        f"image {text} holds {size:,} bytes, above the {MAX_IMAGE_FILE_BYTES:,} bytes one image "
        "file may hold (see docs/security.md)"
    )


__all__ = ["ALLOWED_FLAG", "LocalMedia", "LocalMediaError"]
