"""ShareGPT conversations: `{"conversations": [{"from": "human"|"gpt", "value": ...}, ...]}`.

A conversation reads as its system prompt (if any) and its exchanges: each user turn with the
answer recorded after it. Single-turn use sends the first user turn and takes the recorded
answer's length as the output target; multi-turn use sends every user turn in order, each with
the answers the server really gave (the recorded ones are never sent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from assay.errors import DataError

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


__all__ = ["Conversation", "Exchange", "read_conversation"]
