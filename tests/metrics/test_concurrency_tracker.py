"""Concurrency: exact mean, a bracketed peak in bounded memory, merge across processes."""

from __future__ import annotations

import random

from assay.metrics import ConcurrencyTracker

MS = 1_000_000


def _exact_peak(intervals: list[tuple[int, int]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    level = peak = 0
    for _, delta in sorted(events, key=lambda ev: (ev[0], ev[1])):  # ends before starts
        level += delta
        peak = max(peak, level)
    return peak


def test_back_to_back_requests_peak_at_one() -> None:
    tracker = ConcurrencyTracker()
    for i in range(100):
        tracker.add(i * 50 * MS, (i + 1) * 50 * MS)
    peak = tracker.peak()
    assert peak.peak == 1
    assert peak.upper_bound <= 2
    assert tracker.in_flight_ns == 100 * 50 * MS


def test_peak_brackets_the_exact_sweep_on_random_overlaps() -> None:
    rng = random.Random(11)
    intervals = []
    for _ in range(3000):
        start = rng.randrange(0, 10_000 * MS)
        intervals.append((start, start + rng.randrange(1 * MS, 400 * MS)))
    tracker = ConcurrencyTracker()
    for start, end in intervals:
        tracker.add(start, end)
    peak = tracker.peak()
    exact = _exact_peak(intervals)
    assert peak.peak <= exact <= peak.upper_bound
    assert peak.upper_bound - peak.peak <= 2  # ~2 ms cells at 300 starts/s


def test_cells_stay_bounded_and_resolution_coarsens() -> None:
    tracker = ConcurrencyTracker(max_cells=64)
    for i in range(10_000):
        tracker.add(i * MS, i * MS + MS // 2)
    peak = tracker.peak()
    assert peak.resolution_ns >= 10_000 * MS // 64
    assert peak.upper_bound >= 1
    assert tracker.in_flight_ns == 10_000 * (MS // 2)


def test_merge_matches_one_tracker_of_all_intervals() -> None:
    rng = random.Random(5)
    intervals = [(s, s + rng.randrange(MS, 80 * MS)) for s in range(0, 2000 * MS, 3 * MS)]
    whole, left, right = ConcurrencyTracker(), ConcurrencyTracker(), ConcurrencyTracker()
    for start, end in intervals:
        whole.add(start, end)
    for start, end in intervals[::2]:
        left.add(start, end)
    for start, end in intervals[1::2]:
        right.add(start, end)
    left.merge(right)
    assert left.peak() == whole.peak()
    assert left.in_flight_ns == whole.in_flight_ns
