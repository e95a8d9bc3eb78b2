"""The charts of the HTML report, as plotly.js figure specifications (plain data).

Each function turns part of a `Report` (and, for distributions, per-request latencies read from
records.jsonl) into a `Figure`: the `data` and `layout` that `Plotly.newPlot` draws. Building
plain dictionaries keeps the report independent of plotly's Python API (slow to import) while
the drawing is done by plotly.js itself, inlined into the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from assay.metrics.sketch import Distribution
from assay.reports.chart_base import (
    LATENCY_METRICS,
    OUTCOME_COLOURS,
    Figure,
    chart_layout,
    draw_slo,
    say_no_data,
    scatter,
    slo_of,
    step_colour,
    step_label,
)
from assay.reports.latency_charts import cdf_figure, latency_percentiles_figure
from assay.reports.models_html import models_figures
from assay.reports.report import Report, StepReport
from assay.reports.shown import produces_tokens, shown_sections
from assay.reports.time_charts import (
    concurrency_over_time_figure,
    errors_over_time_figure,
    ramp_rate_figure,
    throughput_over_time_figure,
    time_axis,
    ttft_over_time_figure,
)
from assay.reports.token_charts import has_token_figures, token_figures
from assay.spec.load import Concurrent, Constant, Poisson, RampUp, Replay, Synchronous, Throughput


def outcomes_figure(report: Report) -> Figure:
    """Completed, errored and cancelled requests per step, stacked."""
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    data: list[dict[str, JsonValue]] = []
    for name, colour in OUTCOME_COLOURS.items():
        counts: list[JsonValue] = [getattr(step.metrics.outcomes, name) for step in report.steps]
        data.append(
            {"type": "bar", "name": name, "x": labels, "y": counts, "marker": {"color": colour}}
        )
    return Figure(
        "outcomes",
        "Outcomes by step",
        data,
        chart_layout("Outcomes by step", "step", "requests", barmode="stack"),
        "Every dispatched request ends in exactly one outcome.",
    )


def errors_figure(report: Report) -> Figure:
    """Errored requests by diagnostic code, per step (empty chart text when nothing errored)."""
    codes = sorted({str(code) for step in report.steps for code in step.metrics.errors_by_code})
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    data: list[dict[str, JsonValue]] = []
    for code in codes:
        counts: list[JsonValue] = []
        for step in report.steps:
            by_code = {str(key): value.count for key, value in step.metrics.errors_by_code.items()}
            counts.append(by_code.get(code, 0))
        data.append({"type": "bar", "name": code, "x": labels, "y": counts})
    layout = chart_layout("Errors by diagnostic code", "step", "errored requests", barmode="stack")
    if not codes:
        say_no_data(layout, "no request errored")
    return Figure(
        "errors",
        "Errors by diagnostic code",
        data,
        layout,
        "What the server failed to serve, by the stable code assay gave each errored request.",
    )


# The x axis of the "Across steps" charts: what the steps varied. A concurrency sweep varied
# the requests in flight, so its charts put the concurrency levels on the axis (issue 38: they
# put the offered rate there, a figure the sweep did not set); every other series its offered
# rate.


@dataclass(frozen=True, slots=True)
class SweepAxis:
    """The steps in axis order, their x values, the axis title and its words in chart titles."""

    steps: list[StepReport]
    x: list[JsonValue]
    title: str
    words: str


def concurrency_of(step: StepReport) -> int | None:
    """The requests a step kept in flight, when that is what it set (a concurrent step).

    >>> from assay.metrics import StepAggregator
    >>> concurrency_of(StepReport.of(0, Concurrent(streams=4), StepAggregator().snapshot()))
    4
    >>> concurrency_of(StepReport.of(0, Constant(rate=5), StepAggregator().snapshot())) is None
    True
    """
    match step.load:
        case Concurrent(streams=streams):
            return streams
        case Synchronous() | Throughput() | Poisson() | RampUp() | Constant() | Replay() | None:
            return None


def offered_rate(step: StepReport) -> float:
    """The load a step offered: its requested rate, else the rate it dispatched at."""
    if step.requested_rate is not None:
        return step.requested_rate
    return step.metrics.throughput.attempted_requests_per_s


def sweep_axis(steps: Sequence[StepReport]) -> SweepAxis:
    """Concurrency levels when every step set one, else the offered rate."""
    levels = [concurrency_of(step) for step in steps]
    if steps and all(level is not None for level in levels):
        ordered = sorted(steps, key=lambda step: concurrency_of(step) or 0)
        return SweepAxis(
            ordered,
            [concurrency_of(step) for step in ordered],
            "concurrency (requests in flight)",
            "concurrency",
        )
    ordered = sorted(steps, key=offered_rate)
    return SweepAxis(
        ordered, [offered_rate(step) for step in ordered], "offered rate (req/s)", "offered rate"
    )


def sweep_throughput_figure(report: Report) -> Figure:
    """Achieved throughput against what the steps varied (offered rate, or concurrency), one
    point per step."""
    axis = sweep_axis(report.steps)
    steps, x = axis.steps, axis.x
    text: list[JsonValue] = [step_label(step) for step in steps]
    attempted = [step.metrics.throughput.attempted_requests_per_s for step in steps]
    usable = [step.metrics.throughput.usable_requests_per_s for step in steps]
    data = [
        scatter("lines+markers", "attempted req/s", x, attempted, text=text),
        scatter("lines+markers", "usable req/s", x, usable, text=text),
    ]
    if any(step.metrics.goodput is not None for step in steps):
        goodput = [None if s.metrics.goodput is None else s.metrics.goodput.requests_per_s
                   for s in steps]  # fmt: skip
        data.append(scatter("lines+markers", "goodput req/s", x, goodput, text=text))
    caption = (
        "A server that keeps up stays on the diagonal; usable below attempted means errors."
        if axis.words == "offered rate"
        else "Throughput as the requests in flight grow: where it flattens, the server is full."
    )
    return Figure(
        "sweep-throughput",
        f"Throughput against {axis.words}",
        data,
        chart_layout(f"Throughput vs {axis.words}", axis.title, "req/s"),
        caption,
    )


def sweep_latency_figure(report: Report, metric: str, title: str) -> Figure:
    """p50 and p99 of one latency metric against what the steps varied, with its SLO line."""
    axis = sweep_axis(report.steps)
    data: list[dict[str, JsonValue]] = []
    for name in ("p50", "p99"):
        values: list[JsonValue] = []
        for step in axis.steps:
            distribution: Distribution | None = getattr(step.metrics.latency, metric)
            values.append(None if distribution is None else float(getattr(distribution, name)))
        data.append(scatter("lines+markers", name, axis.x, values))
    layout = chart_layout(f"{title} vs {axis.words}", axis.title, "ms")
    draw_slo(layout, slo_of(report).get(metric), axis="y")
    return Figure(f"sweep-{metric}", f"{title} against {axis.words}", data, layout)


def server_figures(report: Report) -> list[Figure]:
    """The server's own gauges and counter rates over time, when its metrics were scraped."""
    section = report.server_metrics
    if section is None or not section.series.t_s:
        return []
    series = section.series
    times: list[JsonValue] = list(series.t_s)
    queue = [
        scatter("lines", name, times, values)
        for name, values in (
            ("running", series.requests_running),
            ("waiting", series.requests_waiting),
        )
        if any(value is not None for value in values)
    ]
    rates = [
        scatter("lines", "requests finished/s", times, series.requests_finished_per_s),
        scatter("lines", "generated tokens/s", times, series.generation_tokens_per_s, yaxis="y2"),
    ]
    figures = [
        Figure(
            "server-queue",
            "Server: requests running and waiting",
            queue,
            chart_layout(
                "Server: requests running and waiting", "seconds into the run", "requests"
            ),
            "As the server's own gauges reported them at each scrape.",
        ),
        Figure(
            "server-rates",
            "Server: finished requests and generated tokens per second",
            rates,
            chart_layout(
                "Server: finished req/s and generated tok/s",
                "seconds into the run",
                "requests/s",
                yaxis2={
                    "title": {"text": "tokens/s"},
                    "overlaying": "y",
                    "side": "right",
                    "rangemode": "tozero",
                    # Room for its tick labels and title: without it they are cut at the edge.
                    "automargin": True,
                },
            ),
            "Counter increases between consecutive scrapes.",
        ),
    ]
    if any(value is not None for value in series.kv_cache_usage):
        figures.append(
            Figure(
                "server-kv-cache",
                "Server: KV-cache usage",
                [scatter("lines", "KV-cache usage", times, series.kv_cache_usage)],
                chart_layout("Server: KV-cache usage", "seconds into the run", "fraction"),
            )
        )
    return figures


def turns_figure(report: Report) -> Figure | None:
    """Time to first token by turn of a multi-turn session (p50 solid, p99 dotted), a line pair
    per step; None when no step ran sessions. A later turn carries the conversation so far, so
    a server without prefix caching shows it here."""
    data: list[dict[str, JsonValue]] = []
    for step in report.steps:
        if not step.turns:
            continue
        turns: list[JsonValue] = list(step.turns)
        for name, dash in (("p50", "solid"), ("p99", "dot")):
            values: list[JsonValue] = []
            for metrics in step.turns.values():
                ttft = metrics.latency.ttft_ms
                values.append(None if ttft is None else float(getattr(ttft, name)))
            line: JsonValue = {"color": step_colour(step), "dash": dash}
            label = f"{name}, {step_label(step)}"
            data.append(scatter("lines+markers", label, turns, values, line=line))
    if not data:
        return None
    layout = chart_layout("TTFT by turn of a session", "turn", "ms")
    layout["xaxis"] = {"title": {"text": "turn"}, "automargin": True, "dtick": 1}
    return Figure(
        "turns-ttft",
        "Time to first token by turn",
        data,
        layout,
        "Each turn resends the conversation so far: TTFT that grows with the turn is prefill "
        "of the history.",
    )


def figures_of(
    report: Report, samples: Mapping[str, Mapping[str, Sequence[float]]]
) -> list[tuple[str, list[Figure]]]:
    """Every chart of the report, grouped in sections (section title, figures).

    `samples` maps a latency metric (`ttft_ms`, `e2e_ms`) to per-step lists of per-request
    values for the CDF charts; an empty mapping leaves those charts out.
    """
    sections: list[tuple[str, list[Figure]]] = [
        ("Outcomes and errors", [outcomes_figure(report), errors_figure(report)]),
        (
            "Latency distributions",
            [latency_percentiles_figure(report, metric, title) for metric, title in LATENCY_METRICS]
            + [
                cdf_figure(metric, title, samples[metric], report=report)
                for metric, title in LATENCY_METRICS
                if metric in samples
            ],
        ),
    ]
    if time_axis(report):
        ramped = any(step.ramp is not None for step in report.steps)
        ramp = [ramp_rate_figure(report)] if ramped else []
        sections.append(
            (
                "Over time",
                [
                    *ramp,
                    throughput_over_time_figure(report),
                    ttft_over_time_figure(report),
                    errors_over_time_figure(report),
                    concurrency_over_time_figure(report),
                ],
            )
        )
    if has_token_figures(report) and produces_tokens(report):
        sections.append(("Token rates, per-user speed, prefill vs decode", token_figures(report)))
    turns = turns_figure(report)
    if turns is not None:
        sections.append(("Sessions and turns", [turns]))
    by_model = models_figures(report)
    if by_model:  # a traffic mix
        sections.append(("Latency by model", by_model))
    server = server_figures(report)
    if server:
        sections.append(("Server metrics", server))
    if len(report.steps) > 1:  # several steps at different offered rates: a sweep or a series
        sections.append(
            (
                "Across steps",
                [sweep_throughput_figure(report)]
                + [
                    sweep_latency_figure(report, metric, title) for metric, title in LATENCY_METRICS
                ],
            )
        )
    return shown_sections(sections)
