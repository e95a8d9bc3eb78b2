"""The report's token charts: input, output, total and peak token rates, time to second token,
per-user output speed, prefill against decode: the figures peers print beside output
throughput, in a section of their own."""

from __future__ import annotations

from pydantic import JsonValue

from assay.metrics.sketch import Distribution
from assay.reports.chart_base import Figure, chart_layout, say_no_data, scatter, step_label
from assay.reports.latency_charts import latency_percentiles_figure
from assay.reports.report import Report


def has_token_figures(report: Report) -> bool:
    """Whether any step has the figures of `token_figures` (reports before them have none)."""
    for step in report.steps:
        throughput, latency = step.metrics.throughput, step.metrics.latency
        if (
            throughput.usable_input_tokens_per_s is not None
            or throughput.peak_output_tokens_per_s is not None
            or throughput.per_user_output_tokens_per_s is not None
            or latency.ttst_ms is not None
            or latency.decode_ms is not None
        ):
            return True
    return False


def token_rates_figure(report: Report) -> Figure:
    """Input, output, total and peak output tokens/s per step, side by side."""
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    series: tuple[tuple[str, list[JsonValue]], ...] = (
        ("input", [s.metrics.throughput.usable_input_tokens_per_s for s in report.steps]),
        ("output", [s.metrics.throughput.usable_output_tokens_per_s for s in report.steps]),
        ("total", [s.metrics.throughput.usable_total_tokens_per_s for s in report.steps]),
        (
            "peak output (busiest second)",
            [s.metrics.throughput.peak_output_tokens_per_s for s in report.steps],
        ),
    )
    data: list[dict[str, JsonValue]] = [
        {"type": "bar", "name": name, "x": labels, "y": values} for name, values in series
    ]
    return Figure(
        "token-rates",
        "Token rates by step",
        data,
        chart_layout("Token rates of completed requests", "step", "tokens/s", barmode="group"),
        "Input uses the server's prompt counts (missing when a completed request had none); "
        "the peak is the fullest one-second bucket of output tokens.",
    )


def prefill_decode_figure(report: Report) -> Figure:
    """Mean TTFT and mean decode time (E2E - TTFT) of the streamed answers, stacked per step."""
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    data: list[dict[str, JsonValue]] = []
    for name, metric in (("prefill (TTFT)", "ttft_ms"), ("decode (E2E - TTFT)", "decode_ms")):
        means: list[JsonValue] = []
        for step in report.steps:
            distribution: Distribution | None = getattr(step.metrics.latency, metric)
            means.append(None if distribution is None else distribution.mean)
        data.append({"type": "bar", "name": name, "x": labels, "y": means})
    layout = chart_layout("Prefill vs decode, mean per answer", "step", "ms", barmode="stack")
    if all(step.metrics.latency.decode_ms is None for step in report.steps):
        say_no_data(layout, "not measured in this run (no streamed answer)")
    return Figure(
        "prefill-decode",
        "Prefill vs decode",
        data,
        layout,
        "Of the streamed answers: time to the first token (queueing, prefill and network) and "
        "the rest of the answer after it.",
    )


def per_user_figure(report: Report) -> Figure:
    """Per-user output tokens/s (one value per answer) at its low and middle points, per step."""
    points: list[JsonValue] = ["min", "p50", "mean", "max"]
    data: list[dict[str, JsonValue]] = []
    for step in report.steps:
        distribution = step.metrics.throughput.per_user_output_tokens_per_s
        if distribution is None:
            continue
        values = [float(getattr(distribution, str(name))) for name in points]
        data.append(scatter("lines+markers", step_label(step), points, values))
    layout = chart_layout("Per-user output tokens/s", "statistic over answers", "tokens/s")
    if not data:
        say_no_data(layout, "not measured in this run")
    return Figure(
        "per-user-output",
        "Per-user output tokens/s",
        data,
        layout,
        "Per streamed answer of 2+ tokens: (output tokens - 1) / (E2E - TTFT), the speed one "
        "user saw after the first token.",
    )


def token_figures(report: Report) -> list[Figure]:
    """The section's charts: token rates, prefill vs decode, per-user speed and TTST."""
    return [
        token_rates_figure(report),
        prefill_decode_figure(report),
        per_user_figure(report),
        latency_percentiles_figure(report, "ttst_ms", "Time to second token"),
    ]
