"""A run's shards: the file per step and load process where records land as they complete.

A shard is created exclusively and flushed by its sink at least every `FLUSH_EVERY_NS`, so a
process killed mid-step leaves its records of all but the last second behind; `recover_shard`
reads back what such a process left. A shard that cannot be written (a full disk) raises
`OutputError` (`shard_error`), which stops the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

import orjson
from pydantic import ValidationError

from assay.core import GenerationResponse
from assay.errors import OutputError
from assay.file_writes import open_append
from assay.records.jsonl import record_from_line, record_line
from assay.records.record import RequestRecord

FLUSH_EVERY_NS: Final = 1_000_000_000


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
