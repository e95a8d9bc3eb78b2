"""Replay schedules: each request at its trace time, scaled by the replay speed.

The times come from the source (`TimedSource.offset_ns`), so every process computes the same
time for the same index; process p owns the indices i with i % P == p, as for rate loads.
They are also what a replay step owes the accounting, as a rate's schedule is: `scheduled`
counts the trace requests due before the step stopped dispatching, the trace's size bounding
them as a budget (see `assay.load.step_runner.open_loop_slice`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from assay.data.source import RequestSource
from assay.data.trace import TimedSource
from assay.errors import ConfigError


def timed(source: RequestSource) -> TimedSource:
    """`source` as a timed source; a replay of a source without times is a usage error."""
    if not isinstance(source, TimedSource):
        raise ConfigError("the replay profile needs a trace (--trace FILE) to take its times from")
    return source


def replay_slice(
    source: TimedSource, speed: float, process: int, processes: int, budget: int | None
) -> Iterator[tuple[int, int]]:
    """`(index, offset_ns)` of the trace requests process `process` sends, at `speed`.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Times:
    ...     offsets: tuple[int, ...]
    ...     def request(self, index): ...
    ...     def size(self): return len(self.offsets)
    ...     def offset_ns(self, index): return self.offsets[index]
    >>> list(replay_slice(Times((0, 10, 30, 40)), 2.0, 0, 2, budget=None))
    [(0, 0), (2, 15)]
    """
    size = source.size()
    count = size if budget is None else min(budget, size if size is not None else budget)
    indices = itertools.count() if count is None else range(count)
    numbered = ((index, round(source.offset_ns(index) / speed)) for index in indices)
    return itertools.islice(numbered, process, None, processes)


__all__ = ["replay_slice", "timed"]
