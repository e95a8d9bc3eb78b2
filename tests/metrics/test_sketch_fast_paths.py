"""The sketch's fast paths (single add, all-positive batch) give the figures of the plain rules."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics import PERCENTILES, QuantileSketch
from assay.metrics.sketch import SUB_BUCKETS

finite = st.floats(min_value=-1e6, max_value=1e12, allow_nan=False, allow_infinity=False)
gaps = st.integers(min_value=1, max_value=10**12)


def _reference_add(
    state: dict[str, float], buckets: dict[int, int], value: float, times: int
) -> None:
    """The weighted update exactly as first written: bucket of (mantissa - 0.5), then Welford."""
    if value > 0:
        mantissa, exponent = math.frexp(value)
        key = exponent * SUB_BUCKETS + int((mantissa - 0.5) * 2 * SUB_BUCKETS)
    else:
        key = -(2**31)
    buckets[key] = buckets.get(key, 0) + times
    count = state["count"] + times
    delta = value - state["mean"]
    state["mean"] += delta * times / count
    state["m2"] += delta * (value - state["mean"]) * times
    state["count"] = count


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(finite, st.integers(min_value=1, max_value=4)), max_size=200))
def test_single_and_weighted_adds_match_the_reference_update(
    samples: list[tuple[float, int]],
) -> None:
    sketch = QuantileSketch()
    state = {"count": 0.0, "mean": 0.0, "m2": 0.0}
    buckets: dict[int, int] = {}
    for value, times in samples:
        sketch.add(value, times)
        _reference_add(state, buckets, value, times)
    assert sketch.count == state["count"]
    assert sketch.mean == state["mean"]
    spread = math.sqrt(max(state["m2"], 0.0) / state["count"]) if state["count"] > 1 else 0.0
    assert sketch.stdev == spread
    # The buckets are the sketch's whole memory: they must be the reference's, key for key.
    assert sketch.buckets == buckets


@settings(max_examples=150, deadline=None)
@given(st.lists(gaps, min_size=1, max_size=64))
def test_batch_of_positive_gaps_equals_adding_each(values: list[int]) -> None:
    batch, single = QuantileSketch(), QuantileSketch()
    batch.add_all(values)
    for value in values:
        single.add(value)
    assert batch.count == single.count
    assert (batch.min, batch.max) == (single.min, single.max)
    assert math.isclose(batch.mean, single.mean, rel_tol=1e-12)
    assert batch.bucket_count == single.bucket_count
    for _, q in PERCENTILES:
        assert batch.quantile(q) == single.quantile(q)


def test_batch_with_a_zero_gap_uses_the_non_positive_bucket() -> None:
    batch, single = QuantileSketch(), QuantileSketch()
    values = [2_000_000, 0, 1_500_000, 2_100_000]
    batch.add_all(values)
    for value in values:
        single.add(value)
    assert batch.min == 0.0
    assert batch.bucket_count == single.bucket_count == 4
    assert batch.quantile(0.25) == single.quantile(0.25) == 0.0


def test_one_value_added_several_times_has_zero_spread_not_a_domain_error() -> None:
    # 366503875925.5133 * 3 / 3 rounds above the value, which left the sum of squares negative
    # and made `stdev` (and so every summary) raise ValueError.
    sketch = QuantileSketch()
    sketch.add(366503875925.5133, 3)
    assert sketch.stdev == 0.0
    summary = sketch.summary()
    assert summary is not None
    assert summary.count == 3


def _reference_batch(sketch: QuantileSketch, values: list[float]) -> tuple[float, float]:
    """The mean and sum of squares `add_all` combines for `values`, as first written."""
    batch_mean = math.fsum(values) / len(values)
    return batch_mean, math.fsum([(v - batch_mean) ** 2 for v in values])


equal_runs = st.builds(
    lambda value, n: [value] * n,
    st.one_of(
        st.integers(min_value=-(10**18), max_value=10**18),
        st.floats(min_value=-1e100, max_value=1e100),
        st.sampled_from([0, 0.0, -0.0, math.inf, -math.inf, math.nan, 0.1, 2**53 + 1]),
    ),
    st.integers(min_value=1, max_value=20),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(finite, max_size=5),
    st.one_of(equal_runs, st.lists(st.one_of(finite, gaps), min_size=1, max_size=20)),
    st.lists(st.sampled_from([0, 0.0, -0.0, math.nan]), max_size=3),
)
def test_a_batch_of_equal_values_gives_the_formulas_moments_and_buckets(
    before: list[float], values: list[float], mixed_in: list[float]
) -> None:
    # `add_all` skips the squares and the sort when every value equals the batch's mean; the
    # moments must be those of the formula exactly, and the buckets those of the sort (NaN,
    # infinities, signed zeros and huge ints included).
    values = values + mixed_in
    sketch, reference = QuantileSketch(), QuantileSketch()
    sketch.add_each(before)
    reference.add_each(before)
    sketch.add_all(values)
    if before:
        reference._fold_moments()
    batch_mean, batch_m2 = _reference_batch(reference, values)
    reference._combine(len(values), batch_mean, batch_m2, float(min(values)), float(max(values)))
    # Read without folding: the buckets of an infinity cannot be counted at all.
    assert repr(_moments(sketch)) == repr(_moments(reference))
    if all(-math.inf < value < math.inf or value != value for value in before + values):
        reference._unbucketed.extend(values)
        assert sketch.buckets == reference.buckets


def _moments(sketch: QuantileSketch) -> tuple[float, ...]:
    return (sketch._count, sketch._mean, sketch._m2, sketch._min, sketch._max)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(finite, max_size=5),
    st.lists(
        # A weight below 1 adds nothing either way.
        st.tuples(st.one_of(finite, gaps), st.integers(min_value=-1, max_value=4)),
        max_size=50,
    ),
)
def test_weighted_values_at_once_equal_adding_each_in_turn(
    before: list[float], pairs: list[tuple[float, int]]
) -> None:
    # A weight of 1 too: `add(value)` keeps it to be folded, `add_weighted` updates at once.
    at_once, each = QuantileSketch(), QuantileSketch()
    at_once.add_each(before)
    each.add_each(before)
    at_once.add_weighted([value for value, _ in pairs], [times for _, times in pairs])
    for value, times in pairs:
        each.add(value, times)
    at_once._fold()
    each._fold()
    assert repr(_moments(at_once)) == repr(_moments(each))
    assert at_once.buckets == each.buckets
