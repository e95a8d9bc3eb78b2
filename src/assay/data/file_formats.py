"""The formats of a data file: which one a path is, how its rows read, and reading them.

Six formats: JSON Lines and CSV prompt files, JSON arrays (ShareGPT dumps and the like), parquet
and arrow files, and Hugging Face datasets (`hf:NAME_OR_PATH[:SPLIT]`; see `dataset_files` for
the last four). Each yields its rows numbered by line, item or row; what a row means is
`prompt_rows`' business.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
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
    if path.is_dir():
        raise DataError(
            f"--data {path}: is a folder, not a data file; a Hugging Face dataset folder (a "
            f"local dataset or one written by save_to_disk) is read as --data hf:{path}"
        )
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
            text = _read_text(path)
            records = json_array_records(text, path)
            _refuse_repeated_keys_in_items(text, path)
            return records
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
        _refuse_repeated_keys(raw, f"{path}, line {line}")
        records.append((line, value))
    return records


class RepeatedKeyError(ValueError):
    """A JSON object that gives one key twice (raised by `unique_keys`)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} given twice in one object")
        self.key = key


def unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """An `object_pairs_hook` for `json`: the object's dict, or `RepeatedKeyError` for a key
    given twice, which every JSON parser here would otherwise settle silently by keeping the
    last value.

    >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=unique_keys)
    Traceback (most recent call last):
    ...
    assay.data.file_formats.RepeatedKeyError: key 'a' given twice in one object
    """
    values = dict(pairs)
    if len(values) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKeyError(key)
            seen.add(key)
    return values


_UNIQUE_KEYS: Final = json.JSONDecoder(object_pairs_hook=unique_keys)
_JSON_SPACE: Final = re.compile(r"[ \t\n\r]*")


# orjson reads 1,024 levels of nesting, Python's parser fewer (its recursion limit): what lies
# between is refused, not left unchecked (no prompt row nests that deep).
_TOO_DEEP: Final = "nested too deeply to check for a key given twice; flatten it"


def _refuse_repeated_keys(text: str, where: str) -> None:
    """Refuse a JSON text (already parsed by orjson, which keeps a repeated key's last value)
    whose objects give a key twice: a row's `prompt`, a message's `content` or a request field
    given twice would send one of them without a word. The stdlib parser, given a hook, sees
    every pair; it parses as fast as orjson, so the second pass costs about as much again."""
    try:
        _UNIQUE_KEYS.decode(text)
    except RepeatedKeyError as error:
        raise DataError(f"{where}: {error}; keep one") from None
    except RecursionError:
        raise DataError(f"{where}: {_TOO_DEEP}") from None
    except ValueError:
        return  # orjson accepted the text; what the stdlib parser refuses besides is not a key


def _refuse_repeated_keys_in_items(text: str, path: Path) -> None:
    """`_refuse_repeated_keys` for a JSON array orjson has parsed, naming the item that repeats
    a key: the items are decoded one by one from where each starts."""
    index = _after_space(text, _after_space(text, 0) + 1)  # past the opening bracket
    item = 0
    while index < len(text) and text[index] != "]":
        item += 1
        try:
            _, index = _UNIQUE_KEYS.raw_decode(text, index)
        except RepeatedKeyError as error:
            raise DataError(f"{path}, item {item}: {error}; keep one") from None
        except RecursionError:
            raise DataError(f"{path}, item {item}: {_TOO_DEEP}") from None
        except ValueError:
            return  # as in _refuse_repeated_keys
        index = _after_space(text, index)
        if index < len(text) and text[index] == ",":
            index = _after_space(text, index + 1)


def _after_space(text: str, index: int) -> int:
    """Where the JSON whitespace from `index` ends."""
    match = _JSON_SPACE.match(text, index)
    return index if match is None else match.end()


def regular_file_status(path: Path, flag: str, kind: str) -> os.stat_result:
    """The status of the file at `path` (links followed), refused unless it is a regular file
    within `MAX_DATA_FILE_BYTES`.

    A device or a pipe has no size to check (`st_size` is 0): `/dev/zero` would be read until
    memory runs out and a FIFO would block the run, so only a regular file is read at all.
    Raises `DataError` for those, the `OSError` of `os.stat` (no such file, no permission) for
    the caller to word.
    """
    status = os.stat(path)
    _refuse_irregular(path, flag, kind, status)
    return status


def read_regular_file(path: Path, flag: str, kind: str) -> bytes:
    """The bytes of the file the user named with `flag` (`--data`, `--trace`, `--config`).

    The file is checked twice: by its path before it is opened, and on the open descriptor,
    so a file swapped for a pipe or a device in between is refused too; it is opened without
    blocking (a FIFO's open waits for a writer otherwise), and never read past the limit even
    if it grows. Raises as `regular_file_status`.
    """
    regular_file_status(path, flag, kind)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    descriptor = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        _refuse_irregular(path, flag, kind, status)
        os.set_blocking(descriptor, True)  # a regular file: reads as any other
        # Its size first, in one read; then whatever it holds beyond that (it grew, or it is a
        # file whose size says nothing, as in /proc), in bounded chunks up to the limit.
        parts = [handle.read(status.st_size)]
        total = len(parts[0])
        while total <= MAX_DATA_FILE_BYTES and (
            chunk := handle.read(min(_CHUNK_BYTES, MAX_DATA_FILE_BYTES + 1 - total))
        ):
            parts.append(chunk)
            total += len(chunk)
    if total > MAX_DATA_FILE_BYTES:
        raise DataError(
            f"{path}: the {kind} grew above the {MAX_DATA_FILE_BYTES:,} bytes assay reads while "
            "it was read (see docs/security.md)"
        )
    return parts[0] if len(parts) == 1 else b"".join(parts)


_CHUNK_BYTES: Final = 1 << 20


_IRREGULAR: Final = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_irregular(path: Path, flag: str, kind: str, status: os.stat_result) -> None:
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise DataError(f"{flag} {path}: is a folder, not a {kind}")
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _IRREGULAR if test(mode)), "a special file")
        raise DataError(f"{flag} {path}: is not a regular file ({what})")
    _refuse_above_limit(path, kind, status.st_size)


def _refuse_above_limit(path: Path, kind: str, size: int) -> None:
    if size > MAX_DATA_FILE_BYTES:
        raise DataError(
            f"{path}: the {kind} holds {size:,} bytes, above the {MAX_DATA_FILE_BYTES:,} assay "
            "reads (see docs/security.md)"
        )


def _exists(path: Path) -> None:
    try:
        regular_file_status(path, "--data", "data file")
    except FileNotFoundError:
        raise DataError(f"{path}: no such data file") from None
    except OSError as error:
        raise DataError(f"{path}: cannot read the data file: {error.strerror}") from None


def _read_text(path: Path) -> str:
    try:
        data = read_regular_file(path, "--data", "prompt file")
    except FileNotFoundError:
        raise DataError(f"{path}: no such prompt file") from None
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
                # Unnamed columns (a spreadsheet's trailing empty ones) are not compared.
                repeated = sorted({name for name in header if name and header.count(name) > 1})
                if repeated:
                    # A row's dict would keep the last column's cell and drop the other (a
                    # column no role reads goes into the request's body).
                    raise DataError(
                        f"{path}, line {line}: column {', '.join(map(repr, repeated))} given "
                        "twice in the header; keep one"
                    )
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
    "RepeatedKeyError",
    "RowReading",
    "format_of",
    "jsonl_records",
    "read_records",
    "read_regular_file",
    "regular_file_status",
    "row_reading",
    "unique_keys",
]
