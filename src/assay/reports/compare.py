"""Comparing stored runs step by step: each figure against the first run, marked better or worse,
or "~" when the difference is within the noise the sample sizes allow.

The noise rule, per kind of figure (two standard errors, about 95 %):

- A request rate is a count over a duration; its count is taken as Poisson, so the standard
  error of a rate r from n requests is r / sqrt(n). Two rates are within noise when they differ
  by less than 2 * sqrt(r1^2 / n1 + r2^2 / n2).
- An error rate is a proportion of finished requests: within noise when the two differ by less
  than 2 standard errors of the pooled proportion.
- A latency percentile p from n samples: the sample ranks n*p +- 2*sqrt(n*p*(1-p)) bound it (an
  order-statistic interval, free of any assumption on the distribution). The report keeps
  min, p50, p90, p95, p99, p99.9 and max, so the interval's ends are read from those by linear
  interpolation; an end whose rank falls outside the samples is unbounded. Two percentiles are
  within noise when their intervals overlap: a p99 needs about 400 samples (a p50 about 4)
  before any difference in it counts as real.

A rate of a step shorter than one second is not compared (see `MIN_RATE_WINDOW_S`).

Steps are aligned by the load they offered, not by their place in the run: a step is compared
with the other run's step of the same load (the same profile and concurrency, or a rate within
1 %). Steps left over are paired in order within their kind, as a sweep's rate steps are (each
sweep measures its own rates, so two sweeps' rates differ): their figures are shown side by
side, their loads named, and their changes not judged, since a different load explains them.

Capacity runs (`capacity_lines`): each search brackets its capacity in [last pass, first
fail], every verdict in it taken at its stated confidence, so two capacities differ only when
their brackets do not overlap: a run whose first fail is at or below the baseline's capacity is
worse, one whose capacity is at or above the baseline's first fail is better, and overlapping
brackets are "~" (within the searches' precision). A bracket without a first fail reaches up
without bound; runs of different SLOs or axes are not judged.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final, Literal

from pydantic import JsonValue
from pydantic_core import to_jsonable_python

from assay.metrics.cost import StepCost
from assay.metrics.sketch import Distribution
from assay.metrics.step_metrics import StepMetrics
from assay.reports.capacity import CapacityReport
from assay.reports.models import model_step
from assay.reports.report import Report, StepReport
from assay.reports.step_words import describe_load, format_ms, rate_is_meaningful
from assay.spec.run import RunEcho


def workload(echo: RunEcho) -> dict[str, JsonValue]:
    """The settings that define the workload, by run_config key, as report.json writes them:
    runs that differ in one are not comparable.

    >>> workload(RunEcho())["endpoint"]
    'chat'
    """
    settings: dict[str, object] = {
        "endpoint": echo.endpoint,
        "profile": echo.profile,
        "data": echo.data,
        "prompt_tokens": echo.prompt_tokens,
        "output_tokens": echo.output_tokens,
        "shared_prefix_tokens": echo.shared_prefix_tokens,
        "stream": echo.stream,
        "ignore_eos": echo.ignore_eos,
        "tokenizer": echo.tokenizer,
    }
    plain: dict[str, JsonValue] = to_jsonable_python(settings)
    return plain


_Z: Final = 2.0  # standard errors that count as "beyond noise"


class Better(Enum):
    """Which way a figure improves; `neither` for figures that only describe the load."""

    higher = "higher"
    lower = "lower"
    neither = "neither"


@dataclass(frozen=True, slots=True)
class Change:
    """One figure of one run against the baseline's."""

    value: float | None
    relative: float | None
    verdict: str  # "better", "worse", "~" (within noise), "" (not judged)


@dataclass(frozen=True, slots=True)
class Row:
    """One figure across the runs: the baseline's value, then each other run's change."""

    label: str
    baseline: float | None
    changes: tuple[Change, ...]
    unit: str


@dataclass(frozen=True, slots=True)
class AlignedStep:
    """A baseline step and, per other run, its step at the same offered load (None when that
    run has none); `same_load` is False when a step was paired with one of another load."""

    steps: tuple[StepReport | None, ...]
    same_load: bool

    @property
    def baseline(self) -> StepReport:
        """The first run's step (every group has one)."""
        first = self.steps[0]
        assert first is not None  # built so by `align_steps`
        return first


# Two requested rates within this fraction of each other are the same load.
_SAME_RATE: Final = 0.01


def _load_kind(step: StepReport) -> str:
    """The kind of load a step offered: a rate, or a profile with its concurrency."""
    if step.requested_rate is not None:
        return "rate"
    return step.profile_kind or step.profile


def _same_load(a: StepReport, b: StepReport) -> bool:
    if _load_kind(a) != _load_kind(b):
        return False
    if a.requested_rate is not None and b.requested_rate is not None:
        return abs(a.requested_rate - b.requested_rate) <= _SAME_RATE * max(
            a.requested_rate, b.requested_rate
        )
    return a.requested_concurrency == b.requested_concurrency


def align_steps(reports: Sequence[Report]) -> tuple[list[AlignedStep], list[str]]:
    """The first run's steps, each with every other run's step of the same offered load (else
    the next unpaired step of the same kind, marked as another load), and a note per step of
    another run that no step of the first run matched.

    >>> from assay.metrics import StepAggregator
    >>> from assay.reports.report import build_report
    >>> from datetime import UTC, datetime
    >>> def run(*rates):
    ...     steps = [StepReport.of(0, "synchronous", StepAggregator().snapshot())] + [
    ...         StepReport.of(i + 1, "constant", StepAggregator().snapshot(), requested_rate=r)
    ...         for i, r in enumerate(rates)]
    ...     now = datetime(2026, 1, 1, tzinfo=UTC)
    ...     return build_report(run_config=RunEcho(), steps=steps, started_at=now,
    ...                         finished_at=now, max_error_rate=0.05)
    >>> groups, notes = align_steps([run(10.0, 16.6), run(16.6, 14.6, 20.0)])
    >>> [(g.steps[1].index if g.steps[1] else None, g.same_load) for g in groups]
    [(0, True), (2, False), (1, True)]
    >>> notes
    ["run 2's step 4 (constant at 20 req/s) has no step of its load in run 1"]
    """
    baseline = reports[0].steps
    columns: list[list[StepReport | None]] = []
    exact: list[list[bool]] = []
    notes: list[str] = []
    for number, report in enumerate(reports[1:], start=2):
        paired: list[StepReport | None] = [None] * len(baseline)
        same = [False] * len(baseline)
        left = list(report.steps)
        for position, step in enumerate(baseline):
            match = next((other for other in left if _same_load(step, other)), None)
            if match is not None:
                paired[position], same[position] = match, True
                left.remove(match)
        for position, step in enumerate(baseline):
            if paired[position] is None:
                match = next((o for o in left if _load_kind(o) == _load_kind(step)), None)
                if match is not None:
                    paired[position] = match
                    left.remove(match)
        notes.extend(
            f"run {number}'s step {step.index + 1} ({describe_load(step)}) has no step of its "
            "load in run 1"
            for step in left
        )
        columns.append(paired)
        exact.append(same)
    groups = [
        AlignedStep(
            steps=(step, *(column[position] for column in columns)),
            same_load=all(
                same[position] or column[position] is None
                for column, same in zip(columns, exact, strict=True)
            ),
        )
        for position, step in enumerate(baseline)
    ]
    return groups, notes


def model_groups(group: AlignedStep) -> list[tuple[str, AlignedStep]]:
    """Each model of the baseline step's traffic mix that another run's step sent too, with
    every run's step as that model saw it (None where a run did not send the model): compared
    as steps are, each model's figures against its own sample sizes. Empty when the baseline
    step sent one model."""
    groups = []
    for name in group.baseline.models or {}:
        steps = tuple(
            None
            if step is None or step.models is None or name not in step.models
            else model_step(step, step.models[name])
            for step in group.steps
        )
        if any(step is not None for step in steps[1:]):
            groups.append((name, AlignedStep(steps=steps, same_load=group.same_load)))
    return groups


@dataclass(frozen=True, slots=True)
class _Rate:
    count: int  # the requests behind the rate (its Poisson count)


@dataclass(frozen=True, slots=True)
class _Proportion:
    hits: int
    total: int


@dataclass(frozen=True, slots=True)
class _Interval:
    low: float
    high: float


_Noise = _Rate | _Proportion | _Interval


@dataclass(frozen=True, slots=True)
class _Figure:
    value: float | None
    noise: _Noise | None = None


def workload_differences(reports: Sequence[Report]) -> list[str]:
    """Each workload setting that differs from the first run's, in words; empty when all agree.

    >>> from datetime import UTC, datetime
    >>> from assay.reports.report import build_report
    >>> from assay.spec.run import RunEcho
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> a, b = (build_report(run_config=RunEcho.model_validate({"endpoint": e}), steps=[],
    ...     started_at=now, finished_at=now, max_error_rate=0.05) for e in ("chat", "embeddings"))
    >>> workload_differences([a, b])
    ["endpoint: 'chat' (run 1) vs 'embeddings' (run 2)"]
    """
    # A run whose settings were not kept has no workload to check (`run_states` says so): the
    # others are checked against the first run that kept its settings.
    known = [
        (number, workload(report.run_config))
        for number, report in enumerate(reports, start=1)
        if settings_kept(report)
    ]
    if not known:
        return []
    (first_number, first), *others = known
    differences = []
    for number, theirs_all in others:
        for key, theirs in theirs_all.items():
            mine = first[key]
            if mine != theirs:
                differences.append(
                    f"{key}: {mine!r} (run {first_number}) vs {theirs!r} (run {number})"
                )
    return differences


def settings_kept(report: Report) -> bool:
    """Whether `report.run_config` holds the run's settings: not for a run killed before it
    wrote them down (its report was built afterwards from its records, `run_config` `{}`)."""
    return report.incomplete is None or report.incomplete.settings_known


def run_states(reports: Sequence[Report], labels: Sequence[str] = ()) -> list[str]:
    """A line for each run that did not run to its end (CRASHED, UNFINISHED or INTERRUPTED):
    its figures cover only the part that ran, and a run whose settings were not kept is
    compared without them. Each run is "run N", followed by its label when `labels` are given.

    >>> from datetime import UTC, datetime
    >>> from assay.reports.report import Incomplete, build_report
    >>> from assay.spec.run import RunEcho
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> killed = build_report(run_config=RunEcho(), steps=[], started_at=now, finished_at=now,
    ...     max_error_rate=0.05, incomplete=Incomplete(state="unfinished", settings_known=False))
    >>> run_states([killed])
    ["run 1 is UNFINISHED: partial results, no verdict; settings not kept (unfinished run), \
so its workload is not checked against the other runs'"]
    """
    lines = []
    for number, report in enumerate(reports, start=1):
        run = f"run {number}" if number > len(labels) else f"run {number} ({labels[number - 1]})"
        incomplete = report.incomplete
        if incomplete is not None:
            line = f"{run} is {incomplete.state.upper()}: partial results, no verdict"
            if not incomplete.settings_known:
                line += (
                    f"; settings not kept ({incomplete.state} run), so its workload is not "
                    "checked against the other runs'"
                )
            lines.append(line)
        elif report.run_config.interrupted:
            lines.append(f"{run} was INTERRUPTED: partial results of the part that ran, no verdict")
    return lines


def compare_step(steps: Sequence[StepReport | None], *, judged: bool = True) -> list[Row]:
    """The rows comparing one step across runs; the first step is the baseline. A run without
    the step (None) has no values; with `judged` False (steps of different loads) the changes
    are shown but not called better, worse or noise."""
    baseline = steps[0]
    assert baseline is not None  # the baseline always has the step
    rows = []
    for label, unit, better, figure in (*_FIGURES, *_COST_FIGURES):
        # Cost and energy rows only where some run has them (a price, or GPU metrics).
        if unit in _COST_UNITS and all(
            step is None or figure(step).value is None for step in steps
        ):
            continue
        base = figure(baseline)
        changes = tuple(
            Change(None, None, "")
            if other is None
            else _change(base, figure(other), better if judged else Better.neither)
            for other in steps[1:]
        )
        rows.append(Row(label, base.value, changes, unit))
    return rows


def format_value(value: float | None, unit: str) -> str:
    """A figure as both the console and the page show it (an error rate in %).

    >>> format_value(0.0525, "fraction"), format_value(12.345, "rate"), format_value(None, "ms")
    ('5.25 %', '12.35', '-')
    """
    if value is None:
        return "-"
    match unit:
        case "ms":
            return format_ms(value)
        case "fraction":
            return f"{value * 100:.2f} %"
        case "usd":
            return f"${value:.4g}"
        case "J":
            return f"{value:.3g} J"
        case _:
            return f"{value:.2f}"


def format_change(row: Row, change: Change) -> str:
    """A change against the baseline: "+12.5 %", an error rate's "+1.20 pt", "new" or "="."""
    if row.baseline is None or change.value is None:
        return ""
    if row.unit == "fraction":
        return f"{(change.value - row.baseline) * 100:+.2f} pt"
    if change.relative is None:
        return "new" if change.value else "="
    return f"{change.relative * 100:+.1f} %"


def _change(base: _Figure, theirs: _Figure, better: Better) -> Change:
    if base.value is None or theirs.value is None:
        return Change(theirs.value, None, "")
    relative = (theirs.value - base.value) / base.value if base.value else None
    if better is Better.neither:
        return Change(theirs.value, relative, "")
    if theirs.value == base.value or _within_noise(base, theirs):
        return Change(theirs.value, relative, "~")
    improved = (theirs.value > base.value) == (better is Better.higher)
    return Change(theirs.value, relative, "better" if improved else "worse")


def _within_noise(base: _Figure, theirs: _Figure) -> bool:
    """Whether two values of one figure differ by less than their sample sizes allow."""
    a, b = base.value, theirs.value
    if a is None or b is None:
        return True
    match base.noise, theirs.noise:
        case _Rate(count=n1), _Rate(count=n2):
            if n1 == 0 or n2 == 0:
                return False
            return abs(b - a) < _Z * math.sqrt(a * a / n1 + b * b / n2)
        case _Proportion(hits=h1, total=t1), _Proportion(hits=h2, total=t2):
            pooled = (h1 + h2) / (t1 + t2)
            spread = math.sqrt(pooled * (1 - pooled) * (1 / t1 + 1 / t2))
            return abs(b - a) < _Z * spread
        case _Interval(low=low1, high=high1), _Interval(low=low2, high=high2):
            return low1 <= high2 and low2 <= high1
        case _:
            return False


def _rate_figure(
    value: Callable[[StepMetrics], float], count: Callable[[StepMetrics], int]
) -> Callable[[StepReport], _Figure]:
    def figure(step: StepReport) -> _Figure:
        if not rate_is_meaningful(step):
            return _Figure(None)
        return _Figure(value(step.metrics), _Rate(count(step.metrics)))

    return figure


def _goodput(step: StepReport) -> _Figure:
    goodput = step.metrics.goodput
    if goodput is None or not rate_is_meaningful(step):
        return _Figure(None)
    return _Figure(goodput.requests_per_s, _Rate(goodput.good))


def _error_rate(step: StepReport) -> _Figure:
    outcomes = step.metrics.outcomes
    finished = outcomes.completed + outcomes.errored
    if not finished:
        return _Figure(None)
    return _Figure(step.metrics.error_rate, _Proportion(outcomes.errored, finished))


def _percentile_figure(field: str, name: str, p: float) -> Callable[[StepReport], _Figure]:
    def figure(step: StepReport) -> _Figure:
        dist: Distribution | None = getattr(step.metrics.latency, field)
        if dist is None:
            return _Figure(None)
        low, high = quantile_interval(dist, p)
        return _Figure(float(getattr(dist, name)), _Interval(low, high))

    return figure


def quantile_interval(dist: Distribution, p: float) -> tuple[float, float]:
    """The ~95 % order-statistic interval of the `p` quantile of `dist`'s samples.

    An end whose rank falls outside the samples is unbounded: 100 samples cannot bound a p99
    from above (it needs about 400), so no difference in it is taken as real.

    >>> from assay.metrics import QuantileSketch
    >>> sketch = QuantileSketch()
    >>> sketch.add_all([float(v) for v in range(1, 1001)])
    >>> low, high = quantile_interval(sketch.summary(), 0.99)
    >>> 980 < low < 990 < high < 1000
    True
    >>> few = sketch.summary().model_copy(update={"count": 100})
    >>> quantile_interval(few, 0.99)[1]
    inf
    """
    spread = _Z * math.sqrt(p * (1 - p) / max(dist.count, 1))
    low = _quantile_at(dist, p - spread) if p - spread >= 0 else -math.inf
    high = _quantile_at(dist, p + spread) if p + spread <= 1 else math.inf
    return low, high


def _quantile_at(dist: Distribution, q: float) -> float:
    points = (
        (0.0, dist.min),
        (0.5, dist.p50),
        (0.9, dist.p90),
        (0.95, dist.p95),
        (0.99, dist.p99),
        (0.999, dist.p999),
        (1.0, dist.max),
    )
    for (q0, v0), (q1, v1) in itertools.pairwise(points):
        if q <= q1:
            return v0 + (v1 - v0) * (q - q0) / (q1 - q0)
    return dist.max


_FIGURES: Final[tuple[tuple[str, str, Better, Callable[[StepReport], _Figure]], ...]] = (
    (
        "usable req/s",
        "rate",
        Better.higher,
        _rate_figure(lambda m: m.throughput.usable_requests_per_s, lambda m: m.outcomes.completed),
    ),
    (
        "attempted req/s",
        "rate",
        Better.neither,
        _rate_figure(
            lambda m: m.throughput.attempted_requests_per_s, lambda m: m.outcomes.dispatched
        ),
    ),
    (
        "usable output tok/s",
        "rate",
        Better.higher,
        _rate_figure(
            lambda m: m.throughput.usable_output_tokens_per_s, lambda m: m.outcomes.completed
        ),
    ),
    ("goodput req/s", "rate", Better.higher, _goodput),
    ("error rate", "fraction", Better.lower, _error_rate),
    ("TTFT p50", "ms", Better.lower, _percentile_figure("ttft_ms", "p50", 0.5)),
    ("TTFT p99", "ms", Better.lower, _percentile_figure("ttft_ms", "p99", 0.99)),
    ("ITL p50", "ms", Better.lower, _percentile_figure("itl_ms", "p50", 0.5)),
    ("ITL p99", "ms", Better.lower, _percentile_figure("itl_ms", "p99", 0.99)),
    ("TPOT p50", "ms", Better.lower, _percentile_figure("tpot_ms", "p50", 0.5)),
    ("E2E p50", "ms", Better.lower, _percentile_figure("e2e_ms", "p50", 0.5)),
    ("E2E p99", "ms", Better.lower, _percentile_figure("e2e_ms", "p99", 0.99)),
)


def _cost_figure(read: Callable[[StepCost], float | None]) -> Callable[[StepReport], _Figure]:
    # A cost or energy per unit is a fixed amount over a count of served requests: its noise is
    # theirs (Poisson), the same relative error as the usable request rate's.
    def figure(step: StepReport) -> _Figure:
        cost = step.cost
        value = None if cost is None else read(cost)
        if value is None or not rate_is_meaningful(step):
            return _Figure(None)
        return _Figure(value, _Rate(step.metrics.outcomes.completed))

    return figure


_COST_UNITS: Final = ("usd", "J")
_COST_FIGURES: Final[tuple[tuple[str, str, Better, Callable[[StepReport], _Figure]], ...]] = (
    ("$ / M usable out tok", "usd", Better.lower,
     _cost_figure(lambda c: c.usd_per_million_usable_output_tokens)),
    ("$ / M usable total tok", "usd", Better.lower,
     _cost_figure(lambda c: c.usd_per_million_usable_total_tokens)),
    ("$ / 1k usable req", "usd", Better.lower,
     _cost_figure(lambda c: c.usd_per_thousand_usable_requests)),
    ("J / usable out tok", "J", Better.lower,
     _cost_figure(lambda c: c.joules_per_usable_output_token)),
)  # fmt: skip


CapacityChange = Literal["better", "worse", "~", "not comparable"]


def _bracket(report: CapacityReport) -> tuple[float, float]:
    low = report.capacity if report.capacity is not None else 0.0
    high = report.first_fail if report.first_fail is not None else math.inf
    return low, high


def capacity_change(base: CapacityReport, other: CapacityReport) -> CapacityChange:
    """How `other`'s capacity stands against `base`'s, by the noise rule above.

    >>> def run(low, high):
    ...     return CapacityReport(axis="rate", slos=("ttft_ms=500@p99",), confidence=0.95,
    ...         precision=0.05, capacity=low, first_fail=high, end="precise", levels=())
    >>> capacity_change(run(80, 84), run(60, 63)), capacity_change(run(80, 84), run(82, 86))
    ('worse', '~')
    """
    if base.slos != other.slos or base.axis != other.axis:
        return "not comparable"
    base_low, base_high = _bracket(base)
    low, high = _bracket(other)
    if high <= base_low:
        return "worse"
    if low >= base_high:
        return "better"
    return "~"


def _describe(report: CapacityReport) -> str:
    if report.capacity is None:
        return "none found"
    high = "-" if report.first_fail is None else f"{report.first_fail:g}"
    return f"{report.capacity:g} {report.unit} [{report.capacity:g}, {high}]"


def capacity_lines(reports: Sequence[Report]) -> list[str]:
    """The comparison of the runs' capacities, one line per run; empty unless the first run
    and another searched for capacity."""
    base = reports[0].capacity if reports else None
    if base is None or all(report.capacity is None for report in reports[1:]):
        return []
    lines = [f"Capacity (SLOs {', '.join(base.slos)}; brackets that overlap are ~):"]
    lines.append(f"  run 1: {_describe(base)} (baseline)")
    for number, report in enumerate(reports[1:], start=2):
        capacity = report.capacity
        if capacity is None:
            lines.append(f"  run {number}: not a capacity search")
            continue
        change = capacity_change(base, capacity)
        lines.append(f"  run {number}: {_describe(capacity)} {change}")
    return lines
