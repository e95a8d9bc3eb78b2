"""records.jsonl is read a bounded piece at a time (issue 21.8): `assay report` read a 500 MB
line whole (1.36 GB). A line longer than `MAX_RECORD_LINE_BYTES` is one `DataError` naming it,
raised after reading at most that much of it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from assay.errors import DataError
from assay.records import jsonl
from assay.reports.html import read_latency_samples


class SpyReader(io.BytesIO):
    """A file that remembers the largest piece it was asked for."""

    largest = 0

    def readline(self, size: int | None = -1, /) -> bytes:
        assert size is not None, "a whole line was asked for, unbounded"
        assert size > 0, "a whole line was asked for, unbounded"
        self.largest = max(self.largest, size)
        return super().readline(size)


def test_no_line_is_read_whole_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "MAX_RECORD_LINE_BYTES", 1000)
    spy = SpyReader(b'{"a": 1}\n' + b"x" * 5000 + b"\n")
    lines = jsonl.bounded_lines(Path("records.jsonl"), spy)
    assert next(lines) == (1, b'{"a": 1}\n')
    with pytest.raises(DataError, match=r"records.jsonl, line 2: longer than 1,000 bytes"):
        next(lines)
    assert spy.largest == 1001


def test_assay_report_refuses_an_overlong_record_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_RECORD_LINE_BYTES", 1000)
    records = tmp_path / "records.jsonl"
    records.write_bytes(b'{"status": "cancelled"}\n{"status": "' + b"x" * 5000 + b'"}\n')
    with pytest.raises(DataError, match="line 2: longer than 1,000 bytes"):
        read_latency_samples(records)
    records.write_bytes(b'{"status": "' + b"x" * 5000 + b'"}\n')
    with pytest.raises(DataError, match="line 1: longer than 1,000 bytes"):
        list(jsonl.read_records(records))
