"""What the server's metrics say about a run, and whether it agrees with what assay counted.

The run's counter deltas come from the scrapes taken just before the load started and just
after it ended, so they are exact for the run (other traffic on the server aside). Per-step
deltas come from the periodic scrapes nearest the step's bounds, so they are approximate by
up to one scrape interval at each end, and say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from assay.server_metrics.accounting import PLAIN, Accounting
from assay.server_metrics.checks import AssayCounts, CrossCheck, ServerCounts, cross_check
from assay.server_metrics.families import (
    COUNTERS,
    GAUGES,
    Quantity,
    ServerKind,
    detect_kind,
    quantities_of,
)
from assay.server_metrics.gpu_energy import (
    GpuScrapes,
    energy_doubts,
    energy_joules,
    has_gpu_metrics,
)
from assay.server_metrics.observer import TimedSample

# The line that names a hiding proxy as the likely cause (see `likely_cause`).
PROXY_CAUSE = "a proxy between assay and the server may be turning failures into complete answers"


class StepServerCounts(BaseModel):
    """One step's counter deltas, read from the periodic scrapes around its bounds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    counts: ServerCounts
    approximate_by_s: float
    # The GPUs' energy over the step (J), when the scrapes carry DCGM samples (`gpu_energy`).
    gpu_energy_joules: float | None = Field(default=None, exclude_if=lambda j: j is None)


class ServerSeries(BaseModel):
    """Gauges and counter rates over time; `t_s` counts seconds from the run's first step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    t_s: tuple[float, ...] = ()
    requests_running: tuple[float | None, ...] = ()
    requests_waiting: tuple[float | None, ...] = ()
    kv_cache_usage: tuple[float | None, ...] = ()
    requests_finished_per_s: tuple[float | None, ...] = ()
    generation_tokens_per_s: tuple[float | None, ...] = ()


class ServerMetricsReport(BaseModel):
    """The server-metrics section of report.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    kind: ServerKind | None
    interval_s: float
    scrapes: int
    problems: tuple[str, ...] = ()
    run: ServerCounts
    steps: tuple[StepServerCounts, ...] = ()
    series: ServerSeries = ServerSeries()
    checks: tuple[CrossCheck, ...] = ()
    # The metrics came from another origin than the one the load went to (a proxy's set-up);
    # None in a report of an earlier version.
    metrics_elsewhere: bool | None = None
    # What most likely explains the disagreements, when one shape points to a cause.
    likely_cause: str | None = None
    # The GPUs' energy over the run (J), when the scrapes carry DCGM samples (`gpu_energy`).
    gpu_energy_joules: float | None = Field(default=None, exclude_if=lambda j: j is None)
    # The DCGM exporter the energy was read from (`--gpu-metrics`), when not the metrics above.
    gpu_url: str | None = Field(default=None, exclude_if=lambda url: url is None)


@dataclass(frozen=True, slots=True)
class StepBounds:
    """A step's index and its span on the run's monotonic clock."""

    index: int
    start_ns: int
    end_ns: int


def counter_delta(
    kind: ServerKind, first: Mapping[str, float], last: Mapping[str, float]
) -> ServerCounts:
    """Counter increases between two scrapes (None where a counter is missing or was reset).

    >>> a = {"vllm:request_success_total": 3.0}
    >>> counter_delta(ServerKind.vllm, a, {"vllm:request_success_total": 10.0}).requests_finished
    7.0
    """
    before, after = quantities_of(kind, first), quantities_of(kind, last)
    values: dict[str, float | None] = {}
    for quantity in COUNTERS:
        start, end = before.get(quantity), after.get(quantity)
        values[quantity.value] = (
            None if start is None or end is None or end < start else end - start
        )
    return ServerCounts.model_validate(values)


def likely_cause(
    checks: Sequence[CrossCheck], assay: AssayCounts, *, metrics_elsewhere: bool
) -> str | None:
    """The cause a hiding proxy's disagreement points to, or None for any other shape.

    A proxy that turns a cut or failed stream into a clean one (a finish reason, a usage of its
    own, `[DONE]`) leaves one trace: the server behind it finished fewer requests than assay
    read answers. assay names that cause only when the metrics come from another origin than
    the load (the set-up of a proxy in front of the server), and then:
    - fewer finished requests than assay's complete answers alone: a proxy, plainly;
    - fewer than assay's answers but not fewer than the complete ones: a proxy that made
      failures into (unusable) answers, or a server that does not count unusable answers;
    - no request counter (SGLang, llama.cpp): fewer generated tokens than assay counted.
    A metrics page at the target itself keeps the plain message: no proxy sits between.

    >>> counts = AssayCounts(answered=8, unfinished=0, output_tokens=0, max_output_tokens=0,
    ...                      completed=8)
    >>> checks = cross_check(ServerCounts(requests_finished=2), counts)
    >>> print(likely_cause(checks, counts, metrics_elsewhere=True))  # doctest: +ELLIPSIS
    the server finished 2 requests but assay read 8 complete answers: a proxy ... answers
    >>> likely_cause(checks, counts, metrics_elsewhere=False) is None
    True
    """
    if not metrics_elsewhere:
        return None
    by_quantity = {check.quantity: check for check in checks}
    requests = by_quantity.get("requests_finished")
    if requests is not None:
        if assay.completed is None or requests.server >= requests.allowed_low:
            return None
        if requests.server < assay.completed:
            return (
                f"the server finished {requests.server:g} requests but assay read "
                f"{assay.completed} complete answers: {PROXY_CAUSE}"
            )
        unusable = assay.answered - assay.completed
        return (
            f"the server finished {requests.server:g} requests but assay read "
            f"{assay.answered} answers, {unusable} of them unusable: a proxy between assay and "
            "the server may be turning failures into answers (or the server does not count "
            "unusable answers)"
        )
    tokens = by_quantity.get("generation_tokens")
    if tokens is None or tokens.server >= tokens.allowed_low:
        return None
    return (
        f"the server generated {tokens.server:g} tokens but assay counted {tokens.assay}: "
        f"{PROXY_CAUSE}"
    )


def _at_or_before(samples: Sequence[TimedSample], time_ns: int) -> TimedSample:
    chosen = samples[0]
    for sample in samples:
        if sample.time_ns > time_ns:
            break
        chosen = sample
    return chosen


def _at_or_after(samples: Sequence[TimedSample], time_ns: int) -> TimedSample:
    for sample in samples:
        if sample.time_ns >= time_ns:
            return sample
    return samples[-1]


def series_of(kind: ServerKind, samples: Sequence[TimedSample], origin_ns: int) -> ServerSeries:
    """Gauges as scraped and counter rates between consecutive scrapes, on the run's axis."""
    times: list[float] = []
    gauges: dict[Quantity, list[float | None]] = {quantity: [] for quantity in GAUGES}
    finished: list[float | None] = []
    generated: list[float | None] = []
    previous: dict[Quantity, float] | None = None
    previous_ns = 0
    for sample in samples:
        values = quantities_of(kind, sample.samples)
        times.append((sample.time_ns - origin_ns) / 1e9)
        for quantity in GAUGES:
            gauges[quantity].append(values.get(quantity))
        for quantity, out in (
            (Quantity.requests_finished, finished),
            (Quantity.generation_tokens, generated),
        ):
            now, then = values.get(quantity), None if previous is None else previous.get(quantity)
            elapsed = (sample.time_ns - previous_ns) / 1e9
            if now is None or then is None or elapsed <= 0 or now < then:
                out.append(None)
            else:
                out.append((now - then) / elapsed)
        previous, previous_ns = values, sample.time_ns
    return ServerSeries(
        t_s=tuple(times),
        requests_running=tuple(gauges[Quantity.requests_running]),
        requests_waiting=tuple(gauges[Quantity.requests_waiting]),
        kv_cache_usage=tuple(gauges[Quantity.kv_cache_usage]),
        requests_finished_per_s=tuple(finished),
        generation_tokens_per_s=tuple(generated),
    )


def summarize(
    *,
    url: str,
    interval_s: float,
    samples: Sequence[TimedSample],
    first: TimedSample,
    last: TimedSample,
    steps: Sequence[StepBounds],
    assay: AssayCounts,
    problems: Sequence[str] = (),
    metrics_elsewhere: bool = False,
    accounting: Accounting = PLAIN,
    gpus: GpuScrapes | None = None,
) -> ServerMetricsReport:
    """The report section from the scrapes of a run (`first`/`last` bracket the load).

    `metrics_elsewhere`: the metrics URL has another origin than the load's target;
    `accounting`: what the run's requests were, for servers that count them their own way;
    `gpus`: a DCGM exporter's scrapes, the only source of the GPUs' energy when given.
    """
    kind = detect_kind(last.samples)
    energy = _Energy.of(samples if gpus is None else gpus.samples, bracketed=gpus is not None)
    run_energy = energy.between(first.time_ns, last.time_ns)
    problems = (*problems, *(energy_doubts(samples) if gpus is None else gpus.notes()))
    gpu_url = None if gpus is None else gpus.url
    if kind is None:
        unknown = () if has_gpu_metrics(samples) else (_UNKNOWN_FAMILY,)
        return ServerMetricsReport(
            url=url, kind=None, interval_s=interval_s, scrapes=len(samples),
            problems=(*problems, *unknown), run=ServerCounts(),
            metrics_elsewhere=metrics_elsewhere, steps=energy.steps(steps, interval_s),
            gpu_energy_joules=run_energy, gpu_url=gpu_url,
        )  # fmt: skip
    run = counter_delta(kind, first.samples, last.samples)
    step_counts = tuple(
        StepServerCounts(
            index=step.index,
            counts=counter_delta(
                kind,
                _at_or_before(samples, step.start_ns).samples,
                _at_or_after(samples, step.end_ns).samples,
            ),
            approximate_by_s=interval_s,
            gpu_energy_joules=energy.between(step.start_ns, step.end_ns),
        )
        for step in steps
    )
    origin = min((step.start_ns for step in steps), default=first.time_ns)
    checks = cross_check(run, assay, kind, accounting)
    return ServerMetricsReport(
        url=url,
        kind=kind,
        interval_s=interval_s,
        scrapes=len(samples),
        problems=tuple(problems),
        run=run,
        steps=step_counts,
        series=series_of(kind, samples, origin),
        checks=checks,
        metrics_elsewhere=metrics_elsewhere,
        likely_cause=likely_cause(checks, assay, metrics_elsewhere=metrics_elsewhere),
        gpu_energy_joules=run_energy,
        gpu_url=gpu_url,
    )


def summarize_gpus(
    gpus: GpuScrapes, interval_s: float, steps: Sequence[StepBounds]
) -> ServerMetricsReport | None:
    """The report section of a run whose server's metrics were not scraped (off, or none at the
    target) but whose GPUs' were (`--gpu-metrics`): the energy alone; None without scrapes.

    >>> from assay.server_metrics.gpu_energy import DCGM_ENERGY_MJ
    >>> gpus = GpuScrapes("http://g/metrics", (TimedSample(0, {DCGM_ENERGY_MJ: 1e6}),
    ...                                         TimedSample(9, {DCGM_ENERGY_MJ: 3e6})))
    >>> report = summarize_gpus(gpus, 1.0, [StepBounds(0, 2, 5)])
    >>> report.gpu_energy_joules, report.steps[0].gpu_energy_joules, report.problems
    (2000.0, 2000.0, ())
    """
    if not gpus.samples:
        return None
    energy = _Energy.of(gpus.samples, bracketed=True)
    return ServerMetricsReport(
        url=gpus.url,
        kind=None,
        interval_s=interval_s,
        scrapes=len(gpus.samples),
        problems=gpus.notes(),
        run=ServerCounts(),
        steps=energy.steps(steps, interval_s),
        metrics_elsewhere=True,
        gpu_energy_joules=energy.between(gpus.samples[0].time_ns, gpus.samples[-1].time_ns),
        gpu_url=gpus.url,
    )


_UNKNOWN_FAMILY = "no metric family assay knows (vLLM, SGLang, TGI, llama.cpp)"


@dataclass(frozen=True, slots=True)
class _Energy:
    """The GPUs' energy over intervals, from the scrapes that carry DCGM samples (`gpu_energy`);
    `bracketed`: only where a scrape lies on each side of the interval."""

    samples: Sequence[TimedSample]
    bracketed: bool
    present: bool  # some scrape carries DCGM energy or power

    @classmethod
    def of(cls, samples: Sequence[TimedSample], *, bracketed: bool) -> _Energy:
        return cls(samples, bracketed, has_gpu_metrics(samples))

    def between(self, start_ns: int, end_ns: int) -> float | None:
        if not self.present:
            return None
        return energy_joules(self.samples, start_ns, end_ns, bracketed=self.bracketed)

    def steps(self, steps: Sequence[StepBounds], interval_s: float) -> tuple[StepServerCounts, ...]:
        """Each step's energy without server counts (none when no scrape carries DCGM)."""
        if not self.present:
            return ()
        return tuple(
            StepServerCounts(
                index=step.index,
                counts=ServerCounts(),
                approximate_by_s=interval_s,
                gpu_energy_joules=self.between(step.start_ns, step.end_ns),
            )
            for step in steps
        )
