"""report.html of an image run shows its inputs (issue 38 item 12), and on it and on the
compare page Plotly's toolbar never sits on a chart's title (item 16); drawn in headless
Chromium, screenshots kept in the test artifacts. A compare of runs without an SLO draws no
goodput chart, and a concurrency sweep's configuration names the levels it swept (item 13)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.run_folder import HTML_FILE
from tests.cli.cli_harness import run_assay, run_fast
from tests.reports.browser import ChartState, artifacts_dir, render

IMAGES = (
    *("--processes", "1", "--profile", "concurrent", "--concurrency", "2"),
    *("--mock-fault", "empty_stream=0", "--mock-fault", "truncated_stream=0"),
    *("--mock-fault", "inband_error=0"),
    *("--max-requests", "12", "--images", "uniform:0,2", "--image-size", "32x32"),
)


@pytest.fixture(scope="module")
def image_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("images") / "run"
    result = run_fast(run, *IMAGES)
    assert result.exit_code == 0, result.stdout + result.stderr
    return run


def assert_titles_clear_of_the_toolbar(charts: tuple[ChartState, ...]) -> None:
    titled = [chart for chart in charts if chart.title is not None]
    assert titled, "no chart has a title"
    for chart in titled:
        assert chart.title is not None, chart.id
        assert chart.modebar is not None, chart.id
        # Below the toolbar's strip: clear of it however wide the chart or long the title.
        assert chart.title.top >= chart.modebar.bottom, (chart.id, chart.title, chart.modebar)
        assert not chart.title.overlaps(chart.modebar), chart.id


def test_an_image_runs_report_shows_its_inputs(image_run: Path) -> None:
    page = (image_run / HTML_FILE).read_text(encoding="utf-8")
    assert "<h2>Inputs</h2>" in page
    inputs = page[page.index("<h2>Inputs</h2>") :]
    inputs = inputs[: inputs.index("</table>")]
    assert "<th>images per request</th>" in inputs
    assert '<td class="num">0 / ' in inputs  # min 0 images
    assert " / 2</td>" in inputs  # max 2
    assert "KiB" in inputs  # the request body's size
    for count in ("0 images: ", "1 image: ", "2 images: "):
        assert count in inputs, inputs


def test_the_peak_output_rate_says_where_it_was_in_words(image_run: Path) -> None:
    page = (image_run / HTML_FILE).read_text(encoding="utf-8")
    assert "(at s)" not in page
    assert "<th>peak output tok/s (1 s bucket, at)</th>" in page
    assert re.search(r'<td class="num">[\d,]+ at \d+(\.\d+)? s</td>', page), page


def test_a_text_runs_report_has_no_inputs_section(tmp_path: Path) -> None:
    result = run_fast(tmp_path / "run", "--max-requests", "4", "--processes", "1")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "<h2>Inputs</h2>" not in (tmp_path / "run" / HTML_FILE).read_text(encoding="utf-8")


def test_the_report_draws_every_title_below_the_toolbar(image_run: Path) -> None:
    rendered = render(image_run / HTML_FILE, artifacts_dir() / "report-images-toolbar.png")
    assert rendered.errors == ()
    assert_titles_clear_of_the_toolbar(rendered.charts)


def test_compare_draws_titles_below_the_toolbar_and_no_goodput_chart_without_slo(
    image_run: Path, tmp_path: Path
) -> None:
    page = tmp_path / "compare.html"
    result = run_assay("compare", image_run, image_run, "--html", page)
    assert result.exit_code == 0, result.stdout + result.stderr
    text = page.read_text(encoding="utf-8")
    assert "goodput" not in text.split("<h2>All figures</h2>")[0]  # no chart, no title
    assert "req/s (/s)" not in text
    rendered = render(page, artifacts_dir() / "compare-toolbar.png")
    assert rendered.errors == ()
    assert_titles_clear_of_the_toolbar(rendered.charts)


def test_a_concurrency_sweeps_configuration_names_the_levels_swept(tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = run_fast(
        run, "--processes", "1", "--profile", "sweep", "--sweep-concurrency", "1,4,16",
        "--max-requests", "4",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    page = (run / HTML_FILE).read_text(encoding="utf-8")
    config = page[page.index("<summary>configuration</summary>") :]
    assert "<th>concurrency</th><td><code>1,4,16 (swept; at most 16 in flight)</code>" in config
