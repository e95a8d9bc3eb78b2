"""ErrorWatch keeps its window only for an error-rate constraint; it stops exactly where a watch
that always keeps the window does, for any constraints and any sequence of outcomes."""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.load.error_watch import ErrorWatch
from assay.spec.constraints import Constraints, StopReason


class AlwaysWindowedWatch:
    """The watch as it was before the window became optional: every outcome enters it."""

    def __init__(self, constraints: Constraints, *, rate: bool = True) -> None:
        self._limit = constraints.max_errors
        self._max_rate = constraints.stop_error_rate if rate else None
        self._window: deque[bool] = deque(maxlen=constraints.error_rate_window)
        self._window_errors = 0
        self.errors = 0

    def observe(self, *, errored: bool) -> StopReason | None:
        if errored:
            self.errors += 1
        window = self._window
        if len(window) == window.maxlen and window[0]:
            self._window_errors -= 1
        window.append(errored)
        self._window_errors += errored
        if self._limit is not None and self.errors >= self._limit:
            return StopReason.max_errors
        if (
            self._max_rate is not None
            and len(window) == window.maxlen
            and self._window_errors / len(window) >= self._max_rate
        ):
            return StopReason.stop_error_rate
        return None


constraints = st.builds(
    Constraints,
    max_errors=st.none() | st.integers(min_value=1, max_value=8),
    stop_error_rate=st.none() | st.sampled_from([0.01, 0.25, 0.5, 0.75, 1.0]),
    error_rate_window=st.integers(min_value=1, max_value=8),
)


@settings(max_examples=500, deadline=None)
@given(
    limits=constraints,
    rate=st.booleans(),
    outcomes=st.lists(st.booleans(), max_size=60),
)
def test_watch_stops_where_an_always_windowed_watch_stops(
    limits: Constraints, rate: bool, outcomes: list[bool]
) -> None:
    watch = ErrorWatch(limits, rate=rate)
    reference = AlwaysWindowedWatch(limits, rate=rate)
    for errored in outcomes:
        assert watch.observe(errored=errored) == reference.observe(errored=errored)
        assert watch.errors == reference.errors


def test_without_an_error_rate_no_window_is_kept() -> None:
    assert ErrorWatch(Constraints(max_errors=3))._window is None
    assert ErrorWatch(Constraints(stop_error_rate=0.5), rate=False)._window is None
    assert ErrorWatch(Constraints(stop_error_rate=0.5))._window is not None
