"""`assay records --id` over a line longer than any record (issue 37, item 12): refused naming
the line once the limit is read, not read whole and then called "not JSON"."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from assay.errors import DataError
from assay.records import jsonl
from assay.records.lookup import find_lines


def test_a_line_past_the_record_limit_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_RECORD_LINE_BYTES", 1024)
    path = tmp_path / "records.jsonl"
    small = orjson.dumps({"id": "req-00000001"}) + b"\n"
    huge = b'{"id": "req-00000002", "pad": "' + b"x" * 4096 + b'"}\n'
    path.write_bytes(small + huge)
    found = find_lines(path, "req-00000001")
    assert next(found).number == 1
    with pytest.raises(DataError, match=r"records.jsonl, line 2: longer than 1,024 bytes"):
        next(found)
