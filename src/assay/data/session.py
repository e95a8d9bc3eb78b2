"""Multi-turn sessions: a list of user turns whose next request depends on the previous answer.

A session's turn k+1 carries the conversation so far, with the assistant text the server really
returned for turns 1..k (never a recorded answer), so prefix caching is exercised as in
production. Sessions come from data rows with turns (a ShareGPT conversation with
`--multi-turn`, a JSONL `turns` list) or are synthetic (N turns of sampled length).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, overload, runtime_checkable

from pydantic import JsonValue

from assay.core import GenerationRequest
from assay.data.file_source import FileSource, NamedModels
from assay.data.source import RequestSettings, asked_limits, index_rng, request_id
from assay.data.synthetic import SyntheticSource
from assay.data.token_count import sample_token_count
from assay.errors import DataError
from assay.spec.endpoint import Carries


def turn_request_id(session: int, turn: int) -> str:
    """The request id of turn `turn` (from 1) of session `session`.

    >>> turn_request_id(3, 2)
    'req-00000003-turn-02'
    """
    return f"{request_id(session)}-turn-{turn:02d}"


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn and its output target."""

    text: str
    max_output_tokens: int | None


@dataclass(frozen=True, slots=True)
class Session:
    """One session: its turns, the messages it opens with (a system prompt), its think time."""

    index: int
    turns: Sequence[Turn]
    opening: tuple[dict[str, JsonValue], ...]
    think_time_ns: int
    shape: RequestSettings
    row_extra: dict[str, JsonValue]
    # The model every turn names (a mix picks it per session, a data row may name it); None:
    # the shape's model.
    model: str | None = None

    def request(self, turn: int, history: tuple[dict[str, JsonValue], ...]) -> GenerationRequest:
        """The request of turn `turn` (from 0): the opening, `history` (the turns before with
        the answers received), then this turn's user text."""
        shape = self.shape
        this = self.turns[turn]
        user: dict[str, JsonValue] = {"role": "user", "content": this.text}
        conversation = (*self.opening, *history, user)
        extra = {**shape.extra_body, **self.row_extra}
        limit, ignore_eos = asked_limits(
            shape.endpoint, extra, this.max_output_tokens, shape.ignore_eos
        )
        prompt: str | None = None
        messages: tuple[dict[str, JsonValue], ...] | None = None
        traits = shape.endpoint.traits
        match traits.carries:
            case Carries.messages:
                messages = conversation
            case Carries.prompt | Carries.inputs:
                prompt = _as_text(conversation)
            case Carries.documents:
                # Refused with the run's settings (a ranking takes no conversation).
                raise DataError(f"{shape.endpoint} requests carry documents, not a conversation")
            case Carries.audio:
                raise DataError("sessions need a chat, completions or responses load")
        return GenerationRequest(
            request_id=turn_request_id(self.index, turn + 1),
            endpoint=shape.endpoint,
            model=shape.model if self.model is None else self.model,
            prompt=prompt,
            messages=messages,
            max_output_tokens=limit if traits.generates else None,
            ignore_eos=ignore_eos,
            stream=shape.stream and traits.streams,
            extra_body=extra,
        )


def _as_text(conversation: tuple[dict[str, JsonValue], ...]) -> str:
    # Completions and responses take one text: the turns one after another, blank-line apart.
    return "\n\n".join(str(message.get("content", "")) for message in conversation)


@runtime_checkable
class SessionSource(Protocol):
    """A source of sessions by index; the scheduler runs a session as one unit of its load."""

    def session(self, index: int) -> Session:
        """The session at `index` (the same value in every process)."""
        ...

    def size(self) -> int | None:
        """How many distinct sessions there are; None when unbounded."""
        ...


@dataclass(frozen=True, slots=True)
class FileSessions:
    """The rows of a data file as sessions: session `i` is row `i % rows`, its turns in order."""

    rows: FileSource
    think_time_ns: int = 0

    @classmethod
    def of(cls, rows: FileSource, think_time_ns: int = 0) -> FileSessions:
        """Sessions of every row; a row without turns is a `DataError` naming its line."""
        for row in rows.rows:
            if row.images:
                raise DataError(
                    f"{rows.config.path}, line {row.line}: a row with images cannot run as a "
                    "multi-turn session yet (run it without --multi-turn)"
                )
            if not row.turns:
                raise DataError(
                    f"{rows.config.path}, line {row.line}: no turns for a multi-turn session "
                    f"(give a ShareGPT {rows.config.columns.conversations!r} or a "
                    f"{rows.config.columns.turns!r} list)"
                )
        return cls(rows=rows, think_time_ns=think_time_ns)

    def size(self) -> int | None:
        return self.rows.size()

    def several_models(self) -> bool:
        return self.rows.several_models()

    def named_models(self) -> NamedModels | None:
        """The models its rows name (see `FileSource.named_models`)."""
        return self.rows.named_models()

    def request(self, index: int) -> GenerationRequest:
        """The first turn of session `index` (what a session starts with)."""
        return self.session(index).request(0, ())

    def session(self, index: int) -> Session:
        source = self.rows
        row = source.rows[index % len(source.rows)]
        config = source.config
        turns = tuple(
            Turn(
                text=turn.text,
                max_output_tokens=(
                    turn.output_tokens
                    if turn.output_tokens is not None
                    else sample_token_count(config.output_tokens, index_rng(config.seed, index))
                ),
            )
            for turn in row.turns
        )
        opening: tuple[dict[str, JsonValue], ...] = ()
        if row.system is not None:
            opening = ({"role": "system", "content": row.system},)
        return Session(
            index=index,
            turns=turns,
            opening=opening,
            think_time_ns=self.think_time_ns,
            shape=config,
            row_extra=row.extra_body,
            model=row.model if row.model is not None else config.model_of(index),
        )


@dataclass(frozen=True, slots=True)
class SyntheticSessions:
    """Synthetic sessions: `turns` user turns, each of the source's sampled prompt length."""

    source: SyntheticSource
    turns: int
    think_time_ns: int = 0

    def size(self) -> int | None:
        return None

    def several_models(self) -> bool:
        return self.source.several_models()

    def request(self, index: int) -> GenerationRequest:
        """The first turn of session `index` (what a session starts with)."""
        return self.session(index).request(0, ())

    def session(self, index: int) -> Session:
        source = self.source
        return Session(
            index=index,
            turns=SampledTurns(source, index, self.turns),
            opening=(),
            think_time_ns=self.think_time_ns,
            shape=source,
            row_extra={},
            model=source.model_of(index),
        )


class SampledTurns(Sequence[Turn]):
    """The turns of one synthetic session, each sampled when it is asked for, never ahead: a
    session of many turns costs what its turns sent so far cost, not what it could hold.

    Turn `t` has its own random stream from `(seed, session, t)`, so it is the same whichever
    turns were built before it, in every process.

    >>> from assay.data.synthetic import SyntheticSource
    >>> from assay.data.token_count import FixedCount
    >>> source = SyntheticSource(model="m", prompt_tokens=FixedCount(value=4),
    ...                          output_tokens=FixedCount(value=2))
    >>> turns = SampledTurns(source, 0, 1_000_000_000)
    >>> len(turns), turns[999_999_999] == turns[999_999_999]
    (1000000000, True)
    """

    __slots__ = ("_count", "_index", "_last", "_source")

    def __init__(self, source: SyntheticSource, index: int, count: int) -> None:
        self._source, self._index, self._count = source, index, count
        # The turn asked for last: a turn is read for its request, then again for the history.
        self._last: tuple[int, Turn] | None = None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, turn: int) -> Turn: ...
    @overload
    def __getitem__(self, turn: slice) -> Sequence[Turn]: ...
    def __getitem__(self, turn: int | slice) -> Turn | Sequence[Turn]:
        if isinstance(turn, slice):
            return [self[position] for position in range(*turn.indices(self._count))]
        if not 0 <= turn < self._count:
            raise IndexError(turn)
        if self._last is not None and self._last[0] == turn:
            return self._last[1]
        source = self._source
        # The first turn draws from the session's own stream, as a session's first request did.
        rng = (
            index_rng(source.seed, self._index)
            if turn == 0
            else random.Random(f"assay:turn:{source.seed}:{self._index}:{turn}")
        )
        built = Turn(
            text=source.build_tokenizer().sample_text(
                sample_token_count(source.prompt_tokens, rng), rng
            ),
            max_output_tokens=sample_token_count(source.output_tokens, rng),
        )
        self._last = (turn, built)
        return built


__all__ = [
    "FileSessions",
    "SampledTurns",
    "Session",
    "SessionSource",
    "SyntheticSessions",
    "Turn",
    "turn_request_id",
]
