"""The formats of a data file: which one a path is, how its rows read, and reading them.

Six formats: JSON Lines and CSV prompt files, JSON arrays (ShareGPT dumps and the like), parquet
and arrow files, and Hugging Face datasets (`hf:NAME_OR_PATH[:SPLIT]`; see `dataset_files` for
the last four). Each yields its rows numbered by line, item or row; what a row means is
`prompt_rows`' business.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import orjson

from assay.data.dataset_files import (
    arrow_records,
    hf_records,
    is_hf_spec,
    json_array_records,
    parquet_records,
)
from assay.data.row_values import json_kind
from assay.errors import DataError
from assay.spec.limits import MAX_DATA_FILE_BYTES
from assay.spec.source import PromptColumns

FileFormat = Literal["jsonl", "csv", "json", "parquet", "arrow", "hf"]

_SUFFIXES: Final[dict[str, FileFormat]] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".arrow": "arrow",
}


@dataclass(frozen=True, slots=True)
class RowReading:
    """How the rows of one format read.

    - `unit`: what a row is called in messages (`line`, `item`, `row`).
    - `text_cells`: every cell is text (CSV): an empty cell is not given, and a cell holding a
      conversation, messages or an object is JSON text to parse.
    - `pass_through`: a row's keys other than the mapped columns go into its request body.
      Prompt files do that; datasets (many columns of metadata) use only the mapped columns, and
      the run's notes name the ones left unused.
    """

    unit: str
    text_cells: bool
    pass_through: bool


def row_reading(file_format: FileFormat) -> RowReading:
    """How the rows of `file_format` read.

    >>> row_reading("csv")
    RowReading(unit='line', text_cells=True, pass_through=True)
    """
    match file_format:
        case "jsonl":
            return RowReading(unit="line", text_cells=False, pass_through=True)
        case "csv":
            return RowReading(unit="line", text_cells=True, pass_through=True)
        case "json":
            return RowReading(unit="item", text_cells=False, pass_through=False)
        case "parquet" | "arrow" | "hf":
            return RowReading(unit="row", text_cells=False, pass_through=False)


def format_of(path: Path) -> FileFormat:
    """The format a data path names: `hf:...` or the file's suffix."""
    if is_hf_spec(path):
        return "hf"
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        known = ", ".join(sorted(_SUFFIXES))
        shown = repr(suffix) if suffix else "no extension"
        raise DataError(f"{path}: unknown prompt file type ({shown}); use one of {known}")
    return _SUFFIXES[suffix]


def read_records(
    path: Path, file_format: FileFormat, columns: PromptColumns
) -> list[tuple[int, Mapping[str, object]]]:
    """Every row of the file at `path` (a CSV header must name the prompt, messages or query
    column)."""
    match file_format:
        case "jsonl":
            return jsonl_records(_read_text(path), path)
        case "csv":
            return _csv_records(_read_text(path), path, columns)
        case "json":
            return json_array_records(_read_text(path), path)
        case "parquet":
            _exists(path)
            return parquet_records(path)
        case "arrow":
            _exists(path)
            return arrow_records(path)
        case "hf":
            return hf_records(str(path))


def jsonl_records(text: str, path: Path) -> list[tuple[int, Mapping[str, object]]]:
    """The JSON objects of a JSON Lines text with their line numbers; blank lines are skipped."""
    records: list[tuple[int, Mapping[str, object]]] = []
    # Split on "\n" only: str.splitlines would also cut at U+2028, which JSON strings may hold.
    for line, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise DataError(f"{path}, line {line}: not valid JSON: {error}") from None
        if not isinstance(value, dict):
            raise DataError(f"{path}, line {line}: expected a JSON object, got {json_kind(value)}")
        records.append((line, value))
    return records


def check_file_size(path: Path, kind: str) -> None:
    """Refuse a data file larger than `MAX_DATA_FILE_BYTES` before reading any of it."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the read that follows says what is wrong with the path
    if size > MAX_DATA_FILE_BYTES:
        raise DataError(
            f"{path}: the {kind} holds {size:,} bytes, above the {MAX_DATA_FILE_BYTES:,} assay "
            "reads (see docs/security.md)"
        )


def _exists(path: Path) -> None:
    if not path.is_file():
        raise DataError(f"{path}: no such data file")


def _read_text(path: Path) -> str:
    check_file_size(path, "prompt file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such prompt file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, not a prompt file") from None
    except OSError as error:
        raise DataError(f"{path}: cannot read the prompt file: {error.strerror}") from None
    try:
        # utf-8-sig: spreadsheet exports often start with a byte-order mark.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DataError(f"{path}, line {line}: not UTF-8 text ({error.reason})") from None


def _csv_records(
    text: str, path: Path, columns: PromptColumns
) -> list[tuple[int, Mapping[str, object]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[tuple[int, Mapping[str, object]]] = []
    header: list[str] | None = None
    start = 1
    try:
        for fields in reader:
            line, start = start, reader.line_num + 1
            if not fields:
                continue
            if header is None:
                header = [name.strip() for name in fields]
                if not {columns.prompt, columns.messages, columns.query} & set(header):
                    raise DataError(
                        f"{path}, line {line}: no {columns.prompt!r}, {columns.messages!r} or "
                        f"{columns.query!r} column in the header (columns: {', '.join(header)})"
                    )
                continue
            if len(fields) != len(header):
                raise DataError(
                    f"{path}, line {line}: {len(fields)} fields, but the header has {len(header)}"
                )
            records.append((line, dict(zip(header, fields, strict=True))))
    except csv.Error as error:
        raise DataError(f"{path}, line {reader.line_num}: malformed CSV: {error}") from None
    if header is None:
        raise DataError(f"{path}: no prompts in the file")
    return records


__all__ = [
    "FileFormat",
    "RowReading",
    "format_of",
    "jsonl_records",
    "read_records",
    "row_reading",
]
