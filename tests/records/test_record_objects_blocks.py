"""`record_objects` reads records.jsonl a block at a time: lines that straddle blocks, blank
lines, a last line without its newline and an over-long line come out as line by line reading
gave them (the line numbers of its errors included)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from assay.errors import DataError
from assay.records import jsonl


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 20])
def test_lines_across_blocks_are_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(jsonl, "_BLOCK_BYTES", block)
    objects = [{"n": n, "text": "x" * (n * 13 % 97)} for n in range(40)]
    lines = [orjson.dumps(o) for o in objects]
    lines.insert(5, b"")  # a blank line, skipped
    lines.insert(9, b"  \r")
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"\n".join(lines))  # the last line without its newline
    assert list(jsonl.record_objects(path)) == objects


@pytest.mark.parametrize("block", [3, 100, 1 << 20])
def test_an_overlong_line_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(jsonl, "_BLOCK_BYTES", block)
    monkeypatch.setattr(jsonl, "MAX_RECORD_LINE_BYTES", 1000)
    path = tmp_path / "records.jsonl"
    fits = b'{"a": "' + b"y" * 990 + b'"}'  # 999 bytes and its newline: the most a line holds
    path.write_bytes(fits + b"\n\n" + b'{"a": "' + b"x" * 5000 + b'"}\n{"b": 1}\n')
    lines = jsonl.record_objects(path)
    assert next(lines) == {"a": "y" * 990}
    with pytest.raises(DataError, match=r"records.jsonl, line 3: longer than 1,000 bytes"):
        next(lines)
    path.write_bytes(b'{"a": 1}\n{"a": "' + b"x" * 5000 + b'"}')  # the last line, unended
    with pytest.raises(DataError, match=r"line 2: longer than 1,000 bytes"):
        list(jsonl.record_objects(path))


def test_a_line_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"a": 1}\n\n[1, 2]\n')
    with pytest.raises(DataError, match=r"records.jsonl:3: not a JSON object"):
        list(jsonl.record_objects(path))
    path.write_bytes(b'{"a": 1}\n{"a": \n')
    with pytest.raises(DataError, match=r"records.jsonl:2: not a JSON record"):
        list(jsonl.record_objects(path))
