"""report.html's charts and tables as data (issue 20 item 6): a colour per step, rates with
three significant digits, the TPOT chart with its SLO, sessions and turns, and each limit of the
config shown once. The browser tests check the drawn page."""

from __future__ import annotations

from pathlib import Path

from pydantic import JsonValue

from assay.metrics import StepAggregator
from assay.reports import Report, load_report
from assay.reports.chart_base import STEP_COLOURS, step_label
from assay.reports.charts import turns_figure
from assay.reports.html import read_latency_samples, render_html
from assay.reports.latency_charts import cdf_figure, latency_percentiles_figure
from assay.reports.report import SessionSummary, StepReport
from assay.reports.time_charts import throughput_over_time_figure

SWEEP = Path(__file__).parent / "stored_runs" / "6364a6d"


def only(value: JsonValue) -> dict[str, JsonValue]:
    """The one object of a list of one (a chart's one shape or annotation)."""
    assert isinstance(value, list)
    (item,) = value
    assert isinstance(item, dict)
    return item


def sweep() -> Report:
    return load_report(SWEEP)


def with_slo(report: Report, **slo: float) -> Report:
    echo = report.run_config.model_copy(update={"slo": slo})
    return report.model_copy(update={"run_config": echo})


def test_each_step_has_its_own_colour_on_the_time_charts() -> None:
    figure = throughput_over_time_figure(sweep())
    colours: dict[str, set[str]] = {}
    for trace in figure.data:
        name = str(trace["name"])
        line = trace["line"]
        assert isinstance(line, dict)
        colours.setdefault(name.split(", ", 1)[1], set()).add(str(line["color"]))
    # usable and attempted of one step share a colour; no two steps do.
    assert all(len(shades) == 1 for shades in colours.values())
    assert len({next(iter(shades)) for shades in colours.values()}) == len(colours) == 3
    assert all(next(iter(shades)) in STEP_COLOURS for shades in colours.values())


def test_a_rate_is_labelled_with_three_significant_digits() -> None:
    step = StepReport.of(3, "sweep", StepAggregator().snapshot(), requested_rate=14.637218)
    assert step_label(step) == "4 sweep 14.6/s"


def test_the_tpot_chart_draws_the_tpot_slo() -> None:
    report = with_slo(sweep(), tpot_ms=2.0)
    figure = latency_percentiles_figure(report, "tpot_ms", "Time per output token")
    shape = only(figure.layout["shapes"])
    assert shape["y0"] == shape["y1"] == 2.0
    assert only(figure.layout["annotations"])["text"] == "SLO 2 ms"


def test_the_cdf_draws_its_slo_on_the_millisecond_axis() -> None:
    samples = read_latency_samples(SWEEP / "records.jsonl")
    report = sweep()
    labels = {step.index: step_label(step) for step in report.steps}
    by_label = {labels[index]: values for index, values in samples["ttft_ms"].items()}
    figure = cdf_figure("ttft_ms", "Time to first token", by_label, report=report)
    shape = only(figure.layout["shapes"])
    assert shape["x0"] == shape["x1"] == 500.0


def test_a_multi_turn_step_gets_a_turns_chart_and_a_sessions_table() -> None:
    report = sweep()
    assert turns_figure(report) is None
    first = report.steps[0]
    turned = first.model_copy(
        update={
            "sessions": SessionSummary(
                started=4, completed=3, ended_early=1, turns_sent=11, turns_not_sent=1
            ),
            "turns": {1: first.metrics, 2: first.metrics, 3: first.metrics},
        }
    )
    report = report.model_copy(update={"steps": (turned, *report.steps[1:])})
    figure = turns_figure(report)
    assert figure is not None
    assert [trace["x"] for trace in figure.data] == [[1, 2, 3], [1, 2, 3]]
    page = render_html(report, {})
    assert "<h2>Sessions</h2>" in page
    assert "turn 3: 7 of 8 completed" in page
    assert 'id="turns-ttft"' in page


def test_the_config_shows_each_limit_once_as_in_force() -> None:
    report = sweep()
    constraints = report.run_config.constraints
    assert constraints is not None
    page = render_html(report, {})
    config = page[page.index("<summary>configuration</summary>") :]
    config = config[: config.index("</details>")]
    assert "<th>max_seconds</th>" not in config
    assert "<th>max_requests</th>" not in config
    assert "<th>constraints</th>" in config
