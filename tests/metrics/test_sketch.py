"""The quantile sketch: percentiles within the stated error, exact moments, lossless merge."""

from __future__ import annotations

import math
import random
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics import PERCENTILES, RELATIVE_ERROR, QuantileSketch


def _nearest_rank(sorted_values: list[float], q: float) -> float:
    return sorted_values[max(1, math.ceil(q * len(sorted_values))) - 1]


def _close(estimate: float, exact: float) -> bool:
    return abs(estimate - exact) <= abs(exact) * RELATIVE_ERROR + 1e-12


positive = st.floats(min_value=1e-3, max_value=1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(st.lists(positive, min_size=1, max_size=400))
def test_percentiles_are_within_the_stated_relative_error(values: list[float]) -> None:
    sketch = QuantileSketch()
    for value in values:
        sketch.add(value)
    ordered = sorted(values)
    for _, q in PERCENTILES:
        assert _close(sketch.quantile(q), _nearest_rank(ordered, q))


@settings(max_examples=100, deadline=None)
@given(st.lists(positive, min_size=2, max_size=200), st.integers(min_value=1, max_value=199))
def test_merged_sketches_equal_one_sketch_of_all_values(values: list[float], cut: int) -> None:
    whole, left, right = QuantileSketch(), QuantileSketch(), QuantileSketch()
    for value in values:
        whole.add(value)
    for value in values[:cut]:
        left.add(value)
    for value in values[cut:]:
        right.add(value)
    left.merge(right)
    assert left.count == whole.count
    assert (left.min, left.max) == (whole.min, whole.max)
    assert math.isclose(left.mean, whole.mean, rel_tol=1e-9)
    assert math.isclose(left.stdev, whole.stdev, rel_tol=1e-6, abs_tol=1e-6 * whole.max)
    for _, q in PERCENTILES:
        assert left.quantile(q) == whole.quantile(q)


def test_moments_are_exact_on_latency_like_data() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(17, 0.6) for _ in range(5000)]  # ~25 ms in ns, long tail
    sketch = QuantileSketch()
    for value in values:
        sketch.add(value)
    assert sketch.count == 5000
    assert math.isclose(sketch.mean, statistics.fmean(values), rel_tol=1e-9)
    assert math.isclose(sketch.stdev, statistics.pstdev(values), rel_tol=1e-9)
    assert (sketch.min, sketch.max) == (min(values), max(values))
    ordered = sorted(values)
    for _, q in PERCENTILES:
        assert _close(sketch.quantile(q), _nearest_rank(ordered, q))


def test_weighted_add_equals_repeated_add() -> None:
    once, repeated = QuantileSketch(), QuantileSketch()
    once.add(3.0, 4)
    once.add(10.0)
    for value in (3.0, 3.0, 3.0, 3.0, 10.0):
        repeated.add(value)
    assert (once.count, once.mean, once.stdev) == (repeated.count, repeated.mean, repeated.stdev)
    assert once.quantile(0.8) == repeated.quantile(0.8)


def test_memory_does_not_grow_with_sample_count() -> None:
    rng = random.Random(3)
    sketch = QuantileSketch()
    for _ in range(20_000):
        sketch.add(rng.uniform(1e6, 1e9))  # 1 ms .. 1 s in ns
    # 10 powers of two at most, 64 buckets each, whatever the sample count.
    assert sketch.bucket_count <= 11 * 64


def test_zero_and_negative_values_keep_exact_moments() -> None:
    sketch = QuantileSketch()
    for value in (-5.0, 0.0, 0.0, 100.0):
        sketch.add(value)
    assert (sketch.min, sketch.max, sketch.mean) == (-5.0, 100.0, 23.75)
    assert sketch.quantile(0.5) == 0.0
    assert sketch.quantile(0.25) == 0.0
    assert _close(sketch.quantile(1.0), 100.0)


def test_summary_scales_ns_to_ms() -> None:
    sketch = QuantileSketch()
    for ms in (10, 20, 30, 40):
        sketch.add(ms * 1_000_000)
    summary = sketch.summary(scale=1e-6)
    assert summary is not None
    assert (summary.count, summary.mean, summary.min, summary.max) == (4, 25.0, 10.0, 40.0)
    assert _close(summary.p50, 20.0)
    assert summary.p99 == 40.0  # clamped to the exact max


def test_single_value_answers_itself_exactly() -> None:
    sketch = QuantileSketch()
    sketch.add(123_456_789)
    assert all(sketch.quantile(q) == 123_456_789 for _, q in PERCENTILES)
    assert sketch.stdev == 0.0
