"""The error constraints applied while a step runs: counts finished requests, says when to stop."""

from __future__ import annotations

from collections import deque

from assay.spec.constraints import Constraints, StopReason


class ErrorWatch:
    """Counts finished requests and says when an error constraint is hit.

    >>> watch = ErrorWatch(Constraints(max_errors=2))
    >>> [watch.observe(errored=e) for e in (True, False, True)]
    [None, None, <StopReason.max_errors: 'max_errors'>]
    """

    __slots__ = ("_limit", "_max_rate", "_window", "_window_errors", "errors")

    def __init__(self, constraints: Constraints, *, rate: bool = True) -> None:
        self._limit = constraints.max_errors
        self._max_rate = constraints.stop_error_rate if rate else None
        # The window serves the error rate alone: without one, no request pays for keeping it.
        self._window: deque[bool] | None = (
            deque(maxlen=constraints.error_rate_window) if self._max_rate is not None else None
        )
        self._window_errors = 0
        self.errors = 0

    def observe(self, *, errored: bool) -> StopReason | None:
        """Take one finished (completed or errored) request; a reason when a limit is reached."""
        if errored:
            self.errors += 1
        window = self._window
        if window is not None:
            if len(window) == window.maxlen and window[0]:
                self._window_errors -= 1
            window.append(errored)
            self._window_errors += errored
        if self._limit is not None and self.errors >= self._limit:
            return StopReason.max_errors
        if (
            window is not None
            and self._max_rate is not None
            and len(window) == window.maxlen
            and self._window_errors / len(window) >= self._max_rate
        ):
            return StopReason.stop_error_rate
        return None


__all__ = ["ErrorWatch"]
