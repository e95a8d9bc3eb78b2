"""Requests from a prompt file: JSONL or CSV rows, loaded and checked once, served by index.

Every bad row stops the load with a `DataError` naming the file, the line and what was wrong;
no row is skipped silently (blank lines are not rows). No field is dropped either: a row's keys
other than the prompt, messages and output-length columns go into that request's body (as does
the object of an `extra_body` key, over them), overriding the run's own request fields.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, JsonValue

from assay.core import Endpoint, GenerationRequest
from assay.data.request_fields import asked_limits, merge_fields
from assay.data.source import index_rng, request_id
from assay.data.token_count import FixedCount, TokenCount, sample_token_count
from assay.data.tokenizer import Tokenizer
from assay.data.tokenizer_spec import load_tokenizer
from assay.errors import DataError

FileFormat = Literal["jsonl", "csv"]

_FORMATS: Final[dict[str, FileFormat]] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}

EXTRA_BODY_COLUMN: Final = "extra_body"
"""A row key whose JSON object is merged into that request's body."""


class PromptColumns(BaseModel):
    """Which JSONL keys or CSV columns hold the prompt, the chat messages and the output length."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str = "prompt"
    messages: str = "messages"
    output_tokens: str = "output_tokens"


class FileSourceConfig(BaseModel):
    """A prompt file and how to turn its rows into requests.

    `output_tokens` is used for rows without their own output length; `tokenizer`, when set,
    counts each prompt at load time (otherwise the count is left to the server's usage).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["file"] = "file"
    path: Path
    format: FileFormat | None = None
    endpoint: Endpoint = Endpoint.chat
    model: str
    columns: PromptColumns = PromptColumns()
    output_tokens: TokenCount = FixedCount(value=128)
    ignore_eos: bool = False
    stream: bool = True
    seed: int = 0
    tokenizer: str | None = None
    extra_body: dict[str, JsonValue] = {}


@dataclass(frozen=True, slots=True)
class PromptRow:
    """One checked row: a prompt text or a conversation, and the facts given beside it."""

    line: int
    prompt: str | None
    messages: tuple[dict[str, JsonValue], ...] | None
    output_tokens: int | None
    prompt_tokens: int | None
    extra_body: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class FileSource:
    """The rows of one prompt file; request `i` is row `i % size()`, so a long run cycles.

    Build it with `FileSource.load(config)`; the rows travel with it when it is pickled, so
    worker processes do not read the file again.
    """

    config: FileSourceConfig
    rows: tuple[PromptRow, ...]

    @classmethod
    def load(cls, config: FileSourceConfig) -> FileSource:
        """Read and check the whole file now, so a bad row fails before the run starts."""
        text = _read_text(config.path)
        file_format = config.format or _format_of(config.path)
        if file_format == "jsonl":
            records = _jsonl_records(text, config.path)
        else:
            records = _csv_records(text, config.path, config.columns)
        tokenizer = load_tokenizer(config.tokenizer) if config.tokenizer is not None else None
        rows = tuple(
            _check_row(values, line, config, tokenizer, from_csv=file_format == "csv")
            for line, values in records
        )
        if not rows:
            raise DataError(f"{config.path}: no prompts in the file")
        return cls(config=config, rows=rows)

    def size(self) -> int | None:
        """The number of rows."""
        return len(self.rows)

    def body_fields(self) -> list[str]:
        """The row fields sent in request bodies, in first-seen order (for the run's notes)."""
        seen: dict[str, None] = {}
        for row in self.rows:
            seen.update(dict.fromkeys(row.extra_body))
        return list(seen)

    def request(self, index: int) -> GenerationRequest:
        """The request at `index`: row `index % size()`, with the index's own request id."""
        row = self.rows[index % len(self.rows)]
        config = self.config
        output_tokens: int | None = None
        if config.endpoint is not Endpoint.embeddings:
            output_tokens = row.output_tokens
            if output_tokens is None:
                output_tokens = sample_token_count(
                    config.output_tokens, index_rng(config.seed, index)
                )
        messages = row.messages
        prompt = row.prompt
        if config.endpoint is Endpoint.chat and messages is None:
            messages = ({"role": "user", "content": prompt},)
            prompt = None
        extra = merge_fields(config.extra_body, row.extra_body) if row.extra_body else None
        ignore_eos = config.ignore_eos
        if extra is not None:
            output_tokens, ignore_eos = asked_limits(
                config.endpoint, extra, output_tokens, ignore_eos
            )
        return GenerationRequest(
            request_id=request_id(index),
            endpoint=config.endpoint,
            model=config.model,
            prompt=prompt,
            messages=messages,
            max_output_tokens=output_tokens,
            ignore_eos=ignore_eos,
            stream=config.stream and config.endpoint is not Endpoint.embeddings,
            prompt_tokens=row.prompt_tokens,
            extra_body=config.extra_body if extra is None else extra,
        )


def _read_text(path: Path) -> str:
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


def _format_of(path: Path) -> FileFormat:
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        known = ", ".join(sorted(_FORMATS))
        shown = repr(suffix) if suffix else "no extension"
        raise DataError(f"{path}: unknown prompt file type ({shown}); use one of {known}")
    return _FORMATS[suffix]


def _jsonl_records(text: str, path: Path) -> list[tuple[int, Mapping[str, object]]]:
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
            raise DataError(f"{path}, line {line}: expected a JSON object, got {_json_kind(value)}")
        records.append((line, value))
    return records


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
                if columns.prompt not in header and columns.messages not in header:
                    raise DataError(
                        f"{path}, line {line}: no {columns.prompt!r} or {columns.messages!r} "
                        f"column in the header (columns: {', '.join(header)})"
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


def _check_row(
    values: Mapping[str, object],
    line: int,
    config: FileSourceConfig,
    tokenizer: Tokenizer | None,
    *,
    from_csv: bool,
) -> PromptRow:
    where = f"{config.path}, line {line}"
    names = config.columns
    prompt = _present(values.get(names.prompt), from_csv)
    messages_value = _present(values.get(names.messages), from_csv)
    messages: tuple[dict[str, JsonValue], ...] | None = None
    if messages_value is not None and (config.endpoint is Endpoint.chat or prompt is None):
        if config.endpoint is not Endpoint.chat:
            raise DataError(
                f"{where}: {names.messages!r} needs the chat endpoint, and the row has no "
                f"{names.prompt!r} for the {config.endpoint.value} endpoint"
            )
        messages = _check_messages(messages_value, where, names.messages, from_csv=from_csv)
        prompt = None
    elif prompt is None and isinstance(values.get(names.prompt), str):
        raise DataError(f"{where}: empty prompt in {names.prompt!r}")
    elif prompt is None:
        raise DataError(f"{where}: no {names.prompt!r} (or {names.messages!r}) in the row")
    elif not isinstance(prompt, str):
        raise DataError(f"{where}: {names.prompt!r} must be text, got {_json_kind(prompt)}")
    elif not prompt.strip():
        raise DataError(f"{where}: empty prompt in {names.prompt!r}")
    output_tokens = _check_output_tokens(
        _present(values.get(names.output_tokens), from_csv), where, names.output_tokens
    )
    prompt_tokens: int | None = None
    if tokenizer is not None:
        texts = [prompt] if isinstance(prompt, str) else _message_texts(messages or ())
        prompt_tokens = sum(tokenizer.count(text) for text in texts)
    return PromptRow(
        line=line,
        prompt=prompt if isinstance(prompt, str) else None,
        messages=messages,
        output_tokens=output_tokens,
        prompt_tokens=prompt_tokens,
        extra_body=row_fields(values, where, names, from_csv=from_csv),
    )


def row_fields(
    values: Mapping[str, object], where: str, names: PromptColumns, *, from_csv: bool
) -> dict[str, JsonValue]:
    """The fields of a row that go into its request body: every key assay does not interpret
    (a CSV cell is read as JSON when it parses as JSON, else as text; an empty cell is not
    given), then the object of an `extra_body` key over them."""
    interpreted = {names.prompt, names.messages, names.output_tokens, EXTRA_BODY_COLUMN}
    fields: dict[str, JsonValue] = {}
    for key, value in values.items():
        if key in interpreted:
            continue
        present = _present(value, from_csv)
        if present is None:
            continue
        fields[key] = _csv_cell(present) if from_csv else _json_value(present)
    extra = _present(values.get(EXTRA_BODY_COLUMN), from_csv)
    if extra is not None:
        if from_csv and isinstance(extra, str):
            try:
                extra = orjson.loads(extra)
            except orjson.JSONDecodeError as error:
                raise DataError(
                    f"{where}: {EXTRA_BODY_COLUMN!r} is not valid JSON: {error}"
                ) from None
        if not isinstance(extra, dict):
            raise DataError(
                f"{where}: {EXTRA_BODY_COLUMN!r} must be a JSON object, got {_json_kind(extra)}"
            )
        fields.update({str(key): _json_value(value) for key, value in extra.items()})
    return fields


def _csv_cell(value: object) -> JsonValue:
    # "0.2" is the number 0.2, "true" a boolean, '{"type": "json_object"}' an object; a cell
    # that is not JSON ("stop here") is text.
    assert isinstance(value, str), "csv cells are text"
    try:
        parsed: JsonValue = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
    return parsed


def _json_value(value: object) -> JsonValue:
    # Everything here came out of orjson.loads (or is a CSV cell, text): JSON by construction.
    return value  # type: ignore[return-value]  # orjson.loads returns Any-typed JSON values


def _present(value: object, from_csv: bool) -> object:
    # An empty CSV cell and a JSON null both mean "not given".
    if value is None or (from_csv and isinstance(value, str) and not value.strip()):
        return None
    return value


def _check_messages(
    value: object, where: str, column: str, *, from_csv: bool
) -> tuple[dict[str, JsonValue], ...]:
    if from_csv and isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as error:
            raise DataError(f"{where}: {column!r} is not valid JSON: {error}") from None
    if not isinstance(value, list):
        raise DataError(
            f"{where}: {column!r} must be a list of {{role, content}} objects, "
            f"got {_json_kind(value)}"
        )
    if not value:
        raise DataError(f"{where}: {column!r} is an empty list")
    checked: list[dict[str, JsonValue]] = []
    for position, message in enumerate(value):
        at = f"{where}: {column}[{position}]"
        if not isinstance(message, dict):
            raise DataError(f"{at} must be an object, got {_json_kind(message)}")
        role = message.get("role")
        if not isinstance(role, str) or not role.strip():
            raise DataError(f"{at} has no text 'role'")
        content = message.get("content")
        if not isinstance(content, str | list):
            raise DataError(
                f"{at} needs a 'content' that is text or a list of parts, got {_json_kind(content)}"
            )
        checked.append(message)
    if not any(_message_texts(checked)):
        raise DataError(f"{where}: {column!r} holds no text in any message")
    return tuple(checked)


def _message_texts(
    messages: tuple[dict[str, JsonValue], ...] | list[dict[str, JsonValue]],
) -> list[str]:
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in content:
                text = part.get("text") if isinstance(part, dict) else None
                if isinstance(text, str):
                    texts.append(text)
    return [text for text in texts if text.strip()]


def _check_output_tokens(value: object, where: str, column: str) -> int | None:
    if value is None:
        return None
    count: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif isinstance(value, str):
        try:
            count = int(value.strip())
        except ValueError:
            count = None
    if count is None:
        raise DataError(f"{where}: {column!r} must be an integer, got {value!r}")
    if count < 1:
        raise DataError(f"{where}: {column!r} must be at least 1, got {count}")
    return count


def _json_kind(value: object) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "text"
        case list():
            return "a list"
        case dict():
            return "an object"
        case _:
            return type(value).__name__


__all__ = ["FileFormat", "FileSource", "FileSourceConfig", "PromptColumns", "PromptRow"]
