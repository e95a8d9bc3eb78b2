"""The report's latency charts: percentiles per step, and each step's distribution (CDF)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from assay.metrics.sketch import Distribution
from assay.reports.chart_base import (
    PERCENTILE_FIELDS,
    Figure,
    chart_layout,
    draw_slo,
    say_no_data,
    scatter,
    slo_of,
    step_colour,
    step_label,
)
from assay.reports.report import Report


def latency_percentiles_figure(report: Report, metric: str, title: str) -> Figure:
    """One latency metric's percentiles, a line per step."""
    data: list[dict[str, JsonValue]] = []
    for step in report.steps:
        distribution: Distribution | None = getattr(step.metrics.latency, metric)
        if distribution is None or distribution.count == 0:
            continue
        labels = [label for _, label in PERCENTILE_FIELDS]
        values = [float(getattr(distribution, name)) for name, _ in PERCENTILE_FIELDS]
        line: JsonValue = {"color": step_colour(step)}
        data.append(scatter("lines+markers", step_label(step), labels, values, line=line))
    layout = chart_layout(f"{title}: percentiles", "percentile", "ms")
    if not data:
        say_no_data(layout, "not measured in this run")
    else:
        draw_slo(layout, slo_of(report).get(metric), axis="y")
    return Figure(f"latency-{metric}", f"{title} percentiles", data, layout)


def cdf_figure(
    metric: str,
    title: str,
    samples_by_step: Mapping[str, Sequence[float]],
    points: int = 400,
    report: Report | None = None,
) -> Figure:
    """The empirical CDF of per-request `metric` (ms) per step, at most `points` per line; with
    the `report`, in each step's colour and with the metric's SLO."""
    colours = {} if report is None else {step_label(s): step_colour(s) for s in report.steps}
    data: list[dict[str, JsonValue]] = []
    for label, samples in samples_by_step.items():
        if not samples:
            continue
        ordered = sorted(samples)
        count = len(ordered)
        step = max(1, count // points)
        indices = [*range(0, count, step)]
        if indices[-1] != count - 1:
            indices.append(count - 1)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "line": {"shape": "hv", "color": colours.get(label)},
                "name": label,
                "x": [ordered[i] for i in indices],
                "y": [(i + 1) / count for i in indices],
            }
        )
    layout = chart_layout(f"{title}: distribution (CDF)", "ms", "fraction of completed requests")
    layout["yaxis"] = {"title": {"text": "fraction of completed requests"}, "range": [0, 1.02]}
    if not data:
        say_no_data(layout, "no completed request with this measure")
    elif report is not None:
        draw_slo(layout, slo_of(report).get(metric), axis="x")
    return Figure(f"cdf-{metric}", f"{title} distribution", data, layout)
