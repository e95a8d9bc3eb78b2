"""Finding records by any id that joins them to a server's logs and traces.

A record is found by assay's own id (`req-00000042`), by the request id it sent, by the id the
server echoed, by the answer's own id (`chatcmpl-...`) or by its trace id (or whole
`traceparent`). The file is read one line at a time, and only lines that hold the id's bytes
are decoded, so a search over a file of millions of records keeps one line in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from assay.errors import DataError
from assay.records.jsonl import bounded_lines

# Characters orjson writes escaped: an id holding one is not found by its raw bytes.
_ESCAPED = frozenset('"\\') | frozenset(chr(code) for code in range(0x20))


@dataclass(frozen=True, slots=True)
class FoundLine:
    """A records.jsonl line whose ids include the one searched for (`number` from 1)."""

    number: int
    text: str


def ids_of_line(line: dict[str, Any]) -> set[str]:
    """Every id a records.jsonl line can be found by.

    >>> sorted(ids_of_line({"id": "req-1", "ids": {"sent": "u-1", "echoed": "u-1",
    ...     "answer": "chatcmpl-9", "traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    ['00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
     'chatcmpl-9', 'req-1', 'u-1']
    """
    found: set[str] = set()
    record_id = line.get("id")
    if isinstance(record_id, str):
        found.add(record_id)
    ids = line.get("ids")
    if isinstance(ids, dict):
        for key in ("sent", "echoed", "answer", "traceparent"):
            value = ids.get(key)
            if isinstance(value, str):
                found.add(value)
        parent = ids.get("traceparent")
        if isinstance(parent, str):
            found.add(parent[3:35])
    return found


def find_lines(path: Path, wanted: str, skipped: list[int] | None = None) -> Iterator[FoundLine]:
    """The lines of records.jsonl `path` that carry the id `wanted`, streamed in file order.

    A line that holds the id's bytes but is not JSON (a line cut short by a killed process) is
    not a match; its number goes to `skipped` when given.
    """
    try:
        handle = path.open("rb")
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    # The raw bytes of the id, when orjson writes it unescaped: a cheap test that skips
    # decoding every line that cannot match.
    needle = None if _ESCAPED.intersection(wanted) else wanted.encode("utf-8", "replace")
    with handle:
        # A line past the longest record assay writes is refused, naming it, once that much
        # is read: it is neither held whole nor called "not JSON".
        for number, raw in bounded_lines(path, handle):
            if needle is not None and needle not in raw:
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                if raw.strip() and skipped is not None:
                    skipped.append(number)
                continue
            if isinstance(line, dict) and wanted in ids_of_line(line):
                yield FoundLine(number, raw.decode("utf-8", "replace").rstrip("\n"))


__all__ = ["FoundLine", "find_lines", "ids_of_line"]
