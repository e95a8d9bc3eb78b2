"""report.html: written by every run, rebuilt by `assay report`, drawn by a real browser.

The browser tests open the page in headless Chromium and check that every chart drew an SVG
with data (or says why it has none), that the page logged no error and asked for nothing over
the network, and save a full-page screenshot in test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from assay.reports import load_report
from assay.reports.charts import figures_of
from assay.reports.html import plotly_js, read_latency_samples, render_html
from assay.run_folder import HTML_FILE
from tests.cli.cli_harness import read_report, run_assay, run_fast
from tests.reports.browser import ChartState, artifacts_dir, render


def _assert_drawn(chart: ChartState) -> None:
    """A chart drew a sized SVG with data in it, or an annotation that says why it has none;
    its legend stays clear of the x-axis title and inside the chart, and a right-hand axis's
    labels are not cut at the chart's edge (issue 20 item 6)."""
    assert chart.svg_width > 100, chart
    assert chart.svg_height > 100, chart
    assert chart.traces > 0 or chart.annotations > 0, chart
    assert chart.svg is not None, chart
    if chart.legend is not None:
        assert chart.legend.inside(chart.svg), chart
        if chart.x_title is not None:
            assert not chart.legend.overlaps(chart.x_title), chart
    for label in chart.right_axis:
        assert label.inside(chart.svg), (label, chart)


@pytest.fixture(scope="module")
def single_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("html") / "single"
    result = run_fast(
        run_dir,
        "--profile", "concurrent", "--concurrency", "8", "--max-seconds", "2",
        "--mock-fault", "empty_stream=0.05", "--mock-fault", "inband_error=0.05",
        "--max-error-rate", "0.5", "--processes", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return run_dir


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("html") / "sweep"
    result = run_fast(
        run_dir,
        "--profile", "sweep", "--sweep-rates", "2", "--max-seconds", "1",
        "--concurrency", "8", "--slo", "ttft_ms=5", "--slo", "e2e_ms=50",
        "--mock-fault", "truncated_stream=0.02", "--max-error-rate", "0.5",
        "--processes", "1",
        # The sweep's top rate is two thirds of the throughput its first step measured; on a
        # busy machine the client can fall behind it, which is a true verdict but not what
        # these tests are about: the charts of a sweep.
        "--max-not-sent-rate", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return run_dir


def test_every_run_writes_report_html_beside_report_json(single_run: Path) -> None:
    page = (single_run / HTML_FILE).read_text(encoding="utf-8")
    report = read_report(single_run)
    assert "VALID RUN" in page
    for code in report.totals.errors_by_code:
        assert str(code) in page
    assert page.count('class="plot"') >= 10


def test_report_html_inlines_plotly_and_loads_nothing_from_outside(single_run: Path) -> None:
    page = (single_run / HTML_FILE).read_text(encoding="utf-8")
    assert plotly_js()[:2000] in page
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)


def test_report_json_keeps_a_bounded_timeline_per_step(single_run: Path) -> None:
    report = read_report(single_run)
    for step in report.steps:
        timeline = step.timeline
        assert timeline is not None
        assert 0 < timeline.buckets <= 240
        assert sum(timeline.dispatched) == step.metrics.outcomes.dispatched
        assert sum(timeline.completed) == step.metrics.outcomes.completed
        errored = sum(sum(series) for series in timeline.errored_by_code.values())
        assert errored == step.metrics.outcomes.errored


def test_latency_samples_come_from_completed_records_only(single_run: Path) -> None:
    report = read_report(single_run)
    samples = read_latency_samples(single_run / "records.jsonl")
    completed = sum(step.metrics.outcomes.completed for step in report.steps)
    assert sum(len(values) for values in samples["e2e_ms"].values()) == completed
    assert all(value >= 0 for values in samples["ttft_ms"].values() for value in values)


def test_every_chart_of_a_single_step_run_renders_in_chromium(single_run: Path) -> None:
    page = render(single_run / HTML_FILE, artifacts_dir() / "report-single-step.png")
    assert page.errors == ()
    assert "VALID" in page.title
    assert len(page.charts) >= 10
    for chart in page.charts:
        _assert_drawn(chart)
    # The latency headline of a one-step run, as cards.
    shown = {card.rsplit(" ", 2)[0]: card for card in page.cards if card.endswith(" ms")}
    latency = read_report(single_run).steps[0].metrics.latency
    measured = {
        f"{name} {field}"
        for name, metric in (("TTFT", "ttft_ms"), ("ITL", "itl_ms"), ("TPOT", "tpot_ms"),
                             ("E2E", "e2e_ms"))
        for field in ("p50", "p99")
        if getattr(latency, metric) is not None
    }  # fmt: skip
    assert {"TTFT p50", "TTFT p99", "E2E p50", "E2E p99"} <= set(shown) <= measured
    assert latency.ttft_ms is not None
    assert shown["TTFT p50"] == f"TTFT p50 {latency.ttft_ms.p50:.3g} ms"


def test_a_report_page_stays_under_one_and_a_half_megabytes(
    single_run: Path, sweep_run: Path
) -> None:
    # Issue 20 item 6: each page was 4.9 MB (the full plotly bundle inlined).
    for run in (single_run, sweep_run):
        assert (run / HTML_FILE).stat().st_size <= 1_500_000


def test_every_chart_of_a_sweep_renders_with_its_slo_lines(sweep_run: Path) -> None:
    report = read_report(sweep_run)
    assert len(report.steps) == 4
    page = render(sweep_run / HTML_FILE, artifacts_dir() / "report-sweep.png")
    assert page.errors == ()
    ids = {chart.id for chart in page.charts}
    assert {"sweep-throughput", "sweep-ttft_ms", "sweep-e2e_ms"} <= ids
    for chart in page.charts:
        _assert_drawn(chart)
    server_rates = next(chart for chart in page.charts if chart.id == "server-rates")
    assert server_rates.right_axis  # the tok/s axis drew its labels, inside the chart
    html = (sweep_run / HTML_FILE).read_text(encoding="utf-8")
    assert "SLO 5 ms" in html
    assert "SLO 50 ms" in html


def test_assay_report_rebuilds_the_same_page_from_a_run_dir(single_run: Path) -> None:
    page = single_run / HTML_FILE
    before = page.read_bytes()
    page.unlink()
    result = run_assay("report", single_run)
    assert result.exit_code == 0, result.stderr
    assert page.read_bytes() == before


def test_assay_report_renders_a_report_written_without_a_timeline(
    single_run: Path, tmp_path: Path
) -> None:
    raw = orjson.loads((single_run / "report.json").read_bytes())
    for step in raw["steps"]:
        del step["timeline"]
    (tmp_path / "report.json").write_bytes(orjson.dumps(raw))
    result = run_assay("report", tmp_path)
    assert result.exit_code == 0, result.stderr
    page = (tmp_path / HTML_FILE).read_text(encoding="utf-8")
    assert "Over time" not in page
    assert load_report(tmp_path).steps[0].timeline is None


def test_assay_report_on_a_folder_without_a_report_is_one_error_line(tmp_path: Path) -> None:
    result = run_assay("report", tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert len(result.stderr.strip().splitlines()) == 1
    # The words of the one report loader (assay.reports.load_report), not a copy of its check.
    assert "report.json: no such file (not a run directory?)" in result.stderr


def test_assay_report_on_a_file_is_one_error_line(single_run: Path) -> None:
    file = single_run / "report.json"
    result = run_assay("report", file)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {file}: not a folder (give the run's output directory)"


def test_assay_report_on_a_broken_report_json_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"schema_version": "assay.report/1"}')
    result = run_assay("report", tmp_path)
    assert result.exit_code == 2
    assert "not an assay report" in result.stderr
    assert "Traceback" not in result.stderr


def test_revalidate_writes_a_report_html_with_a_timeline(single_run: Path) -> None:
    result = run_assay("revalidate", single_run, "--strict")
    assert result.exit_code in (0, 1), result.stderr
    revalidated = single_run / "revalidated"
    report = read_report(revalidated)
    assert all(step.timeline is not None for step in report.steps)
    assert (revalidated / HTML_FILE).is_file()


def _figures_on(page: str) -> dict[str, Any]:
    """The chart specifications a page hands to plotly.js, by chart id."""
    (line,) = [line for line in page.splitlines() if line.startswith("const ASSAY_FIGURES = ")]
    specs = orjson.loads(line.removeprefix("const ASSAY_FIGURES = ").removesuffix(";"))
    return {spec["id"]: spec for spec in specs}


def test_report_html_shows_the_token_rates_per_user_speed_and_prefill_vs_decode(
    single_run: Path,
) -> None:
    page = (single_run / HTML_FILE).read_text(encoding="utf-8")
    step = read_report(single_run).steps[0]
    throughput = step.metrics.throughput
    assert "<h2>Token rates, per-user speed, prefill vs decode</h2>" in page
    assert "peak concurrent requests" in page
    figures = _figures_on(page)
    rates = {trace["name"]: trace["y"] for trace in figures["token-rates"]["data"]}
    assert rates["input"] == [throughput.usable_input_tokens_per_s]
    assert rates["total"] == [throughput.usable_total_tokens_per_s]
    assert rates["peak output (busiest second)"] == [throughput.peak_output_tokens_per_s]
    assert {"prefill-decode", "latency-ttst_ms"} <= set(figures)
    # A chart with nothing to draw is left out, not drawn as an empty frame (issue 38).
    measured = throughput.per_user_output_tokens_per_s is not None
    assert ("per-user-output" in figures) == measured


def test_report_html_of_a_report_before_the_token_figures_has_no_such_section() -> None:
    page = render_html(load_report(Path(__file__).parent / "stored_runs" / "6364a6d"), {})
    assert "Token rates, per-user speed" not in page
    assert "token-rates" not in _figures_on(page)


@pytest.fixture(scope="module")
def ramp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("html") / "ramp"
    result = run_fast(
        run_dir,
        "--ramp-up", "linear", "--ramp-up-start-rate", "4", "--ramp-up-end-rate", "40",
        "--max-seconds", "2", "--burstiness", "0.5", "--max-error-rate", "0.5",
        "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return run_dir


def test_the_ramp_chart_draws_the_dispatched_rate_against_its_target_curve(
    ramp_run: Path,
) -> None:
    report = read_report(ramp_run)
    (step,) = report.steps
    ramp, timeline = step.ramp, step.timeline
    assert ramp is not None
    assert timeline is not None
    sections = dict(figures_of(report, {}))
    (figure,) = [figure for figure in sections["Over time"] if figure.id == "ramp-rate"]
    target, achieved = figure.data
    assert target["y"] == [ramp.rate_at(float(t)) for t in _numbers(target["x"])]
    assert _numbers(target["y"])[0] == 4.0
    assert max(_numbers(target["y"])) == 40.0
    width = timeline.interval_s
    assert achieved["y"] == [count / width for count in timeline.dispatched]
    assert sum(timeline.dispatched) == step.metrics.outcomes.dispatched
    # Without a ramp there is no such chart.
    flat = report.model_copy(update={"steps": (step.model_copy(update={"ramp": None}),)})
    assert all(
        figure.id != "ramp-rate" for _, figures in figures_of(flat, {}) for figure in figures
    )


def test_every_chart_of_a_ramp_renders_in_chromium(ramp_run: Path) -> None:
    page = render(ramp_run / HTML_FILE, artifacts_dir() / "report-ramp.png")
    assert page.errors == ()
    assert "ramp-rate" in {chart.id for chart in page.charts}
    for chart in page.charts:
        _assert_drawn(chart)


def _numbers(values: object) -> list[float]:
    assert isinstance(values, list)
    return [float(value) for value in values]
