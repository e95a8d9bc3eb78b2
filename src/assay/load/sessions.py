"""Running multi-turn sessions: each turn is one request (one record), sent when the previous
turn has completed, with the answer it really received added to the conversation.

A turn that errors or is cancelled ends its session; the turns after it are never sent and are
counted as `turns_not_sent`, so every turn a started session owed is either a record or that
count: `turns_sent + turns_not_sent == the turns of every started session`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pydantic import JsonValue

from assay.core import Clock, GenerationRequest, GenerationResponse
from assay.data.session import Session
from assay.records import Cancelled, Completed, Errored, RequestRecord


@dataclass(frozen=True, slots=True)
class SessionCounts:
    """How a step's sessions went: started; `completed` (every turn completed); `ended_early`
    (a turn errored or was cancelled, or the step stopped, before every turn was sent); the
    turns sent (each is a record) and the turns not sent.

    >>> SessionCounts(1, 1, 0, 3, 0) + SessionCounts(1, 0, 1, 1, 2)
    SessionCounts(started=2, completed=1, ended_early=1, turns_sent=4, turns_not_sent=2)
    """

    started: int = 0
    completed: int = 0
    ended_early: int = 0
    turns_sent: int = 0
    turns_not_sent: int = 0

    def __add__(self, other: SessionCounts) -> SessionCounts:
        return SessionCounts(
            self.started + other.started,
            self.completed + other.completed,
            self.ended_early + other.ended_early,
            self.turns_sent + other.turns_sent,
            self.turns_not_sent + other.turns_not_sent,
        )


@dataclass(slots=True)
class SessionTally:
    """The live session counters of one step in one process."""

    started: int = 0
    completed: int = 0
    ended_early: int = 0
    turns_sent: int = 0
    turns_not_sent: int = 0

    def counts(self) -> SessionCounts:
        """The counters as a frozen value."""
        return SessionCounts(
            self.started, self.completed, self.ended_early, self.turns_sent, self.turns_not_sent
        )


SendTurn = Callable[[GenerationRequest, int, int], Awaitable[RequestRecord[GenerationResponse]]]
"""Sends one request (its turn, counted from 1, and the time it is targeted at) and returns its
record (the runner's `_send`); the record carries the turn."""


async def run_session(
    session: Session,
    *,
    first_target_ns: int,
    send: SendTurn,
    clock: Clock,
    may_continue: Callable[[int], bool],
    tally: SessionTally,
) -> None:
    """Send the turns of `session` in order until one does not complete or the step stops.

    Turn 1 is due at `first_target_ns`; turn k+1 is due the session's think time after turn k
    ended. `may_continue(target_ns)` says whether the step still sends a request due then. The
    turns not sent are counted even when the session is cancelled (the step stopped).
    """
    tally.started += 1
    history: tuple[dict[str, JsonValue], ...] = ()
    target_ns = first_target_ns
    sent = 0
    total = len(session.turns)
    try:
        for turn in range(total):
            if turn:
                target_ns = clock.now_ns() + session.think_time_ns
                if not may_continue(target_ns):
                    return
                if session.think_time_ns:
                    await clock.sleep_until(target_ns)
                    if not may_continue(target_ns):
                        return
            request = session.request(turn, history)
            sent += 1
            record = await send(request, turn + 1, target_ns)
            match record.outcome:
                case Completed(response=response):
                    user: dict[str, JsonValue] = {
                        "role": "user",
                        "content": session.turns[turn].text,
                    }
                    answer: dict[str, JsonValue] = {"role": "assistant", "content": response.text}
                    history = (*history, user, answer)
                case Errored() | Cancelled():
                    return
        tally.completed += 1
    finally:
        tally.turns_sent += sent
        if sent < total:
            tally.turns_not_sent += total - sent
            tally.ended_early += 1


__all__ = ["SendTurn", "SessionCounts", "SessionTally", "run_session"]
