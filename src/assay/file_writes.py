"""How assay writes a file: never through, over or in place of a file it did not create.

Two ways, and every file assay writes takes one of them:
- `open_new` / `write_new`: a file the run creates in a folder it claimed (records.jsonl,
  report.json, summary.csv, report.html of a run, a shard) is created exclusively
  (`O_CREAT | O_EXCL | O_NOFOLLOW`): if anything holds the name already, a file or a symlink, the
  write fails with `FileExistsError` and the thing there is left as it is.
- `replace_with`: a file assay rebuilds on purpose (`assay report` rewrites report.html, `assay
  compare --html PATH` writes where it is told) is written to a temporary file with a random
  name created exclusively in the same folder, then renamed over the target. A rename replaces a
  symlink instead of writing through it, and no fixed temporary name (`report.html.tmp`) exists
  that a user file could hold.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Final

_NEW_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
TEMP_SUFFIX: Final = ".assay-partial"
"""The end of the name of a file assay is still writing (after a random part)."""


def open_new(path: Path) -> IO[bytes]:
    """Open `path` for writing bytes, creating it; `FileExistsError` when anything holds the name.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with open_new(path) as handle:
    ...     _ = handle.write(b"x")
    >>> open_new(path)
    Traceback (most recent call last):
    FileExistsError: [Errno 17] File exists: ...
    """
    return os.fdopen(os.open(path, _NEW_FLAGS, 0o666), "wb")


def open_append(path: Path) -> IO[bytes]:
    """Open `path` to add to its end (created when missing), never through a symlink."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, 0o666), "ab")


def write_new(path: Path, text: str) -> None:
    """Write `text` to a new file `path` in one step: it appears whole or not at all, and only
    where nothing held its name (`FileExistsError` otherwise, and nothing is changed)."""
    partial = _write_partial(path, text)
    try:
        # A hard link is created exclusively and never follows a symlink at `path`.
        os.link(partial, path)
    except FileExistsError:
        raise
    except OSError:
        # A file system without hard links: create the file exclusively and write it there.
        with open_new(path) as handle:
            handle.write(text.encode())
    finally:
        partial.unlink(missing_ok=True)


def replace_with(path: Path, text: str) -> None:
    """Write `text` to `path` in one step, replacing what is there (a symlink is replaced, not
    followed); the temporary file has a fresh random name, so no other file is touched."""
    partial = _write_partial(path, text)
    try:
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _write_partial(path: Path, text: str) -> Path:
    """`text` in a fresh file next to `path`, created exclusively under a random name."""
    # mkstemp opens with O_EXCL (and O_NOFOLLOW where there is one) and retries on a taken name.
    descriptor, name = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent
    )
    partial = Path(name)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        partial.chmod(0o644)  # mkstemp's 0600 would hide a report from its readers
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise
    return partial


__all__ = ["TEMP_SUFFIX", "open_append", "open_new", "replace_with", "write_new"]
