"""The rows of a data file, checked: the shapes a row takes and the `PromptRow` of each.

A row holds a prompt text or a conversation (`messages`), a ShareGPT conversation (its user
turns; the first opens the request, all of them make a session), a list of user turns, or, for
rerank and score, a query (`query`, else `prompt`) and its `documents`. Every
bad row stops the load with a `DataError` naming the file, the line and what was wrong; no row is
skipped silently, except a conversation without a user turn, which the run's notes count. No field
is dropped either: a row's keys other than the prompt, messages and output-length columns go into
that request's body (as does the object of an `extra_body` key, over them).

A ShareGPT conversation (`{"conversations": [{"from": "human"|"gpt", "value": ...}, ...]}`)
reads as its system prompt (if any) and its exchanges: each user turn with the answer recorded
after it. Single-turn use sends the first user turn and takes the recorded answer's length as the
output target; multi-turn use sends every user turn in order, each with the answers the server
really gave (the recorded ones are never sent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from pydantic import JsonValue

from assay.core import Endpoint
from assay.data.file_formats import FileFormat, row_reading
from assay.data.local_media import LocalMedia
from assay.data.media import MediaError, dataset_image_url, image_part
from assay.data.row_values import (
    check_messages,
    check_output_tokens,
    columns_hint,
    json_kind,
    message_texts,
    parse_json_cell,
    present,
    row_fields,
)
from assay.data.source import NO_AUDIO
from assay.data.tokenizer import Tokenizer
from assay.data.tokenizer_spec import load_tokenizer
from assay.errors import DataError
from assay.spec.endpoint import Carries
from assay.spec.limits import MAX_IMAGES_PER_REQUEST, MAX_MEDIA_BYTES_PER_REQUEST, MAX_TURNS
from assay.spec.source import PromptColumns


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One user turn of a session, with its own output target when the data gives one."""

    text: str
    output_tokens: int | None


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
    # Rerank and score: the documents judged against the query (`prompt`).
    documents: tuple[str, ...] | None = None
    # The row's images as the URLs sent (`data:` URLs of its files), in its last user message.
    images: tuple[str, ...] = ()
    # The model the row names (its `model` column); None: the run's model or mix.
    model: str | None = None


class RowCheck:
    """Checks the rows of one file one by one and keeps what the run's notes should say about
    them. A row's conversation becomes its `messages` where the endpoint's body carries them,
    else the row's first user text is its prompt."""

    def __init__(
        self,
        path: Path,
        columns: PromptColumns,
        endpoint: Endpoint,
        file_format: FileFormat,
        tokenizer: Tokenizer | None,
        media: LocalMedia | None = None,
    ) -> None:
        self.path = path
        # Local images: relative to the file's folder, read only inside it unless told more.
        self.media = media or LocalMedia(path.parent, [path.parent])
        self.columns = columns
        self.endpoint = endpoint
        reading = row_reading(file_format)
        self.from_csv = reading.text_cells
        self.pass_through = reading.pass_through
        self.unit = reading.unit
        self.tokenizer = tokenizer
        self.unused: dict[str, None] = {}
        self.skipped = 0
        self.takes_documents = False
        match endpoint.traits.carries:
            case Carries.messages:
                self.takes_messages = True
            case Carries.prompt | Carries.inputs:
                self.takes_messages = False
            case Carries.documents:
                self.takes_messages = False
                self.takes_documents = True
            case Carries.audio:
                raise DataError(NO_AUDIO)

    def row(self, values: Mapping[str, object], line: int) -> PromptRow | None:
        """The checked row, or None for a conversation without a user turn (counted); a row
        naming its model (the `model` column) is sent to that model."""
        row = self._row(values, line)
        named = present(values.get(self.columns.model), self.from_csv)
        if row is None or named is None:
            return row
        if not isinstance(named, str) or not named.strip():
            where = f"{self.path}, {self.unit} {line}"
            raise DataError(
                f"{where}: {self.columns.model!r} must be a model name (text), got "
                f"{json_kind(named) if not isinstance(named, str) else 'blank text'}"
            )
        return replace(row, model=named.strip())

    def _row(self, values: Mapping[str, object], line: int) -> PromptRow | None:
        where = f"{self.path}, {self.unit} {line}"
        names = self.columns
        if not self.pass_through:
            self.unused.update(dict.fromkeys(k for k in values if k not in names.interpreted()))
        if self.takes_documents:
            return self._documents_row(values, line, where)
        # Only rerank and score read these roles: elsewhere they are named, not dropped unseen.
        self.unused.update(
            dict.fromkeys(
                k for k in (names.query, names.documents) if present(values.get(k), self.from_csv)
            )
        )
        conversation = present(values.get(names.conversations), self.from_csv)
        row: PromptRow | None
        if conversation is not None:
            row = self._sharegpt_row(values, conversation, line, where)
            if row is None:
                self.skipped += 1
                return None
        else:
            turns_value = present(values.get(names.turns), self.from_csv)
            if turns_value is not None:
                row = self._turns_row(values, turns_value, line, where)
            else:
                row = self._prompt_row(values, line, where)
        images = self._images(values, where)
        if not images:
            return row
        if not self.takes_messages:
            raise DataError(
                f"{where}: the row has images, which go in chat messages (--endpoint chat), "
                f"not to the {self.endpoint.value} endpoint"
            )
        messages = row.messages
        if messages is None:
            messages = ({"role": "user", "content": row.prompt or ""},)
        return replace(row, prompt=None, images=images, messages=with_images(messages, images))

    def _images(self, values: Mapping[str, object], where: str) -> tuple[str, ...]:
        """The URLs of the row's images (its `images` and LLaVA `image`), each checked."""
        names = self.columns
        found: list[str] = []
        for column in (names.images, names.image):
            value = present(values.get(column), self.from_csv)
            if value is None:
                continue
            if self.from_csv and isinstance(value, str) and value.lstrip().startswith("["):
                value = parse_json_cell(value, where, column)
            items = value if isinstance(value, list) else [value]
            for position, item in enumerate(items):
                at = f"{column}[{position}]" if isinstance(value, list) else column
                if not isinstance(item, str) or not item.strip():
                    raise DataError(
                        f"{where}: {at} must be a file path, an http(s) URL or a data: URL"
                    )
                if len(found) >= MAX_IMAGES_PER_REQUEST:
                    raise DataError(
                        f"{where}: the row names more than {MAX_IMAGES_PER_REQUEST} images, the "
                        "most one request may carry (see docs/security.md)"
                    )
                try:
                    found.append(dataset_image_url(item, self.media))
                except MediaError as error:
                    raise DataError(f"{where}: {at}: {error}") from None
        total = sum(len(url) for url in found if url.startswith("data:"))
        if total > MAX_MEDIA_BYTES_PER_REQUEST:
            raise DataError(
                f"{where}: the row's images come to {total:,} bytes as sent, above the "
                f"{MAX_MEDIA_BYTES_PER_REQUEST:,} one request may carry (see docs/security.md)"
            )
        return tuple(found)

    def _fields(self, values: Mapping[str, object], where: str) -> dict[str, JsonValue]:
        return row_fields(
            values, where, self.columns, from_csv=self.from_csv, pass_through=self.pass_through
        )

    def notes(self) -> tuple[str, ...]:
        """What the run's notes say about the rows checked so far."""
        notes: list[str] = []
        if self.skipped:
            some = "conversations" if self.skipped != 1 else "conversation"
            were = "were" if self.skipped != 1 else "was"
            notes.append(f"data: {self.skipped} {some} without a user turn {were} not used")
        if self.unused:
            notes.append(f"data: columns not used: {', '.join(self.unused)}")
        return tuple(notes)

    def _prompt_row(self, values: Mapping[str, object], line: int, where: str) -> PromptRow:
        names = self.columns
        from_csv = self.from_csv
        prompt = present(values.get(names.prompt), from_csv)
        messages_value = present(values.get(names.messages), from_csv)
        messages: tuple[dict[str, JsonValue], ...] | None = None
        if messages_value is not None and (self.takes_messages or prompt is None):
            if not self.takes_messages:
                raise DataError(
                    f"{where}: {names.messages!r} needs the chat endpoint, and the row has no "
                    f"{names.prompt!r} for the {self.endpoint.value} endpoint"
                )
            messages = check_messages(messages_value, where, names.messages, from_csv=from_csv)
            prompt = None
        elif prompt is None and isinstance(values.get(names.prompt), str):
            raise DataError(f"{where}: empty prompt in {names.prompt!r}")
        elif prompt is None:
            raise DataError(
                f"{where}: no {names.prompt!r} (or {names.messages!r}) in the row"
                + columns_hint(values, "prompt")
            )
        elif not isinstance(prompt, str):
            raise DataError(f"{where}: {names.prompt!r} must be text, got {json_kind(prompt)}")
        elif not prompt.strip():
            raise DataError(f"{where}: empty prompt in {names.prompt!r}")
        output_tokens = check_output_tokens(
            present(values.get(names.output_tokens), from_csv), where, names.output_tokens
        )
        prompt_tokens: int | None = None
        if self.tokenizer is not None:
            texts = [prompt] if isinstance(prompt, str) else message_texts(messages or ())
            prompt_tokens = sum(self.tokenizer.count(text) for text in texts)
        return PromptRow(
            line=line,
            prompt=prompt if isinstance(prompt, str) else None,
            messages=messages,
            output_tokens=output_tokens,
            prompt_tokens=prompt_tokens,
            extra_body=self._fields(values, where),
        )

    def _documents_row(self, values: Mapping[str, object], line: int, where: str) -> PromptRow:
        """A rerank or score row: a text query (the `query` column, else `prompt`) and a
        non-empty list of text documents."""
        names = self.columns
        from_csv = self.from_csv
        column = names.query
        query = present(values.get(column), from_csv)
        if query is None:
            column = names.prompt
            query = present(values.get(column), from_csv)
        if query is None:
            raise DataError(f"{where}: no {names.query!r} (or {names.prompt!r}) in the row")
        if not isinstance(query, str):
            raise DataError(f"{where}: {column!r} must be text, got {json_kind(query)}")
        if not query.strip():
            raise DataError(f"{where}: empty query in {column!r}")
        documents = check_documents(
            present(values.get(names.documents), from_csv), where, names.documents, from_csv
        )
        prompt_tokens: int | None = None
        if self.tokenizer is not None:
            prompt_tokens = sum(self.tokenizer.count(text) for text in (query, *documents))
        return PromptRow(
            line=line,
            prompt=query,
            messages=None,
            output_tokens=None,
            prompt_tokens=prompt_tokens,
            extra_body=self._fields(values, where),
            documents=documents,
        )

    def _sharegpt_row(
        self, values: Mapping[str, object], value: object, line: int, where: str
    ) -> PromptRow | None:
        names = self.columns
        if self.from_csv and isinstance(value, str):
            value = parse_json_cell(value, where, names.conversations)
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
        given = check_output_tokens(
            present(values.get(names.output_tokens), self.from_csv), where, names.output_tokens
        )
        messages: tuple[dict[str, JsonValue], ...] | None = None
        if self.takes_messages:
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
            extra_body=self._fields(values, where),
            turns=turns,
            system=conversation.system,
        )

    def _turns_row(
        self, values: Mapping[str, object], value: object, line: int, where: str
    ) -> PromptRow:
        names = self.columns
        if self.from_csv and isinstance(value, str):
            value = parse_json_cell(value, where, names.turns)
        if not isinstance(value, list) or not value:
            raise DataError(f"{where}: {names.turns!r} must be a non-empty list of user turns")
        if len(value) > MAX_TURNS:
            raise DataError(
                f"{where}: {names.turns!r} holds {len(value):,} turns, above the {MAX_TURNS:,} "
                "one session may have (see docs/security.md)"
            )
        turns: list[TurnRow] = []
        for position, turn in enumerate(value):
            at = f"{where}: {names.turns}[{position}]"
            output: int | None = None
            if isinstance(turn, dict):
                text = turn.get("content", turn.get(names.prompt))
                output = check_output_tokens(turn.get(names.output_tokens), at, "output_tokens")
            else:
                text = turn
            if not isinstance(text, str) or not text.strip():
                raise DataError(
                    f"{at} must be text, or an object with a text 'content' (and optional "
                    f"'output_tokens')"
                )
            turns.append(TurnRow(text=text, output_tokens=output))
        first = turns[0]
        takes_messages = self.takes_messages
        return PromptRow(
            line=line,
            prompt=None if takes_messages else first.text,
            messages=_opening(None, first.text) if takes_messages else None,
            output_tokens=first.output_tokens,
            prompt_tokens=None,
            extra_body=self._fields(values, where),
            turns=tuple(turns),
        )


def check_documents(value: object, where: str, column: str, from_csv: bool) -> tuple[str, ...]:
    """The documents of a rerank or score row: a non-empty list of non-blank texts (in a CSV
    cell, that list as JSON)."""
    if value is None:
        raise DataError(f"{where}: no {column!r} in the row (rerank and score need documents)")
    if from_csv and isinstance(value, str):
        value = parse_json_cell(value, where, column)
    if not isinstance(value, list) or not value:
        raise DataError(
            f"{where}: {column!r} must be a non-empty list of texts, got {json_kind(value)}"
        )
    for position, document in enumerate(value):
        if not isinstance(document, str) or not document.strip():
            got = "blank text" if isinstance(document, str) else json_kind(document)
            raise DataError(f"{where}: {column}[{position}] must be a non-blank text, got {got}")
    return tuple(value)


_USER: Final = frozenset({"human", "user"})
_ASSISTANT: Final = frozenset({"gpt", "assistant", "chatgpt", "bard", "bing", "model"})
_SYSTEM: Final = frozenset({"system"})


@dataclass(frozen=True, slots=True)
class Exchange:
    """One user turn and the answer recorded after it (None when the conversation ends)."""

    user: str
    recorded_answer: str | None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A checked ShareGPT conversation."""

    system: str | None
    exchanges: tuple[Exchange, ...]


def read_conversation(value: object, where: str, column: str) -> Conversation:
    """The system prompt and exchanges of one `conversations` value; a malformed one is a
    `DataError` naming `where`.

    >>> c = read_conversation([{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"},
    ...                        {"from": "human", "value": "Bye"}], "f, item 1", "conversations")
    >>> [(e.user, e.recorded_answer) for e in c.exchanges]
    [('Hi', 'Hello'), ('Bye', None)]
    """
    if not isinstance(value, list):
        raise DataError(f"{where}: {column!r} must be a list of {{from, value}} turns")
    system: str | None = None
    users: list[str] = []
    answers: dict[int, str] = {}
    for position, turn in enumerate(value):
        at = f"{where}: {column}[{position}]"
        if not isinstance(turn, dict):
            raise DataError(f"{at} must be an object with 'from' and 'value'")
        role = turn.get("from", turn.get("role"))
        text = turn.get("value", turn.get("content"))
        if not isinstance(role, str):
            raise DataError(f"{at} has no text 'from'")
        if not isinstance(text, str):
            raise DataError(f"{at} has no text 'value'")
        role = role.strip().lower()
        if role in _SYSTEM:
            system = text if system is None else f"{system}\n{text}"
        elif role in _USER:
            users.append(text)
        elif role in _ASSISTANT:
            # An answer belongs to the user turn before it; one before any user turn is context
            # the dataset opened with, and is not a target of anything sent.
            if users and len(users) - 1 not in answers:
                answers[len(users) - 1] = text
        else:
            known = ", ".join(sorted(_USER | _ASSISTANT | _SYSTEM))
            raise DataError(f"{at}: unknown speaker {role!r} (known: {known})")
    exchanges = tuple(
        Exchange(user=text, recorded_answer=answers.get(index))
        for index, text in enumerate(users)
        if text.strip()
    )
    return Conversation(system=system, exchanges=exchanges)


def with_images(
    messages: tuple[dict[str, JsonValue], ...], images: tuple[str, ...]
) -> tuple[dict[str, JsonValue], ...]:
    """`messages` with `images` added to the last user message, as `image_url` parts after its
    text (LLaVA's `<image>` placeholder is taken out of the text: the parts place the images).

    >>> message = {"role": "user", "content": "<image>\\nWhat is it?"}
    >>> [part["type"] for part in with_images((message,), ("https://x/a.png",))[0]["content"]]
    ['text', 'image_url']
    """
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        parts: list[JsonValue]
        if isinstance(content, str):
            text = content.replace("<image>", "").strip()
            parts = [{"type": "text", "text": text}]
        elif isinstance(content, list):
            parts = list(content)
        else:
            parts = []
        parts.extend(image_part(url) for url in images)
        updated: dict[str, JsonValue] = {**message, "content": parts}
        return (*messages[:position], updated, *messages[position + 1 :])
    raise DataError("a row with images has no user message to carry them")


def _opening(system: str | None, user: str) -> tuple[dict[str, JsonValue], ...]:
    first: dict[str, JsonValue] = {"role": "user", "content": user}
    if system is None:
        return (first,)
    return ({"role": "system", "content": system}, first)


__all__ = ["PromptRow", "RowCheck", "TurnRow", "with_images"]
