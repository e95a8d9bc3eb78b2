"""A run's shards: the file per step and load process where records land as they complete.

Each shard is created exclusively and flushed at least every `FLUSH_EVERY_NS`, so a process
killed mid-step leaves its records of all but the last second behind; `recover_shard` reads back
what such a process left. A shard that cannot be written (a full disk) raises `OutputError`,
which stops the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Final

import orjson
from pydantic import ValidationError

from assay.core import GenerationResponse
from assay.errors import OutputError
from assay.file_writes import open_append
from assay.records.jsonl import RecordWriter, record_from_line, record_line
from assay.records.record import RequestRecord

FLUSH_EVERY_NS: Final = 1_000_000_000


class ShardFile:
    """The shard one process writes for one step, or with `spool` its lines kept in memory
    (`take`) for the driver to write where the shard `path` is."""

    __slots__ = ("_flushed_ns", "_writer")

    def __init__(self, path: Path, opener: Callable[[Path], IO[bytes]], *, spool: bool) -> None:
        self._writer: RecordWriter | _Spool = (
            _Spool(path) if spool else RecordWriter(path, opener=opener)
        )
        try:
            self._writer.open()
        except OSError as error:
            raise shard_error(path, error) from None
        self._flushed_ns = time.monotonic_ns()

    @property
    def path(self) -> Path:
        return self._writer.path

    @property
    def written(self) -> int:
        """How many records were written (or spooled)."""
        return self._writer.written

    def write(self, record: RequestRecord[GenerationResponse]) -> None:
        try:
            self._writer.write(record)
            now_ns = time.monotonic_ns()
            if now_ns - self._flushed_ns >= FLUSH_EVERY_NS:
                self._flushed_ns = now_ns
                self._writer.flush()
        except OSError as error:
            raise shard_error(self._writer.path, error) from None

    def take(self) -> bytes:
        """The lines spooled since the last call (nothing when this shard is a file)."""
        return self._writer.take() if isinstance(self._writer, _Spool) else b""

    def close(self) -> None:
        try:
            self._writer.close()
        except OSError as error:
            raise shard_error(self._writer.path, error) from None


class _Spool:
    """A `RecordWriter` that keeps the lines in memory."""

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
