"""A mergeable quantile sketch: a log-linear histogram with exact count, mean, stdev, min, max.

Values are bucketed HDR-style: each power of two is split into `SUB_BUCKETS` equal-width buckets,
so a bucket's width is at most 1/`SUB_BUCKETS` of its lower bound. A percentile is answered with
the midpoint of the bucket holding the nearest-rank sample, clamped to the exact min and max, so
it is within `RELATIVE_ERROR` (1/128, about 0.78 %) of that sample. Memory depends on the range
of the values (at most `SUB_BUCKETS` buckets per power of two), never on how many were added.

Values <= 0 (a zero inter-token gap, a dispatch a hair early) share one bucket that answers 0
(clamped to the exact min); count, mean, stdev, min and max stay exact for them too.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

SUB_BUCKETS = 64
RELATIVE_ERROR = 1 / (2 * SUB_BUCKETS)
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 0.50),
    ("p90", 0.90),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p999", 0.999),
)

# Every value <= 0 lands here; positive values map to `exponent * SUB_BUCKETS + sub`, and
# float exponents stay far above this key.
_NON_POSITIVE = -(2**31)
_TWO_SUB = 2 * SUB_BUCKETS
# frexp's mantissa lies in [0.5, 1), so `int(mantissa * _TWO_SUB) - SUB_BUCKETS` is the sub-bucket
# (0 to SUB_BUCKETS - 1); scaling by a power of two is exact, so it equals
# `int((mantissa - 0.5) * _TWO_SUB)` with one float operation less per value.
_frexp = math.frexp
_ldexp = math.ldexp
_SUB_BITS = 7  # _TWO_SUB == 2**_SUB_BITS
# Positive values between these have buckets whose bounds are exact normal floats.
_SORTABLE_LOW = 2.0**-1000
_SORTABLE_HIGH = 2.0**1000
# How many values a sketch keeps before folding them in: enough that a fold sorts many values
# per bucket, few enough that the fold a `snapshot` pays stays around a millisecond a sketch.
FOLD_EVERY = 1024


class Distribution(BaseModel):
    """A frozen summary of one sketch, in the unit the caller chose (ms, tokens)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    mean: float
    stdev: float
    min: float
    max: float
    p50: float
    p90: float
    p95: float
    p99: float
    p999: float


class QuantileSketch:
    """Streaming percentiles in bounded memory, mergeable across processes.

    Values are counted in batches: `add` keeps the value, and every `FOLD_EVERY` values, or
    before anything is read (a figure, a merge, a pickle), the kept values are folded in. The
    count, mean and spread take them in the order they came, exactly as one at a time would;
    the buckets count them sorted, a few comparisons per bucket instead of arithmetic per
    value. A read never sees the difference.

    >>> sketch = QuantileSketch()
    >>> for value in range(1, 101):
    ...     sketch.add(value)
    >>> sketch.count, sketch.mean, sketch.min, sketch.max
    (100, 50.5, 1.0, 100.0)
    >>> abs(sketch.quantile(0.99) - 99) <= 99 * RELATIVE_ERROR
    True
    """

    __slots__ = ("_buckets", "_count", "_m2", "_max", "_mean", "_min", "_pending", "_unbucketed")

    def __init__(self) -> None:
        self._buckets: dict[int, int] = {}
        self._count = 0
        self._mean = 0.0
        self._m2 = 0.0
        self._min = math.inf
        self._max = -math.inf
        # Values added one at a time and not yet folded in at all.
        self._pending: list[float] = []
        # Values already in the count, mean and spread, not yet in the buckets.
        self._unbucketed: list[float] = []

    def __getstate__(self) -> dict[str, object]:
        self._fold()
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    @property
    def count(self) -> int:
        """How many values were added."""
        self._fold()
        return self._count

    @property
    def mean(self) -> float:
        """The exact mean of the values (0 for none)."""
        self._fold()
        return self._mean

    @property
    def min(self) -> float:
        """The smallest value (inf for none)."""
        self._fold()
        return self._min

    @property
    def max(self) -> float:
        """The largest value (-inf for none)."""
        self._fold()
        return self._max

    def add(self, value: float, times: int = 1) -> None:
        """Add `value`, `times` times (a chunk of k tokens adds its per-token gap k times)."""
        if times == 1:
            pending = self._pending
            pending.append(value)
            if len(pending) >= FOLD_EVERY:
                self._fold()
        elif times > 0:
            self.add_weighted((value,), (times,))

    def add_each(self, values: Iterable[float]) -> None:
        """Add every value once, in order: exactly `add` in a loop (`add_all` folds them as
        one batch, which rounds its mean apart), at the cost of extending a list."""
        pending = self._pending
        pending.extend(values)
        if len(pending) >= FOLD_EVERY:
            self._fold()

    def add_weighted(self, values: Iterable[float], weights: Iterable[int]) -> None:
        """Add each value its weight's times, in order: exactly `add(value, times)` in a loop,
        one call for them all (a weight below 1 adds nothing, as there).

        (A weight of 1 rounds as `add(value)` does: multiplying by 1 and dividing by a count
        held as an int or as a float give the same floats.)

        >>> sketch = QuantileSketch()
        >>> sketch.add_weighted([10.0, 40.0], [3, 1])
        >>> sketch.count, sketch.mean
        (4, 17.5)
        """
        # The weighted updates must come after the values added before them (their moments;
        # buckets are counts, so the unbucketed values may wait).
        if self._pending:
            self._fold_moments()
        buckets = self._buckets
        get = buckets.get
        count, mean, m2, low, high = self._count, self._mean, self._m2, self._min, self._max
        for value, times in zip(values, weights, strict=True):
            if times < 1:
                continue
            if value > 0:  # `_key(value)`, inline
                mantissa, exponent = _frexp(value)
                key = exponent * SUB_BUCKETS + int(mantissa * _TWO_SUB) - SUB_BUCKETS
            else:
                key = _NON_POSITIVE
            buckets[key] = get(key, 0) + times
            # Welford's update, weighted: `times` equal samples at once.
            count += times
            delta = value - mean
            mean += delta * times / count
            m2 += delta * (value - mean) * times
            if value < low:
                low = float(value)
            if value > high:
                high = float(value)
        self._count, self._mean, self._m2, self._min, self._max = count, mean, m2, low, high

    def add_all(
        self, values: Sequence[float], *, low: float | None = None, high: float | None = None
    ) -> None:
        """Add every value once: the same result as `add` in a loop, at about a third of the cost.

        `low` and `high` are `min(values)` and `max(values)`, for a caller that has them already.

        >>> sketch = QuantileSketch()
        >>> sketch.add_all([10.0, 20.0, 30.0])
        >>> sketch.count, sketch.mean
        (3, 20.0)
        """
        n = len(values)
        if n == 0:
            return
        if self._pending:
            self._fold_moments()
        # The batch's own mean and squared deviations, then the same combination as `merge`.
        batch_mean = math.fsum(values) / n
        first = values[0]
        if first == batch_mean and values.count(first) == n and -math.inf < first < math.inf:
            # Every value equals the mean (a NaN would have made it NaN): each square is 0.0, and
            # so is their sum; the smallest and largest are the first; they share one bucket.
            # A fast server's chunks read at once.
            self._combine(n, batch_mean, 0.0, float(first), float(first))
            key = _key(first)
            self._buckets[key] = self._buckets.get(key, 0) + n
            return
        if low is None:
            low = min(values)
        if high is None:
            high = max(values)
        batch_m2 = math.fsum([(v - batch_mean) ** 2 for v in values])
        self._combine(n, batch_mean, batch_m2, float(low), float(high))
        unbucketed = self._unbucketed
        unbucketed.extend(values)
        if len(unbucketed) >= FOLD_EVERY:
            self._count_buckets()

    def merge(self, other: QuantileSketch) -> None:
        """Fold `other` into this sketch (Chan et al.'s parallel variance), as if added here."""
        other._fold()
        if other._count == 0:
            return
        self._fold()
        buckets = self._buckets
        for key, n in other._buckets.items():
            buckets[key] = buckets.get(key, 0) + n
        self._combine(other._count, other._mean, other._m2, other._min, other._max)

    def _combine(self, count: int, mean: float, m2: float, low: float, high: float) -> None:
        total = self._count + count
        delta = mean - self._mean
        self._m2 += m2 + delta * delta * self._count * count / total
        self._mean += delta * count / total
        self._count = total
        # `min(self._min, low)` and `max(self._max, high)`, without two calls.
        if low < self._min:
            self._min = low
        if high > self._max:
            self._max = high

    def _fold(self) -> None:
        """Fold every kept value in: the state is then what adding them one by one gives."""
        if self._pending:
            self._fold_moments()
        if self._unbucketed:
            self._count_buckets()

    def _fold_moments(self) -> None:
        """Welford's update of each pending value in the order they came; they then wait for
        their buckets with the others."""
        pending = self._pending
        # In floats: `value - mean` converts an int value just so, and a count below 2**53 is
        # exact as a float, so each step rounds as the int arithmetic did.
        count, mean, m2 = float(self._count), self._mean, self._m2
        for value in map(float, pending):
            count += 1.0
            delta = value - mean
            mean += delta / count
            m2 += delta * (value - mean)
        if mean == mean:
            # No value was NaN (one would have made the mean NaN for good): the smallest and
            # largest are the first of their equals, as comparing one by one would keep them.
            low, high = min(pending), max(pending)
            if low < self._min:
                self._min = float(low)
            if high > self._max:
                self._max = float(high)
        else:
            for value in pending:
                if value < self._min:
                    self._min = float(value)
                if value > self._max:
                    self._max = float(value)
        self._count, self._mean, self._m2 = int(count), mean, m2
        self._unbucketed.extend(pending)
        pending.clear()

    def _count_buckets(self) -> None:
        """Count the values waiting for their buckets, sorted: one bisection per bucket."""
        values = self._unbucketed
        buckets = self._buckets
        get = buckets.get
        if self._mean != self._mean:
            # A NaN (or infinities) among the values: they do not sort, so one key per value.
            for value in values:
                key = _key(value)
                buckets[key] = get(key, 0) + 1
            values.clear()
            return
        ordered = sorted(map(float, values))
        values.clear()
        end = len(ordered)
        # Values <= 0 share one bucket; they sort first.
        at = bisect_right(ordered, 0.0)
        if at:
            buckets[_NON_POSITIVE] = get(_NON_POSITIVE, 0) + at
        if at < end and not (ordered[at] >= _SORTABLE_LOW and ordered[-1] < _SORTABLE_HIGH):
            # Values so small or large that a bucket's bounds would not be exact floats.
            for value in ordered[at:]:
                key = _key(value)
                buckets[key] = get(key, 0) + 1
            return
        while at < end:
            mantissa, exponent = _frexp(ordered[at])
            sub = int(mantissa * _TWO_SUB)
            key = exponent * SUB_BUCKETS + sub - SUB_BUCKETS
            # The bucket holds [sub, sub + 1) / _TWO_SUB * 2**exponent: exact bounds.
            after = bisect_left(ordered, _ldexp(sub + 1, exponent - _SUB_BITS), at)
            buckets[key] = get(key, 0) + after - at
            at = after

    @property
    def stdev(self) -> float:
        """The population standard deviation (0 for fewer than two samples)."""
        self._fold()
        # Rounding can leave the sum of squares a hair below zero (one value added `times` times:
        # `value * times / times` need not be `value`); the spread is then zero, not an error.
        return math.sqrt(max(self._m2, 0.0) / self._count) if self._count > 1 else 0.0

    def quantile(self, q: float) -> float:
        """The nearest-rank `q` quantile (0 < q <= 1), within `RELATIVE_ERROR` of the sample.

        >>> QuantileSketch().quantile(0.5)
        nan
        """
        if not 0 < q <= 1:
            raise ValueError(f"quantile must be in (0, 1], got {q}")
        self._fold()
        if self._count == 0:
            return math.nan
        rank = max(1, math.ceil(q * self._count))
        seen = 0
        for key in sorted(self._buckets):
            seen += self._buckets[key]
            if seen >= rank:
                return min(max(_midpoint(key), self._min), self._max)
        return self._max

    def summary(self, scale: float = 1.0) -> Distribution | None:
        """The frozen summary, every figure multiplied by `scale` (1e-6 turns ns into ms).

        >>> s = QuantileSketch()
        >>> s.add(2_000_000)
        >>> s.summary(scale=1e-6).p99
        2.0
        >>> QuantileSketch().summary() is None
        True
        """
        self._fold()
        if self._count == 0:
            return None
        figures = {name: self.quantile(q) * scale for name, q in PERCENTILES}
        return Distribution(
            count=self._count,
            mean=self._mean * scale,
            stdev=self.stdev * scale,
            min=self._min * scale,
            max=self._max * scale,
            **figures,
        )

    @property
    def bucket_count(self) -> int:
        """How many buckets hold samples: the sketch's memory, bounded by the value range."""
        self._fold()
        return len(self._buckets)

    @property
    def buckets(self) -> dict[int, int]:
        """Samples per bucket key (a copy): the sketch's whole memory besides the moments."""
        self._fold()
        return dict(self._buckets)


def _key(value: float) -> int:
    """The bucket of one value."""
    if value > 0:
        mantissa, exponent = _frexp(value)
        return exponent * SUB_BUCKETS + int(mantissa * _TWO_SUB) - SUB_BUCKETS
    return _NON_POSITIVE


def _midpoint(key: int) -> float:
    if key == _NON_POSITIVE:
        return 0.0
    exponent, sub = divmod(key, SUB_BUCKETS)
    lower = math.ldexp(0.5 + sub / _TWO_SUB, exponent)
    return lower + math.ldexp(1 / (2 * _TWO_SUB), exponent)
