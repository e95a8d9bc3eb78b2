"""Constraints: when a step stops dispatching, and which requests fall in the measured window.

What the user asks for; the watch that applies them while a step runs is `assay.load.error_watch`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.spec.limits import MAX_DURATION_S

NS_PER_S: Final = 1_000_000_000
"""Nanoseconds in a second: every time of a run is an integer count of nanoseconds."""


class StopReason(StrEnum):
    """Why a step stopped before its schedule ran out (stable strings, shown in reports)."""

    max_requests = "max_requests"
    max_seconds = "max_seconds"
    max_errors = "max_errors"
    stop_error_rate = "stop_error_rate"
    stop_signal = "stop_signal"
    # The data file's rows ran out before the run's limits (more requests, or more time):
    # the run sent each row once; `--data-cycle` reuses them.
    data_exhausted = "data_exhausted"


class Constraints(BaseModel):
    """Limits applied to every step; all are optional.

    `max_requests` bounds what a step dispatches (dispatched requests then finish normally);
    reaching `max_seconds`, `max_errors` or `stop_error_rate` stops dispatching and cancels what
    is in flight. The error rate is taken over the last `error_rate_window` finished requests and
    applies only once that many have finished. Warmup and cooldown do not change what runs:
    requests whose *targeted* start falls in them are recorded but outside the measured window.

    >>> c = Constraints(max_seconds=10, warmup_seconds=1, cooldown_seconds=2)
    >>> c.measured_window(start_ns=0)
    (1000000000, 8000000000)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_requests: int | None = Field(default=None, gt=0)
    max_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    max_errors: int | None = Field(default=None, gt=0)
    stop_error_rate: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    error_rate_window: int = Field(default=50, gt=0)
    warmup_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S)
    cooldown_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S)

    @model_validator(mode="after")
    def _something_is_measured(self) -> Constraints:
        # Refused here, before anything starts: a step whose window is empty has no figures,
        # and its aggregator refuses the window (a crash after the load was sent).
        if self.measures_nothing:
            given = [
                f"--{name}-seconds {seconds:g}"
                for name, seconds in (
                    ("warmup", self.warmup_seconds),
                    ("cooldown", self.cooldown_seconds),
                )
                if seconds
            ]
            raise ValueError(
                f"{' and '.join(given)} {'leave' if len(given) > 1 else 'leaves'} nothing of "
                f"--max-seconds {self.max_seconds:g} measured: a step counts only the requests "
                "that start after its warm-up and before its cool-down"
            )
        return self

    @property
    def measures_nothing(self) -> bool:
        """Whether warm-up and cool-down leave a step of `max_seconds` an empty measured window
        (to the nanosecond, as the window is placed).

        >>> Constraints(max_seconds=2, warmup_seconds=1).measures_nothing
        False
        >>> Constraints.model_construct(max_seconds=2, cooldown_seconds=2).measures_nothing
        True
        """
        if not (self.warmup_seconds or self.cooldown_seconds):
            return False  # no window is placed: the step counts from first dispatch to last end
        begin, end = self.measured_window(start_ns=0)
        return end is not None and end <= begin

    def deadline_ns(self, start_ns: int) -> int | None:
        """When a step that started at `start_ns` must stop, if `max_seconds` is set."""
        if self.max_seconds is None:
            return None
        return start_ns + round(self.max_seconds * NS_PER_S)

    def measured_window(self, start_ns: int) -> tuple[int, int | None]:
        """The targeted-start interval `[start, end)` whose requests count; end None = open.

        The cooldown needs a known end, so without `max_seconds` the window stays open.
        """
        begin = start_ns + round(self.warmup_seconds * NS_PER_S)
        deadline = self.deadline_ns(start_ns)
        if deadline is None:
            return begin, None
        return begin, max(begin, deadline - round(self.cooldown_seconds * NS_PER_S))

    def budget(self, source_size: int | None) -> int | None:
        """How many indices a step may use: the smaller of `max_requests` and the source size.

        >>> Constraints(max_requests=100).budget(source_size=40)
        40
        """
        sizes = [size for size in (self.max_requests, source_size) if size is not None]
        return min(sizes) if sizes else None


__all__ = ["NS_PER_S", "Constraints", "StopReason"]
