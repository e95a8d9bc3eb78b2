"""A run's shards: the file per step and load process where records land as they complete.

A shard is created exclusively and flushed by its sink at least every `FLUSH_EVERY_NS`, so a
process killed mid-step leaves its records of all but the last second behind; `recover_shard`
reads back what such a process left. A shard that cannot be written (a full disk) raises
`OutputError` (`shard_error`), which stops the run.

`concatenate_shards` merges them into records.jsonl so that a failure (a full disk) leaves no
half file beside the whole shards, and `repeats_shards` tells a half file an earlier merge left
(it holds the shards' first bytes, nothing else) from a records file of the user's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import orjson
from pydantic import ValidationError

from assay.core import GenerationResponse
from assay.errors import OutputError
from assay.file_writes import open_append, open_new
from assay.records.jsonl import record_from_line, record_line
from assay.records.record import RequestRecord

FLUSH_EVERY_NS: Final = 1_000_000_000
_COPY_BYTES: Final = 1 << 20


class Spool:
    """A `RecordWriter` that keeps the lines in memory (`take`) for the driver to write where
    the shard `path` is."""

    __slots__ = ("_lines", "path", "written")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[bytes] = []
        self.written = 0

    def open(self) -> None:
        pass

    def write(self, record: RequestRecord[GenerationResponse]) -> None:
        self._lines.append(orjson.dumps(record_line(record), option=orjson.OPT_APPEND_NEWLINE))
        self.written += 1

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        lines = b"".join(self._lines)
        self._lines.clear()
        return lines


def shard_error(path: Path, error: OSError) -> OutputError:
    """The error that stops a run whose shard at `path` could not be written."""
    return OutputError(
        f"cannot write records to {path}: {error.strerror or error}; the run stopped "
        f"(the records written so far are in {path.parent})"
    )


def append_to_shard(path: Path, lines: bytes) -> None:
    """Append spooled `lines` to the shard at `path` (created even for none)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open_append(path) as shard:
            shard.write(lines)
    except OSError as error:
        raise shard_error(path, error) from None


def recover_shard(path: Path, keep: Callable[[RequestRecord[GenerationResponse]], None]) -> int:
    """Hand every whole record of the shard at `path` to `keep`, and return how many.

    A line the writer was cut off in the middle of is dropped, and the shard is truncated to the
    records kept; a shard never created is created empty.
    """
    kept = whole_bytes = 0
    if not path.is_file():
        path.touch()
        return kept
    with path.open("rb") as shard:
        for raw in shard:
            if not raw.endswith(b"\n"):
                break
            try:
                record = record_from_line(orjson.loads(raw))
            except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError):
                break
            keep(record)
            kept += 1
            whole_bytes += len(raw)
    with path.open("r+b") as shard:
        shard.truncate(whole_bytes)
    return kept


def concatenate_shards(target: Path, shards: Sequence[Path]) -> None:
    """Copy `shards`, in order, into the new file `target`, on disk before this returns.

    `target` is created exclusively; if the copy fails (a full disk, a file-size limit) the file
    this call created is removed again before the `OSError` propagates, so the folder holds the
    whole shards and no half records file that `assay report` would stumble on.
    """
    created = False
    try:
        with open_new(target) as out:
            created = True
            for shard in shards:
                with shard.open("rb") as lines:
                    shutil.copyfileobj(lines, out, _COPY_BYTES)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        if created:  # only the file this merge created, never one that held the name
            with contextlib.suppress(OSError):
                target.unlink()
        raise


def repeats_shards(target: Path, shards: Sequence[Path]) -> bool:
    """Whether the file `target` holds the first bytes of `shards` concatenated in order, and
    nothing else: what a merge cut short left (or one whole that a failure after it kept).

    Such a file holds no byte the shards do not, so it can be removed and merged again.
    """
    if not shards or not target.is_file() or target.is_symlink():
        return False
    with target.open("rb") as merged:
        for shard in shards:
            with shard.open("rb") as lines:
                while chunk := lines.read(_COPY_BYTES):
                    head = merged.read(len(chunk))
                    if head != chunk[: len(head)]:
                        return False
                    if len(head) < len(chunk):
                        return not merged.read(1)
        return not merged.read(1)
