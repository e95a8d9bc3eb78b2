"""`assay records --id`: the search streams records.jsonl and matches every id a record holds."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import orjson

from assay.records.lookup import find_lines

PARENT = "00-" + "c" * 32 + "-" + "d" * 16 + "-01"


def line(record_id: str, **ids: str | None) -> bytes:
    return orjson.dumps({"id": record_id, "step": 0, "ids": ids or None}) + b"\n"


def test_a_record_is_found_by_each_of_its_ids(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    wanted = line("req-2", sent="u-2", echoed="e-2", answer="chatcmpl-2", traceparent=PARENT)
    path.write_bytes(line("req-1", sent="u-1") + wanted + line("req-3"))
    for key in ("req-2", "u-2", "e-2", "chatcmpl-2", PARENT, "c" * 32):
        found = list(find_lines(path, key))
        assert [(hit.number, orjson.loads(hit.text)) for hit in found] == [
            (2, orjson.loads(wanted))
        ], key


def test_a_part_of_an_id_finds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(line("req-12", answer="chatcmpl-12"))
    assert list(find_lines(path, "req-1")) == []
    assert list(find_lines(path, "chatcmpl-1")) == []


def test_an_id_that_json_escapes_is_still_found(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    odd = 'ans"we\\r\tid'
    path.write_bytes(line("req-1", answer=odd))
    assert [hit.number for hit in find_lines(path, odd)] == [1]


def test_a_line_cut_short_is_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(line("req-1", sent="u-1") + b'{"id": "req-2", "ids": {"sent": "u-1"')
    skipped: list[int] = []
    assert [hit.number for hit in find_lines(path, "u-1", skipped)] == [1]
    assert skipped == [2]


def test_the_search_holds_one_line_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    padding = "x" * 1000
    with path.open("wb") as file:
        for index in range(20_000):  # about 20 MB of records
            file.write(line(f"req-{index}", sent=f"u-{index}", answer=padding))
    tracemalloc.start()
    try:
        found = [hit.number for hit in find_lines(path, "u-19999")]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == [20_000]
    assert peak < 1_000_000, peak
