"""A step's verdict on a percentile SLO, by statistics rather than one percentile read.

A pXX SLO allows a fraction a = 1 - XX/100 of the attempted requests to miss its limit. A step
that attempted n requests, k of which missed, estimates the server's miss fraction p; the
verdict asks how sure that estimate is, with the exact (Clopper-Pearson) one-sided binomial
bounds at the stated confidence c:

- **pass** when the upper bound of p is at most a: with confidence c the server misses no more
  often than allowed;
- **fail** when the lower bound of p is above a: with confidence c it misses more often;
- **undecided** otherwise: the step is too short to tell, and is run longer.

The upper bound U solves P(X <= k | n, U) = 1 - c, the lower bound L solves
P(X >= k | n, L) = 1 - c (X binomial); both are found by bisection on the binomial tail, and
for k = 0 the upper bound is 1 - (1 - c)^(1/n) (so a p99 SLO at 95 % needs 299 requests
without a miss to pass). The denominator is every attempted request: an errored, invalid,
timed-out, cancelled or never-sent request misses every SLO.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal, TypeAlias

Verdict: TypeAlias = Literal["pass", "fail", "undecided"]
"""How a step stands against an SLO (or all of them)."""

_BISECTIONS = 60
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, 100_000):
        for numerator in (
            m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            result *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return result


def _regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X binomial with n trials of success probability p, as I_(1-p)(n-k, k+1).

    >>> round(binomial_cdf(1, 2, 0.5), 6)
    0.75
    """
    if k < 0:
        return 0.0
    if k >= n or p <= 0:
        return 1.0
    if p >= 1:
        return 0.0
    return min(1.0, max(0.0, _regularized_beta(n - k, k + 1, 1 - p)))


@functools.lru_cache(maxsize=4096)
def miss_upper_bound(n: int, k: int, confidence: float) -> float:
    """The one-sided Clopper-Pearson upper bound of the miss fraction after k misses in n.

    >>> round(miss_upper_bound(10, 0, 0.95), 4)  # 1 - 0.05 ** (1 / 10)
    0.2589
    """
    _check(n, k, confidence)
    if k >= n:
        return 1.0
    alpha = 1 - confidence
    if k == 0:
        return 1 - math.pow(alpha, 1 / n)
    low, high = k / n, 1.0
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if binomial_cdf(k, n, middle) > alpha:
            low = middle
        else:
            high = middle
    return high


@functools.lru_cache(maxsize=4096)
def miss_lower_bound(n: int, k: int, confidence: float) -> float:
    """The one-sided Clopper-Pearson lower bound of the miss fraction after k misses in n.

    >>> round(miss_lower_bound(10, 10, 0.95), 4)  # 0.05 ** (1 / 10)
    0.7411
    >>> miss_lower_bound(10, 0, 0.95)
    0.0
    """
    _check(n, k, confidence)
    if k == 0:
        return 0.0
    alpha = 1 - confidence
    if k >= n:
        return math.pow(alpha, 1 / n)
    low, high = 0.0, k / n
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        # P(X >= k | middle) = 1 - P(X <= k - 1 | middle) grows with middle.
        if 1 - binomial_cdf(k - 1, n, middle) < alpha:
            low = middle
        else:
            high = middle
    return low


def _check(n: int, k: int, confidence: float) -> None:
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"misses {k} of {n} attempted: need 0 <= k <= n and n > 0")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} is not within (0, 1)")


@dataclass(frozen=True, slots=True)
class SloJudgement:
    """One SLO's verdict on a step, with the figures it was decided by."""

    attempted: int
    missed: int
    allowed: float
    lower: float
    upper: float
    verdict: Verdict

    @property
    def miss_fraction(self) -> float:
        """The observed fraction of attempted requests that missed."""
        return self.missed / self.attempted if self.attempted else 0.0


def judge(attempted: int, missed: int, allowed: float, confidence: float) -> SloJudgement:
    """Pass, fail or undecided for `missed` of `attempted` against an allowed miss fraction.

    >>> judge(299, 0, 0.01, 0.95).verdict, judge(298, 0, 0.01, 0.95).verdict
    ('pass', 'undecided')
    >>> judge(100, 5, 0.01, 0.95).verdict
    'fail'
    """
    if attempted == 0:
        return SloJudgement(0, 0, allowed, 0.0, 1.0, "undecided")
    lower = miss_lower_bound(attempted, missed, confidence)
    upper = miss_upper_bound(attempted, missed, confidence)
    verdict: Verdict
    if upper <= allowed:
        verdict = "pass"
    elif lower > allowed:
        verdict = "fail"
    else:
        verdict = "undecided"
    return SloJudgement(attempted, missed, allowed, lower, upper, verdict)


def combined(verdicts: list[Verdict]) -> Verdict:
    """A step's verdict over every SLO: fail if one fails, pass if all pass, else undecided.

    >>> combined(["pass", "undecided"]), combined(["undecided", "fail"]), combined(["pass"])
    ('undecided', 'fail', 'pass')
    """
    if "fail" in verdicts:
        return "fail"
    if verdicts and all(verdict == "pass" for verdict in verdicts):
        return "pass"
    return "undecided"


__all__ = [
    "SloJudgement",
    "Verdict",
    "binomial_cdf",
    "combined",
    "judge",
    "miss_lower_bound",
    "miss_upper_bound",
]
