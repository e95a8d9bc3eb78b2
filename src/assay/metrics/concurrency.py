"""Mean and peak concurrency of a step from (start, end) intervals, in bounded memory.

Mean concurrency is exact: the sum of in-flight durations divided by the step's duration.

The exact peak needs a sweep over every start and end event, which is memory proportional to the
number of requests. Instead time is cut into cells of 2**k ns; each cell keeps how many requests
started and ended in it. The in-flight count at every cell boundary is then exact, and its maximum
(`peak`) is a true lower bound of the peak: that many requests really were in flight at once. The
true peak is at most `peak_upper_bound` (the count at a boundary plus the starts inside the next
cell). Cells start at ~1 us and double in width whenever more than `max_cells` hold events, so a
short run is measured finely and an hour-long run still samples every few hundred ms.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_CELLS = 8192
_FIRST_SHIFT = 10  # 1024 ns cells to start with


@dataclass(frozen=True, slots=True)
class ConcurrencyPeak:
    """The peak in-flight count, bracketed: `peak` <= true peak <= `upper_bound`."""

    peak: int
    upper_bound: int
    resolution_ns: int


class ConcurrencyTracker:
    """Collects request intervals; mergeable when both sides use the same `max_cells`.

    >>> tracker = ConcurrencyTracker()
    >>> tracker.add(0, 10_000_000)
    >>> tracker.add(5_000_000, 15_000_000)
    >>> tracker.peak().peak, tracker.in_flight_ns
    (2, 20000000)
    """

    __slots__ = ("_ends", "_max_cells", "_shift", "_starts", "in_flight_ns")

    def __init__(self, max_cells: int = DEFAULT_MAX_CELLS) -> None:
        self._max_cells = max_cells
        self._shift = _FIRST_SHIFT
        self._starts: dict[int, int] = {}
        self._ends: dict[int, int] = {}
        self.in_flight_ns = 0

    def add(self, start_ns: int, end_ns: int) -> None:
        """Count one request in flight over [start_ns, end_ns)."""
        if end_ns < start_ns:
            end_ns = start_ns
        self.in_flight_ns += end_ns - start_ns
        shift = self._shift
        starts = self._starts
        ends = self._ends
        cell = start_ns >> shift
        starts[cell] = starts.get(cell, 0) + 1
        cell = end_ns >> shift
        ends[cell] = ends.get(cell, 0) + 1
        if len(starts) > self._max_cells or len(ends) > self._max_cells:
            self._coarsen(shift + 1)

    def merge(self, other: ConcurrencyTracker) -> None:
        """Fold `other`'s intervals into this tracker, at the coarser of the two resolutions."""
        if other._shift > self._shift:
            self._coarsen(other._shift)
        shift_by = self._shift - other._shift
        for source, target in ((other._starts, self._starts), (other._ends, self._ends)):
            for cell, n in source.items():
                key = cell >> shift_by
                target[key] = target.get(key, 0) + n
        self.in_flight_ns += other.in_flight_ns
        while len(self._starts) > self._max_cells or len(self._ends) > self._max_cells:
            self._coarsen(self._shift + 1)

    def peak(self) -> ConcurrencyPeak:
        """The bracketed peak in-flight count (0 with no intervals)."""
        cells = sorted(self._starts.keys() | self._ends.keys())
        in_flight = 0
        peak = 0
        upper = 0
        for cell in cells:
            started = self._starts.get(cell, 0)
            # Inside the cell at most the requests in flight at its start plus those starting in it.
            upper = max(upper, in_flight + started)
            # An interval starting and ending in the same cell is in flight at no boundary.
            in_flight += started - self._ends.get(cell, 0)
            peak = max(peak, in_flight)
        return ConcurrencyPeak(
            peak=peak, upper_bound=max(upper, peak), resolution_ns=1 << self._shift
        )

    def _coarsen(self, shift: int) -> None:
        by = shift - self._shift
        self._starts = _folded(self._starts, by)
        self._ends = _folded(self._ends, by)
        self._shift = shift


def _folded(cells: dict[int, int], by: int) -> dict[int, int]:
    """`cells` at `2**by` times the width: neighbouring cells' counts added together."""
    coarse: dict[int, int] = {}
    get = coarse.get
    for cell, n in cells.items():
        key = cell >> by
        coarse[key] = get(key, 0) + n
    return coarse
