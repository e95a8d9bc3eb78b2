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
from assay.data.dataset_files import (
    arrow_records,
    hf_records,
    is_hf_spec,
    json_array_records,
    parquet_records,
)
from assay.data.request_fields import asked_limits, merge_fields
from assay.data.sharegpt import read_conversation
from assay.data.source import index_rng, request_id
from assay.data.token_count import FixedCount, TokenCount, sample_token_count
from assay.data.tokenizer import Tokenizer
from assay.data.tokenizer_spec import load_tokenizer
from assay.errors import DataError
from assay.spec.source import EXTRA_BODY_COLUMN, PromptColumns

FileFormat = Literal["jsonl", "csv", "json", "parquet", "arrow", "hf"]

_FORMATS: Final[dict[str, FileFormat]] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".arrow": "arrow",
}
# Prompt files pass a row's other keys into its request body; datasets (many columns of
# metadata) use only the mapped columns, and the run's notes name the ones left unused.
_PASS_THROUGH: Final = frozenset({"jsonl", "csv"})
_UNIT: Final[dict[FileFormat, str]] = {
    "jsonl": "line",
    "csv": "line",
    "json": "item",
    "parquet": "row",
    "arrow": "row",
    "hf": "row",
}


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One user turn of a session, with its own output target when the data gives one."""

    text: str
    output_tokens: int | None


class FileSourceConfig(BaseModel):
    """A prompt file and how to turn its rows into requests.

    `output_tokens` is used for rows without their own output length; `tokenizer`, when set,
    counts each prompt at load time (otherwise the count is left to the server's usage).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["file"] = "file"
    # A file, or `hf:NAME_OR_PATH[:SPLIT]` for a Hugging Face dataset.
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
    # A session's user turns (a ShareGPT conversation or a `turns` list), in order.
    turns: tuple[TurnRow, ...] = ()
    system: str | None = None


@dataclass(frozen=True, slots=True)
class FileSource:
    """The rows of one prompt file; request `i` is row `i % size()`, so a long run cycles.

    Build it with `FileSource.load(config)`; the rows travel with it when it is pickled, so
    worker processes do not read the file again.
    """

    config: FileSourceConfig
    rows: tuple[PromptRow, ...]
    notes: tuple[str, ...] = ()

    @classmethod
    def load(cls, config: FileSourceConfig) -> FileSource:
        """Read and check the whole file now, so a bad row fails before the run starts."""
        file_format = config.format or _format_of(config.path)
        return cls.from_records(config, _records(config, file_format), file_format)

    @classmethod
    def from_records(
        cls,
        config: FileSourceConfig,
        records: list[tuple[int, Mapping[str, object]]],
        file_format: FileFormat = "jsonl",
    ) -> FileSource:
        """Check rows already read (numbered by line, item or row) as a prompt file's rows."""
        tokenizer = load_tokenizer(config.tokenizer) if config.tokenizer is not None else None
        check = _RowCheck(config, file_format, tokenizer)
        rows = tuple(
            row for line, values in records if (row := check.row(values, line)) is not None
        )
        if not rows:
            raise DataError(f"{config.path}: no prompts in the file")
        return cls(config=config, rows=rows, notes=check.notes())

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
        fields = config.extra_body if extra is None else extra
        if fields:
            output_tokens, ignore_eos = asked_limits(
                config.endpoint, fields, output_tokens, ignore_eos
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


def _records(
    config: FileSourceConfig, file_format: FileFormat
) -> list[tuple[int, Mapping[str, object]]]:
    path = config.path
    match file_format:
        case "jsonl":
            return jsonl_records(_read_text(path), path)
        case "csv":
            return _csv_records(_read_text(path), path, config.columns)
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


def _exists(path: Path) -> None:
    if not path.is_file():
        raise DataError(f"{path}: no such data file")


class _RowCheck:
    """Checks rows one by one and keeps what the run's notes should say about them."""

    def __init__(
        self, config: FileSourceConfig, file_format: FileFormat, tokenizer: Tokenizer | None
    ) -> None:
        self.config = config
        self.from_csv = file_format == "csv"
        self.pass_through = file_format in _PASS_THROUGH
        self.unit = _UNIT[file_format]
        self.tokenizer = tokenizer
        self.unused: dict[str, None] = {}
        self.skipped = 0

    def row(self, values: Mapping[str, object], line: int) -> PromptRow | None:
        where = f"{self.config.path}, {self.unit} {line}"
        names = self.config.columns
        if not self.pass_through:
            self.unused.update(dict.fromkeys(k for k in values if k not in names.interpreted()))
        conversation = _present(values.get(names.conversations), self.from_csv)
        if conversation is not None:
            row = self._sharegpt_row(values, conversation, line, where)
            if row is None:
                self.skipped += 1
            return row
        turns_value = _present(values.get(names.turns), self.from_csv)
        if turns_value is not None:
            return self._turns_row(values, turns_value, line, where)
        return _check_row(
            values,
            line,
            where,
            self.config,
            self.tokenizer,
            from_csv=self.from_csv,
            pass_through=self.pass_through,
        )

    def notes(self) -> tuple[str, ...]:
        notes: list[str] = []
        if self.skipped:
            notes.append(f"data: {self.skipped} conversations without a user turn were not used")
        if self.unused:
            notes.append(f"data: columns not used: {', '.join(self.unused)}")
        return tuple(notes)

    def _sharegpt_row(
        self, values: Mapping[str, object], value: object, line: int, where: str
    ) -> PromptRow | None:
        config, names = self.config, self.config.columns
        if self.from_csv and isinstance(value, str):
            value = _parse_json_cell(value, where, names.conversations)
        conversation = read_conversation(value, where, names.conversations)
        if not conversation.exchanges:
            return None
        counter = self.tokenizer or load_tokenizer(None)
        turns = tuple(
            TurnRow(
                text=exchange.user,
                output_tokens=(
                    counter.count(exchange.recorded_answer) or None
                    if exchange.recorded_answer is not None
                    else None
                ),
            )
            for exchange in conversation.exchanges
        )
        first = turns[0]
        given = _check_output_tokens(
            _present(values.get(names.output_tokens), self.from_csv), where, names.output_tokens
        )
        messages: tuple[dict[str, JsonValue], ...] | None = None
        if config.endpoint is Endpoint.chat:
            messages = _opening(conversation.system, first.text)
        prompt_tokens = None
        if self.tokenizer is not None:
            texts = (
                [first.text] if conversation.system is None else [conversation.system, first.text]
            )
            prompt_tokens = sum(self.tokenizer.count(text) for text in texts)
        return PromptRow(
            line=line,
            prompt=None if messages is not None else first.text,
            messages=messages,
            output_tokens=given if given is not None else first.output_tokens,
            prompt_tokens=prompt_tokens,
            extra_body=row_fields(
                values, where, names, from_csv=self.from_csv, pass_through=self.pass_through
            ),
            turns=turns,
            system=conversation.system,
        )

    def _turns_row(
        self, values: Mapping[str, object], value: object, line: int, where: str
    ) -> PromptRow:
        names = self.config.columns
        if self.from_csv and isinstance(value, str):
            value = _parse_json_cell(value, where, names.turns)
        if not isinstance(value, list) or not value:
            raise DataError(f"{where}: {names.turns!r} must be a non-empty list of user turns")
        turns: list[TurnRow] = []
        for position, turn in enumerate(value):
            at = f"{where}: {names.turns}[{position}]"
            output: int | None = None
            if isinstance(turn, dict):
                text = turn.get("content", turn.get(names.prompt))
                output = _check_output_tokens(turn.get(names.output_tokens), at, "output_tokens")
            else:
                text = turn
            if not isinstance(text, str) or not text.strip():
                raise DataError(
                    f"{at} must be text, or an object with a text 'content' (and optional "
                    f"'output_tokens')"
                )
            turns.append(TurnRow(text=text, output_tokens=output))
        first = turns[0]
        chat = self.config.endpoint is Endpoint.chat
        return PromptRow(
            line=line,
            prompt=None if chat else first.text,
            messages=_opening(None, first.text) if chat else None,
            output_tokens=first.output_tokens,
            prompt_tokens=None,
            extra_body=row_fields(
                values, where, names, from_csv=self.from_csv, pass_through=self.pass_through
            ),
            turns=tuple(turns),
        )


def _opening(system: str | None, user: str) -> tuple[dict[str, JsonValue], ...]:
    first: dict[str, JsonValue] = {"role": "user", "content": user}
    if system is None:
        return (first,)
    return ({"role": "system", "content": system}, first)


def _parse_json_cell(value: str, where: str, column: str) -> object:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as error:
        raise DataError(f"{where}: {column!r} is not valid JSON: {error}") from None


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
    if is_hf_spec(path):
        return "hf"
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        known = ", ".join(sorted(_FORMATS))
        shown = repr(suffix) if suffix else "no extension"
        raise DataError(f"{path}: unknown prompt file type ({shown}); use one of {known}")
    return _FORMATS[suffix]


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
    where: str,
    config: FileSourceConfig,
    tokenizer: Tokenizer | None,
    *,
    from_csv: bool,
    pass_through: bool,
) -> PromptRow:
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
        extra_body=row_fields(values, where, names, from_csv=from_csv, pass_through=pass_through),
    )


def row_fields(
    values: Mapping[str, object],
    where: str,
    names: PromptColumns,
    *,
    from_csv: bool,
    pass_through: bool = True,
) -> dict[str, JsonValue]:
    """The fields of a row that go into its request body: with `pass_through`, every key assay
    does not interpret (a CSV cell is read as JSON when it parses as JSON, else as text; an
    empty cell is not given); then the object of the `extra_body` column over them."""
    interpreted = names.interpreted()
    fields: dict[str, JsonValue] = {}
    for key, value in values.items():
        if key in interpreted or not pass_through:
            continue
        present = _present(value, from_csv)
        if present is None:
            continue
        fields[key] = _csv_cell(present) if from_csv else _json_value(present)
    extra = _present(values.get(names.extra_body), from_csv)
    if extra is not None:
        if from_csv and isinstance(extra, str):
            extra = _parse_json_cell(extra, where, names.extra_body)
        if not isinstance(extra, dict):
            raise DataError(
                f"{where}: {names.extra_body!r} must be a JSON object, got {_json_kind(extra)}"
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


__all__ = [
    "EXTRA_BODY_COLUMN",
    "FileFormat",
    "FileSource",
    "FileSourceConfig",
    "PromptColumns",
    "PromptRow",
    "TurnRow",
]
