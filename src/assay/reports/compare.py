"""`assay compare`: runs side by side, step by step, with a verdict on each difference.

Each run is compared with the first (the baseline). A difference is *better* or *worse* only
when it is larger than the run-to-run noise the sample sizes imply; otherwise it is *within
noise*. How noise is judged, per kind of figure:

- a rate (requests/s, tokens/s, goodput): the count behind it is treated as Poisson, so its
  relative standard error is 1/sqrt(count); two rates differ when their gap exceeds twice the
  combined standard error (about 95 %);
- a latency percentile p from n samples: the rank of the p-quantile is uncertain by
  ±2·sqrt(n·p·(1-p)) samples; that rank interval is turned into a value interval by
  interpolating between the percentiles the report keeps (min, p50, p90, p95, p99, p99.9, max);
  two percentiles differ when their intervals do not overlap;
- the error rate: a two-proportion z-test at |z| > 2.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from pydantic import JsonValue

from assay.metrics.sketch import Distribution
from assay.reports.report import Report, StepReport

# What must match for two runs to be compared without --force.
WORKLOAD_KEYS: Final = (
    "endpoint",
    "profile",
    "data",
    "prompt_tokens",
    "output_tokens",
    "stream",
    "ignore_eos",
    "shared_prefix_tokens",
)
Z: Final = 2.0


class Verdict(StrEnum):
    """How a figure moved against the baseline."""

    better = "better"
    worse = "worse"
    noise = "within noise"
    unmeasured = "n/a"


@dataclass(frozen=True, slots=True)
class Figure:
    """One compared figure: its name, unit, and whether higher is better."""

    name: str
    unit: str
    higher_is_better: bool


@dataclass(frozen=True, slots=True)
class Comparison:
    """One figure of one step in one run against the baseline's."""

    step: int
    figure: Figure
    baseline: float | None
    value: float | None
    verdict: Verdict

    @property
    def change(self) -> float | None:
        """Relative change against the baseline (0.1 = +10 %), None when not computable."""
        if self.baseline is None or self.value is None or self.baseline == 0:
            return None
        return (self.value - self.baseline) / self.baseline


@dataclass(frozen=True, slots=True)
class RunComparison:
    """Every compared figure of one run against the baseline, and the steps left unmatched."""

    name: str
    comparisons: tuple[Comparison, ...]
    unmatched_steps: tuple[int, ...]


def workload_differences(baseline: Report, other: Report) -> list[str]:
    """The workload settings in which `other` differs from `baseline` ("key: a vs b").

    >>> from datetime import UTC, datetime
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> a = build_report(run_config={"endpoint": "chat"}, steps=[], started_at=now,
    ...                  finished_at=now, max_error_rate=0.05)
    >>> b = a.model_copy(update={"run_config": {"endpoint": "completions"}})
    >>> workload_differences(a, b)
    ['endpoint: chat vs completions']
    """
    differences: list[str] = []
    for key in WORKLOAD_KEYS:
        left, right = baseline.run_config.get(key), other.run_config.get(key)
        if left != right:
            differences.append(f"{key}: {_show(left)} vs {_show(right)}")
    return differences


def _show(value: JsonValue) -> str:
    return "(none)" if value is None else str(value)


# ---- noise ---------------------------------------------------------------------------------


def rates_differ(a: float, count_a: int, b: float, count_b: int) -> bool:
    """Whether two rates differ beyond Poisson noise on the counts behind them.

    >>> rates_differ(100.0, 10_000, 101.0, 10_100)
    False
    >>> rates_differ(100.0, 10_000, 120.0, 12_000)
    True
    """
    if count_a <= 0 or count_b <= 0:
        return a != b
    error = math.hypot(a / math.sqrt(count_a), b / math.sqrt(count_b))
    return abs(a - b) > Z * error


def proportions_differ(errors_a: int, total_a: int, errors_b: int, total_b: int) -> bool:
    """A two-proportion z-test at |z| > 2.

    >>> proportions_differ(5, 1000, 7, 1000)
    False
    >>> proportions_differ(5, 1000, 60, 1000)
    True
    """
    if total_a <= 0 or total_b <= 0:
        return False
    pooled = (errors_a + errors_b) / (total_a + total_b)
    if pooled in (0.0, 1.0):
        return False
    spread = math.sqrt(pooled * (1 - pooled) * (1 / total_a + 1 / total_b))
    return abs(errors_a / total_a - errors_b / total_b) > Z * spread


_KNOWN_LEVELS: Final = (
    (0.5, "p50"),
    (0.9, "p90"),
    (0.95, "p95"),
    (0.99, "p99"),
    (0.999, "p999"),
)


def value_at(distribution: Distribution, level: float) -> float:
    """The distribution's value at quantile `level`, interpolated between the kept points."""
    points = [(0.0, float(distribution.min))]
    points += [(q, float(getattr(distribution, name))) for q, name in _KNOWN_LEVELS]
    points.append((1.0, float(distribution.max)))
    level = min(1.0, max(0.0, level))
    for (q0, v0), (q1, v1) in itertools.pairwise(points):
        if q0 <= level <= q1:
            return v0 if q1 == q0 else v0 + (v1 - v0) * (level - q0) / (q1 - q0)
    return points[-1][1]


def percentile_interval(distribution: Distribution, level: float) -> tuple[float, float]:
    """The ~95 % interval of the `level` quantile from `distribution.count` samples.

    >>> from assay.metrics import QuantileSketch
    >>> sketch = QuantileSketch()
    >>> for value in range(1, 1001):
    ...     sketch.add(value)
    >>> summary = sketch.summary()
    >>> assert summary is not None
    >>> low, high = percentile_interval(summary, 0.5)
    >>> 450 < low < 500 < high < 550
    True
    """
    n = max(distribution.count, 1)
    spread = Z * math.sqrt(level * (1 - level) / n)
    return value_at(distribution, level - spread), value_at(distribution, level + spread)


def percentiles_differ(a: Distribution, b: Distribution, level: float) -> bool:
    """Whether the `level` quantiles of two runs' samples differ beyond sampling noise."""
    low_a, high_a = percentile_interval(a, level)
    low_b, high_b = percentile_interval(b, level)
    return high_a < low_b or high_b < low_a


# ---- the figures ---------------------------------------------------------------------------


def _rate_of(
    read: Callable[[StepReport], float], count: Callable[[StepReport], int]
) -> Callable[[StepReport, StepReport], tuple[float | None, float | None, bool | None]]:
    def compare(a: StepReport, b: StepReport) -> tuple[float | None, float | None, bool | None]:
        value_a, value_b = read(a), read(b)
        return value_a, value_b, rates_differ(value_a, count(a), value_b, count(b))

    return compare


def _percentile_of(
    metric: str, level: float
) -> Callable[[StepReport, StepReport], tuple[float | None, float | None, bool | None]]:
    name = {0.5: "p50", 0.99: "p99"}[level]

    def compare(a: StepReport, b: StepReport) -> tuple[float | None, float | None, bool | None]:
        dist_a: Distribution | None = getattr(a.metrics.latency, metric)
        dist_b: Distribution | None = getattr(b.metrics.latency, metric)
        if dist_a is None or dist_b is None or not dist_a.count or not dist_b.count:
            value_a = None if dist_a is None else float(getattr(dist_a, name))
            value_b = None if dist_b is None else float(getattr(dist_b, name))
            return value_a, value_b, None
        return (
            float(getattr(dist_a, name)),
            float(getattr(dist_b, name)),
            percentiles_differ(dist_a, dist_b, level),
        )

    return compare


def _error_rate(a: StepReport, b: StepReport) -> tuple[float | None, float | None, bool | None]:
    oa, ob = a.metrics.outcomes, b.metrics.outcomes
    finished_a, finished_b = oa.completed + oa.errored, ob.completed + ob.errored
    return (
        oa.error_rate * 100,
        ob.error_rate * 100,
        proportions_differ(oa.errored, finished_a, ob.errored, finished_b),
    )


def _goodput(a: StepReport, b: StepReport) -> tuple[float | None, float | None, bool | None]:
    ga, gb = a.metrics.goodput, b.metrics.goodput
    if ga is None or gb is None:
        return (
            (None if ga is None else ga.requests_per_s),
            (None if gb is None else gb.requests_per_s),
            None,
        )
    return (
        ga.requests_per_s,
        gb.requests_per_s,
        rates_differ(ga.requests_per_s, ga.good, gb.requests_per_s, gb.good),
    )


def _completed(step: StepReport) -> int:
    return step.metrics.outcomes.completed


def _dispatched(step: StepReport) -> int:
    return step.metrics.outcomes.dispatched


def _usable_tokens(step: StepReport) -> int:
    return step.metrics.throughput.usable_output_tokens


COMPARED: Final[
    tuple[tuple[Figure, Callable[[StepReport, StepReport], tuple[float | None, float | None,
                                                                   bool | None]]], ...]
] = (
    (Figure("usable req/s", "req/s", True),
     _rate_of(lambda s: s.metrics.throughput.usable_requests_per_s, _completed)),
    (Figure("attempted req/s", "req/s", True),
     _rate_of(lambda s: s.metrics.throughput.attempted_requests_per_s, _dispatched)),
    (Figure("usable output tok/s", "tok/s", True),
     _rate_of(lambda s: s.metrics.throughput.usable_output_tokens_per_s, _usable_tokens)),
    (Figure("goodput req/s", "req/s", True), _goodput),
    (Figure("error rate", "%", False), _error_rate),
    (Figure("TTFT p50", "ms", False), _percentile_of("ttft_ms", 0.5)),
    (Figure("TTFT p99", "ms", False), _percentile_of("ttft_ms", 0.99)),
    (Figure("ITL p50", "ms", False), _percentile_of("itl_ms", 0.5)),
    (Figure("ITL p99", "ms", False), _percentile_of("itl_ms", 0.99)),
    (Figure("TPOT p50", "ms", False), _percentile_of("tpot_ms", 0.5)),
    (Figure("E2E p50", "ms", False), _percentile_of("e2e_ms", 0.5)),
    (Figure("E2E p99", "ms", False), _percentile_of("e2e_ms", 0.99)),
)  # fmt: skip


def compare_steps(baseline: StepReport, other: StepReport) -> list[Comparison]:
    """Every figure of one step against the baseline step."""
    out: list[Comparison] = []
    for figure, compare in COMPARED:
        value_a, value_b, differs = compare(baseline, other)
        if value_a is None or value_b is None or differs is None:
            verdict = Verdict.unmeasured
        elif not differs:
            verdict = Verdict.noise
        else:
            better = value_b > value_a if figure.higher_is_better else value_b < value_a
            verdict = Verdict.better if better else Verdict.worse
        out.append(Comparison(baseline.index, figure, value_a, value_b, verdict))
    return out


def compare_runs(baseline: Report, other: Report, name: str) -> RunComparison:
    """`other` against `baseline`, steps matched by index and profile."""
    comparisons: list[Comparison] = []
    unmatched: list[int] = []
    by_index = {step.index: step for step in baseline.steps}
    for step in other.steps:
        base = by_index.get(step.index)
        if base is None or base.profile != step.profile:
            unmatched.append(step.index)
            continue
        comparisons.extend(compare_steps(base, step))
    unmatched.extend(index for index in by_index if index >= len(other.steps))
    return RunComparison(name, tuple(comparisons), tuple(sorted(set(unmatched))))


def compare_all(reports: Sequence[tuple[str, Report]]) -> list[RunComparison]:
    """Each run after the first against the first."""
    (_, baseline), *others = reports
    return [compare_runs(baseline, report, name) for name, report in others]
