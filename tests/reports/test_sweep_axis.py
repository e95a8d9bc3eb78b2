"""A concurrency sweep's "Across steps" charts put the concurrency levels on the x axis (issue 38
item 13): they put the offered rate there, a figure such a sweep does not set."""

from __future__ import annotations

from datetime import UTC, datetime

from assay.metrics import StepAggregator
from assay.reports.chart_base import Figure
from assay.reports.charts import sweep_latency_figure, sweep_throughput_figure
from assay.reports.report import Report, StepReport, build_report
from assay.spec.load import Concurrent, Constant
from assay.spec.run import RunEcho

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def report_of(*loads: Concurrent | Constant) -> Report:
    steps = [StepReport.of(i, load, StepAggregator().snapshot()) for i, load in enumerate(loads)]
    return build_report(
        run_config=RunEcho(), steps=steps, started_at=NOW, finished_at=NOW, max_error_rate=0.05
    )


def x_title(figure: Figure) -> object:
    xaxis = figure.layout["xaxis"]
    assert isinstance(xaxis, dict)
    title = xaxis["title"]
    assert isinstance(title, dict)
    return title["text"]


def test_a_concurrency_sweep_plots_against_its_levels() -> None:
    report = report_of(Concurrent(streams=16), Concurrent(streams=1), Concurrent(streams=4))
    figure = sweep_throughput_figure(report)
    assert [trace["x"] for trace in figure.data] == [[1, 4, 16], [1, 4, 16]]
    assert x_title(figure) == "concurrency (requests in flight)"
    assert figure.title == "Throughput against concurrency"
    latency = sweep_latency_figure(report, "ttft_ms", "TTFT")
    assert latency.data[0]["x"] == [1, 4, 16]
    assert latency.title == "TTFT against concurrency"


def test_a_rate_series_plots_against_the_offered_rate() -> None:
    report = report_of(Constant(rate=20), Constant(rate=5))
    figure = sweep_throughput_figure(report)
    assert figure.data[0]["x"] == [5.0, 20.0]
    assert x_title(figure) == "offered rate (req/s)"
