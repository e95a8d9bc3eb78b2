"""One timer per request that enforces the first-token, idle and total deadlines lazily.

Re-arming a timer for every chunk would cost a timer handle per chunk; instead the reading loop
only stores the time of the last byte, and the timer, when it fires, works out which deadline
really passed or sleeps again until the next one. The connect deadline is the pool's own
(`assay.h1.pool`), since only the pool knows when a new connection is being opened.
"""

from __future__ import annotations

import asyncio

from assay.core.diagnostics import DiagnosticCode
from assay.handlers.base import StreamAccumulator
from assay.spec.target import Timeouts

# The event loop may run a timer up to its clock resolution early; a deadline this close to
# passing counts as passed, so the timer never spins re-arming itself for a sliver of time.
_SLACK_S = 1e-3


class DeadlineWatch:
    """Cancels the request's task when the earliest live deadline of the request passes.

    `expired` names the deadline that passed. The first-token deadline stands until the
    accumulator (streamed) reports a token or `token_seen` is set (a complete JSON body); the
    idle deadline starts with the first body byte (`saw_bytes`, in loop time).

    The watch is its own deadline scope, `asyncio.timeout`'s steps without its object, its
    two coroutines and its state machine (one of each per request): a deadline that passes
    cancels the task one loop turn later (as the scope's `reschedule(now)` does), `stop` undoes
    that cancellation, and `cut` then says whether the `CancelledError` the request ended
    with was the watch's, by the scope's own test (no other cancellation came since `start`).
    """

    __slots__ = (
        "_due",
        "_first_token_at",
        "_handle",
        "_idle_s",
        "_loop",
        "_task",
        "_task_cancelling",
        "_total_at",
        "accumulator",
        "cut",
        "expired",
        "last_byte_at",
        "token_seen",
    )

    def __init__(self, timeouts: Timeouts, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        self._loop = loop
        self._total_at = now + timeouts.total_s
        self._first_token_at = now + timeouts.first_token_s
        self._idle_s = timeouts.idle_s
        self._task: asyncio.Task[object] | None = None
        self._task_cancelling = 0
        self._handle: asyncio.TimerHandle | None = None
        # Once a deadline passed: the task's cancellation, due next turn.
        self._due: asyncio.Handle | None = None
        # Whether the watch cancelled the task (`_cancel`) and nothing else did since `start`.
        self.cut = False
        self.accumulator: StreamAccumulator | None = None
        self.last_byte_at: float | None = None
        self.token_seen = False
        self.expired: DiagnosticCode | None = None

    def start(self, task: asyncio.Task[object]) -> None:
        """Watch on behalf of `task` (the one running the request), from now."""
        self._task = task
        self._task_cancelling = task.cancelling()
        loop = self._loop
        if self.token_seen or self.accumulator is not None or self.last_byte_at is not None:
            when, _ = self._next_deadline()
        else:
            # Nothing seen yet (every request, as the client starts it): the first-token
            # deadline stands and no idle deadline has started, as `_next_deadline` would find.
            when = self._total_at
            if self._first_token_at < when:
                when = self._first_token_at
        # No idle deadline can pass before start + idle (the first byte comes after the start),
        # so a timer armed no later than that never needs bringing forward when the first byte
        # arrives: one timer per request instead of two. If it fires first, `_check` re-arms
        # it for the deadline that is really next.
        idle_at = loop.time() + self._idle_s
        self._handle = loop.call_at(idle_at if idle_at < when else when, self._check)

    def saw_bytes(self, at: float) -> None:
        """Body bytes arrived at loop time `at`; the first arrival starts the idle deadline.

        Only the time is kept: the timer, armed no later than the earliest idle deadline,
        catches up lazily.
        """
        self.last_byte_at = at

    def stop(self) -> None:
        """Cancel the timer; the request is over. A cancellation of the task by the watch is
        taken back, and `cut` tells whether it stands alone (`asyncio.timeout`'s exit)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._due is not None:
            self._due.cancel()
            self._due = None
        if self.cut:
            task = self._task
            assert task is not None  # set by `start`, before any cancellation
            self.cut = task.uncancel() <= self._task_cancelling

    def _waiting_for_token(self) -> bool:
        if self.token_seen:
            return False
        accumulator = self.accumulator
        if accumulator is not None and accumulator.first_token_ns is not None:
            self.token_seen = True
            return False
        return True

    def _next_deadline(self) -> tuple[float, DiagnosticCode]:
        # Ties go to the more specific deadline: idle, then first token, then total.
        when, code = self._total_at, DiagnosticCode.timeout_total
        if self._waiting_for_token() and self._first_token_at <= when:
            when, code = self._first_token_at, DiagnosticCode.timeout_first_token
        if self.last_byte_at is not None:
            idle_at = self.last_byte_at + self._idle_s
            if idle_at <= when:
                when, code = idle_at, DiagnosticCode.timeout_idle
        return when, code

    def _check(self) -> None:
        when, code = self._next_deadline()
        now = self._loop.time()
        if now + _SLACK_S >= when:
            self._handle = None
            self.expired = code
            self._due = self._loop.call_soon(self._cancel)
        else:
            self._handle = self._loop.call_at(when, self._check)

    def _cancel(self) -> None:
        self._due = None
        task = self._task
        if task is not None:
            task.cancel()
            self.cut = True
