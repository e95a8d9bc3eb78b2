"""A sketch that folds its values in batches reads exactly as one that counts each value at once.

The reference below is the sketch as it was before batching: every `add` updates the buckets
and the moments on the spot. Any sequence of adds, weighted adds, batches, merges (of sketches
with values still kept), pickles and reads in between must give the same count, mean, spread,
min, max, buckets and percentiles, bit for bit, whatever the batch size.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics import PERCENTILES, QuantileSketch
from assay.metrics import sketch as sketch_module
from assay.metrics.sketch import SUB_BUCKETS, _midpoint

_NON_POSITIVE = -(2**31)


class OneAtATime:
    """The unbatched sketch: the arithmetic of `QuantileSketch` before batching, verbatim."""

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf

    def add(self, value: float, times: int = 1) -> None:
        if times <= 0:
            return
        key = _key(value)
        self.buckets[key] = self.buckets.get(key, 0) + times
        if times == 1:
            count = self.count + 1
            mean = self.mean
            delta = value - mean
            mean += delta / count
            self.m2 += delta * (value - mean)
            self.mean = mean
            self.count = count
        else:
            count = self.count + times
            delta = value - self.mean
            self.mean += delta * times / count
            self.m2 += delta * (value - self.mean) * times
            self.count = count
        if value < self.min:
            self.min = float(value)
        if value > self.max:
            self.max = float(value)

    def add_all(self, values: Sequence[float]) -> None:
        n = len(values)
        if n == 0:
            return
        for value in values:
            key = _key(value)
            self.buckets[key] = self.buckets.get(key, 0) + 1
        batch_mean = math.fsum(values) / n
        batch_m2 = math.fsum([(v - batch_mean) ** 2 for v in values])
        self._combine(n, batch_mean, batch_m2, float(min(values)), float(max(values)))

    def merge(self, other: OneAtATime) -> None:
        if other.count == 0:
            return
        for key, n in other.buckets.items():
            self.buckets[key] = self.buckets.get(key, 0) + n
        self._combine(other.count, other.mean, other.m2, other.min, other.max)

    def _combine(self, count: int, mean: float, m2: float, low: float, high: float) -> None:
        total = self.count + count
        delta = mean - self.mean
        self.m2 += m2 + delta * delta * self.count * count / total
        self.mean += delta * count / total
        self.count = total
        self.min = min(self.min, low)
        self.max = max(self.max, high)

    def quantile(self, q: float) -> float:
        if self.count == 0:
            return math.nan
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if seen >= rank:
                return min(max(_midpoint(key), self.min), self.max)
        return self.max

    @property
    def stdev(self) -> float:
        return math.sqrt(max(self.m2, 0.0) / self.count) if self.count > 1 else 0.0


def _key(value: float) -> int:
    if value > 0:
        mantissa, exponent = math.frexp(value)
        return exponent * SUB_BUCKETS + int(mantissa * 2 * SUB_BUCKETS) - SUB_BUCKETS
    return _NON_POSITIVE


def _same(a: float, b: float) -> bool:
    """Equal to the bit (NaN equals NaN; 0.0 and -0.0 differ)."""
    return repr(float(a)) == repr(float(b))


def assert_reads_alike(batched: QuantileSketch, reference: OneAtATime) -> None:
    assert batched.count == reference.count
    for name in ("mean", "min", "max", "stdev"):
        assert _same(getattr(batched, name), getattr(reference, name)), name
    assert batched.buckets == reference.buckets
    for _, q in PERCENTILES:
        assert _same(batched.quantile(q), reference.quantile(q))


@contextmanager
def folding_every(size: int) -> Iterator[None]:
    kept = sketch_module.FOLD_EVERY
    sketch_module.FOLD_EVERY = size
    try:
        yield
    finally:
        sketch_module.FOLD_EVERY = kept


nanoseconds = st.integers(min_value=-(10**6), max_value=10**13)
ordinary = st.floats(min_value=-1e9, max_value=1e15, allow_nan=False, allow_infinity=False)
extreme = st.sampled_from([0.0, -0.0, 5e-324, 1e-310, 2.0**-1000, 1e300, 2.0**1000, 1.5, 1.0])
# A bucket's lower bound, and the value just below it (the top of the bucket before).
bounds = st.builds(
    lambda sub, exponent, below: (64 + sub) * 2**exponent - below,
    st.integers(0, 64),
    st.integers(0, 30),
    st.sampled_from([0, 1]),
)
values = nanoseconds | ordinary | extreme | bounds
# A batch's squared deviations of 1e300 overflow (an error for either sketch): kept moderate.
batches = st.lists(
    nanoseconds | ordinary | bounds | extreme.filter(lambda v: abs(v) < 1e100), max_size=20
)


@dataclass(frozen=True)
class Add:
    value: float
    times: int = 1


@dataclass(frozen=True)
class AddAll:
    values: list[float]


@dataclass(frozen=True)
class Read:
    pass


@dataclass(frozen=True)
class Pickle:
    pass


@dataclass(frozen=True)
class Merge:
    steps: list[Add | AddAll]
    read_first: bool


feeds = st.builds(Add, values, st.sampled_from([1, 1, 1, 2, 3, 0])) | st.builds(AddAll, batches)
steps = (
    feeds
    | st.builds(Read)
    | st.builds(Pickle)
    | st.builds(Merge, st.lists(feeds, max_size=12), st.booleans())
)


def feed(step: Add | AddAll, batched: QuantileSketch, reference: OneAtATime) -> None:
    if isinstance(step, Add):
        batched.add(step.value, step.times)
        reference.add(step.value, step.times)
    else:
        batched.add_all(step.values)
        reference.add_all(step.values)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([1, 2, 3, 7, 4096]), st.lists(steps, max_size=60))
def test_batched_sketch_reads_as_the_unbatched_one(
    fold_every: int, program: list[Add | AddAll | Read | Pickle | Merge]
) -> None:
    with folding_every(fold_every):
        batched, reference = QuantileSketch(), OneAtATime()
        for step in program:
            match step:
                case Add() | AddAll():
                    feed(step, batched, reference)
                case Read():
                    assert_reads_alike(batched, reference)
                case Pickle():
                    batched = pickle.loads(pickle.dumps(batched))
                case Merge(steps=inner, read_first=read_first):
                    other, other_reference = QuantileSketch(), OneAtATime()
                    for inner_step in inner:
                        feed(inner_step, other, other_reference)
                    if read_first:
                        assert_reads_alike(other, other_reference)
                    batched.merge(other)
                    reference.merge(other_reference)
        assert_reads_alike(batched, reference)


@settings(max_examples=100, deadline=None)
@given(st.lists(values | st.just(math.nan), max_size=40))
def test_a_nan_among_the_values_reads_as_unbatched(samples: list[float]) -> None:
    batched, reference = QuantileSketch(), OneAtATime()
    for value in samples:
        batched.add(value)
        reference.add(value)
    assert_reads_alike(batched, reference)


def test_summary_of_kept_values_equals_the_unbatched_figures() -> None:
    batched, reference = QuantileSketch(), OneAtATime()
    for i in range(10_000):
        value = 40_000_000 + (i * 7919) % 3_000_000
        batched.add(value)
        reference.add(value)
    summary = batched.summary(1e-6)
    assert summary is not None
    assert summary.count == reference.count
    assert summary.mean == reference.mean * 1e-6
    assert summary.p99 == reference.quantile(0.99) * 1e-6


def test_a_pickled_sketch_carries_no_kept_values() -> None:
    sketch = QuantileSketch()
    sketch.add(3.0)
    restored = pickle.loads(pickle.dumps(sketch))
    assert restored._pending == []
    assert restored._unbucketed == []
    assert (restored.count, restored.mean, restored.buckets) == (1, 3.0, sketch.buckets)


def test_values_on_every_bucket_bound_count_in_their_own_bucket() -> None:
    samples = [(64 + sub) * 2**20 - below for sub in range(65) for below in (0, 1)]
    batched, reference = QuantileSketch(), OneAtATime()
    for value in samples:
        batched.add(value)
        reference.add(value)
    assert_reads_alike(batched, reference)


@settings(max_examples=100, deadline=None)
@given(st.lists(batches.filter(bool), max_size=8))
def test_a_batch_given_its_extremes_reads_as_one_that_finds_them(groups: list[list[float]]) -> None:
    given_extremes, found = QuantileSketch(), QuantileSketch()
    for group in groups:
        given_extremes.add_all(group, low=min(group), high=max(group))
        found.add_all(group)
    assert given_extremes.buckets == found.buckets
    for name in ("count", "mean", "min", "max", "stdev"):
        assert _same(getattr(given_extremes, name), getattr(found, name))
