"""The values of one data row: given or not, JSON or CSV text, and the checks every row shape
shares (messages, an output length, the fields sent in the request body).

Every problem is a `DataError` naming where it is (`where`: the file and the line, item or row)
and what was wrong. `from_csv` says the row's cells are all text (see `RowReading.text_cells`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import orjson
from pydantic import JsonValue

from assay.errors import DataError
from assay.spec.limits import MAX_TOKENS_PER_REQUEST
from assay.spec.source import PromptColumns


def present(value: object, from_csv: bool) -> object:
    """`value`, or None when it is not given."""
    # An empty CSV cell and a JSON null both mean "not given".
    if value is None or (from_csv and isinstance(value, str) and not value.strip()):
        return None
    return value


def parse_json_cell(value: str, where: str, column: str) -> object:
    """A CSV cell that must hold JSON (a conversation, a list of turns, an object)."""
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as error:
        raise DataError(f"{where}: {column!r} is not valid JSON: {error}") from None


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
        given = present(value, from_csv)
        if given is None:
            continue
        fields[key] = _csv_cell(given) if from_csv else _json_value(given)
    extra = present(values.get(names.extra_body), from_csv)
    if extra is not None:
        if from_csv and isinstance(extra, str):
            extra = parse_json_cell(extra, where, names.extra_body)
        if not isinstance(extra, dict):
            raise DataError(
                f"{where}: {names.extra_body!r} must be a JSON object, got {json_kind(extra)}"
            )
        fields.update({str(key): _json_value(value) for key, value in extra.items()})
    return fields


def check_messages(
    value: object, where: str, column: str, *, from_csv: bool
) -> tuple[dict[str, JsonValue], ...]:
    """A conversation: a non-empty list of `{role, content}` objects with some text in it."""
    if from_csv and isinstance(value, str):
        value = parse_json_cell(value, where, column)
    if not isinstance(value, list):
        raise DataError(
            f"{where}: {column!r} must be a list of {{role, content}} objects, "
            f"got {json_kind(value)}"
        )
    if not value:
        raise DataError(f"{where}: {column!r} is an empty list")
    checked: list[dict[str, JsonValue]] = []
    for position, message in enumerate(value):
        at = f"{where}: {column}[{position}]"
        if not isinstance(message, dict):
            raise DataError(f"{at} must be an object, got {json_kind(message)}")
        role = message.get("role")
        if not isinstance(role, str) or not role.strip():
            raise DataError(f"{at} has no text 'role'")
        content = message.get("content")
        if not isinstance(content, str | list):
            raise DataError(
                f"{at} needs a 'content' that is text or a list of parts, got {json_kind(content)}"
            )
        checked.append(message)
    if not any(message_texts(checked)):
        raise DataError(f"{where}: {column!r} holds no text in any message")
    return tuple(checked)


def message_texts(
    messages: tuple[dict[str, JsonValue], ...] | list[dict[str, JsonValue]],
) -> list[str]:
    """The non-blank texts of a conversation (text contents and text parts), in order."""
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


def check_output_tokens(value: object, where: str, column: str) -> int | None:
    """An output length: an integer (or integer text) of at least 1, or None when not given."""
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
    return within_request_limit(count, where, column)


def within_request_limit(count: int, where: str, column: str) -> int:
    """`count`, or a `DataError` when it is above the tokens one request may ask for."""
    if count > MAX_TOKENS_PER_REQUEST:
        raise DataError(
            f"{where}: {column!r} is {count:,}, above {MAX_TOKENS_PER_REQUEST:,} tokens, the most "
            "one request may ask for (see docs/security.md)"
        )
    return count


# A wide table's message names this many columns, then how many more it has.
_SHOWN_COLUMNS: Final = 12


def columns_hint(values: Mapping[str, object], role: str) -> str:
    """ "; its columns: ..." and the flag that names the column holding `role`, for the message
    about a column the row lacks (issue 38: a parquet file without `--data-column` said "no
    'prompt' in the row" and nothing about its columns).

    >>> columns_hint({"question": "q", "answer": "a"}, "prompt")
    "; the row's columns: 'question', 'answer' (--data-column prompt=COLUMN names the one to use)"
    >>> columns_hint({}, "prompt")
    '; the row has no columns'
    """
    names = [str(name) for name in values]
    if not names:
        return "; the row has no columns"
    shown = ", ".join(repr(name) for name in names[:_SHOWN_COLUMNS])
    if len(names) > _SHOWN_COLUMNS:
        shown += f" and {len(names) - _SHOWN_COLUMNS} more"
    return f"; the row's columns: {shown} (--data-column {role}=COLUMN names the one to use)"


def json_kind(value: object) -> str:
    """A JSON value's kind in words, for messages.

    >>> json_kind([1]), json_kind(None), json_kind(True)
    ('a list', 'null', 'a boolean')
    """
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


__all__ = [
    "check_messages",
    "check_output_tokens",
    "columns_hint",
    "json_kind",
    "message_texts",
    "parse_json_cell",
    "present",
    "row_fields",
    "within_request_limit",
]
