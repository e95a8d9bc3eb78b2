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
from collections.abc import Sequence

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

    >>> sketch = QuantileSketch()
    >>> for value in range(1, 101):
    ...     sketch.add(value)
    >>> sketch.count, sketch.mean, sketch.min, sketch.max
    (100, 50.5, 1.0, 100.0)
    >>> abs(sketch.quantile(0.99) - 99) <= 99 * RELATIVE_ERROR
    True
    """

    __slots__ = ("_buckets", "_m2", "count", "max", "mean", "min")

    def __init__(self) -> None:
        self._buckets: dict[int, int] = {}
        self.count = 0
        self.mean = 0.0
        self._m2 = 0.0
        self.min = math.inf
        self.max = -math.inf

    def add(self, value: float, times: int = 1) -> None:
        """Add `value`, `times` times (a chunk of k tokens adds its per-token gap k times)."""
        if times != 1:
            if times > 0:
                self._add_times(value, times)
            return
        # One sample, the case of nearly every call: Welford's update with the weight 1 left out
        # (multiplying by 1 is exact, so the figures are those of `_add_times`).
        if value > 0:
            mantissa, exponent = _frexp(value)
            key = exponent * SUB_BUCKETS + int(mantissa * _TWO_SUB) - SUB_BUCKETS
        else:
            key = _NON_POSITIVE
        buckets = self._buckets
        buckets[key] = buckets.get(key, 0) + 1
        count = self.count + 1
        mean = self.mean
        delta = value - mean
        mean += delta / count
        self._m2 += delta * (value - mean)
        self.mean = mean
        self.count = count
        if value < self.min:
            self.min = float(value)
        if value > self.max:
            self.max = float(value)

    def _add_times(self, value: float, times: int) -> None:
        if value > 0:
            mantissa, exponent = _frexp(value)
            key = exponent * SUB_BUCKETS + int(mantissa * _TWO_SUB) - SUB_BUCKETS
        else:
            key = _NON_POSITIVE
        buckets = self._buckets
        buckets[key] = buckets.get(key, 0) + times
        # Welford's update, weighted: `times` equal samples at once.
        count = self.count + times
        delta = value - self.mean
        self.mean += delta * times / count
        self._m2 += delta * (value - self.mean) * times
        self.count = count
        if value < self.min:
            self.min = float(value)
        if value > self.max:
            self.max = float(value)

    def add_all(self, values: Sequence[float]) -> None:
        """Add every value once: the same result as `add` in a loop, at about a third of the cost.

        >>> sketch = QuantileSketch()
        >>> sketch.add_all([10.0, 20.0, 30.0])
        >>> sketch.count, sketch.mean
        (3, 20.0)
        """
        n = len(values)
        if n == 0:
            return
        low = min(values)
        buckets = self._buckets
        get = buckets.get
        if low > 0:
            # Every value positive (inter-token gaps nearly always are): no branch per value.
            for mantissa, exponent in map(_frexp, values):
                key = exponent * SUB_BUCKETS + int(mantissa * _TWO_SUB) - SUB_BUCKETS
                buckets[key] = get(key, 0) + 1
        else:
            for value in values:
                if value > 0:
                    mantissa, exponent = _frexp(value)
                    key = exponent * SUB_BUCKETS + int(mantissa * _TWO_SUB) - SUB_BUCKETS
                else:
                    key = _NON_POSITIVE
                buckets[key] = get(key, 0) + 1
        # The batch's own mean and squared deviations, then the same combination as `merge`.
        batch_mean = math.fsum(values) / n
        batch_m2 = math.fsum([(v - batch_mean) ** 2 for v in values])
        self._combine(n, batch_mean, batch_m2, float(low), float(max(values)))

    def merge(self, other: QuantileSketch) -> None:
        """Fold `other` into this sketch (Chan et al.'s parallel variance), as if added here."""
        if other.count == 0:
            return
        buckets = self._buckets
        for key, n in other._buckets.items():
            buckets[key] = buckets.get(key, 0) + n
        self._combine(other.count, other.mean, other._m2, other.min, other.max)

    def _combine(self, count: int, mean: float, m2: float, low: float, high: float) -> None:
        total = self.count + count
        delta = mean - self.mean
        self._m2 += m2 + delta * delta * self.count * count / total
        self.mean += delta * count / total
        self.count = total
        self.min = min(self.min, low)
        self.max = max(self.max, high)

    @property
    def stdev(self) -> float:
        """The population standard deviation (0 for fewer than two samples)."""
        # Rounding can leave the sum of squares a hair below zero (one value added `times` times:
        # `value * times / times` need not be `value`); the spread is then zero, not an error.
        return math.sqrt(max(self._m2, 0.0) / self.count) if self.count > 1 else 0.0

    def quantile(self, q: float) -> float:
        """The nearest-rank `q` quantile (0 < q <= 1), within `RELATIVE_ERROR` of the sample.

        >>> QuantileSketch().quantile(0.5)
        nan
        """
        if not 0 < q <= 1:
            raise ValueError(f"quantile must be in (0, 1], got {q}")
        if self.count == 0:
            return math.nan
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for key in sorted(self._buckets):
            seen += self._buckets[key]
            if seen >= rank:
                return min(max(_midpoint(key), self.min), self.max)
        return self.max

    def summary(self, scale: float = 1.0) -> Distribution | None:
        """The frozen summary, every figure multiplied by `scale` (1e-6 turns ns into ms).

        >>> s = QuantileSketch()
        >>> s.add(2_000_000)
        >>> s.summary(scale=1e-6).p99
        2.0
        >>> QuantileSketch().summary() is None
        True
        """
        if self.count == 0:
            return None
        figures = {name: self.quantile(q) * scale for name, q in PERCENTILES}
        return Distribution(
            count=self.count,
            mean=self.mean * scale,
            stdev=self.stdev * scale,
            min=self.min * scale,
            max=self.max * scale,
            **figures,
        )

    @property
    def bucket_count(self) -> int:
        """How many buckets hold samples: the sketch's memory, bounded by the value range."""
        return len(self._buckets)


def _midpoint(key: int) -> float:
    if key == _NON_POSITIVE:
        return 0.0
    exponent, sub = divmod(key, SUB_BUCKETS)
    lower = math.ldexp(0.5 + sub / _TWO_SUB, exponent)
    return lower + math.ldexp(1 / (2 * _TWO_SUB), exponent)
