"""Cost and energy per unit of work: the price over the step's duration and the GPUs' energy
(DCGM samples in the server's metrics), divided by usable and by attempted work; the console's
lines, the page's cards and `assay compare`'s rows; energy end to end from a fake DCGM exporter
on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from playwright.sync_api import sync_playwright

from assay.metrics import StepAggregator
from assay.metrics.cost import step_cost
from assay.reports.compare import compare_step
from assay.reports.cost import cost_html, cost_lines, with_costs
from assay.reports.report import Report, StepReport, build_report
from assay.server_metrics.checks import AssayCounts
from assay.server_metrics.gpu_energy import DCGM_ENERGY_MJ, DCGM_POWER_W, energy_joules
from assay.server_metrics.observer import TimedSample
from assay.server_metrics.summary import StepBounds, summarize
from assay.spec.price import Price, parse_price
from assay.spec.run import RunEcho
from tests.cli.cli_harness import read_report, run_assay, run_fast
from tests.reports.browser import CHROMIUM_ARGS, chromium_path

NOW = datetime(2026, 1, 1, tzinfo=UTC)
S = 1_000_000_000


def _step(
    *, duration_s: float, completed: int, dispatched: int, usable: int, attempted: int
) -> StepReport:
    metrics = StepAggregator().snapshot()
    metrics = metrics.model_copy(
        update={
            "outcomes": metrics.outcomes.model_copy(
                update={
                    "dispatched": dispatched,
                    "completed": completed,
                    "errored": dispatched - completed,
                }
            ),
            "throughput": metrics.throughput.model_copy(
                update={
                    "duration_s": duration_s,
                    "usable_requests_per_s": completed / duration_s,
                    "usable_output_tokens": usable,
                    "attempted_output_tokens": attempted,
                    "usable_input_tokens": 3 * usable,
                }
            ),
        }
    )
    return StepReport.of(0, "constant", metrics, requested_rate=10.0)


def _report(step: StepReport) -> Report:
    return build_report(
        run_config=RunEcho(profile="constant"),
        steps=[step],
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=1.0,
    )


def test_a_price_is_dollars_an_hour_or_gpus_times_dollars() -> None:
    assert parse_price("2.5") == Price(usd_per_gpu_hour=2.5)
    assert parse_price(" 8x2.50 ").usd_per_hour == 20.0
    for bad in ("", "free", "-1", "0x3", "8x", "1e9999"):
        with pytest.raises(ValueError, match="a price per hour must be above 0"):
            parse_price(bad)


def test_cost_divides_the_steps_price_by_usable_and_by_attempted_work() -> None:
    # Half an hour at 4 x $3 = $6; 1.5 M usable and 2 M attempted output tokens; 6,000 of
    # 8,000 requests completed; 4.5 M input tokens.
    step = _step(
        duration_s=1800, completed=6000, dispatched=8000, usable=1_500_000, attempted=2_000_000
    )
    cost = step_cost(step.metrics, parse_price("4x3"))
    assert cost is not None
    assert cost.usd == pytest.approx(6.0)
    assert cost.usd_per_million_usable_output_tokens == pytest.approx(4.0)
    assert cost.usd_per_million_attempted_output_tokens == pytest.approx(3.0)
    assert cost.usd_per_million_usable_total_tokens == pytest.approx(1.0)  # 6 M tokens
    assert cost.usd_per_thousand_usable_requests == pytest.approx(1.0)
    assert cost.usd_per_thousand_attempted_requests == pytest.approx(0.75)
    assert cost.energy_joules is None
    assert cost.joules_per_usable_output_token is None


def test_nothing_usable_has_no_cost_per_usable_unit() -> None:
    step = _step(duration_s=60, completed=0, dispatched=10, usable=0, attempted=50)
    cost = step_cost(step.metrics, parse_price("2"))
    assert cost is not None
    assert cost.usd_per_million_usable_output_tokens is None
    assert cost.usd_per_million_attempted_output_tokens == pytest.approx(2 / 60 / 50 * 1e6)
    assert step_cost(step.metrics, None) is None


def test_the_console_and_the_page_show_usable_beside_attempted() -> None:
    step = _step(
        duration_s=1800, completed=6000, dispatched=8000, usable=1_500_000, attempted=2_000_000
    )
    report = with_costs(_report(step), parse_price("4x3"))
    cost = report.steps[0].cost
    assert cost is not None
    [line] = cost_lines(cost)
    assert line.startswith("Cost at 4 x $3.00/h = $12.00/h ($6.00 for the step): $4.00 per")
    assert "(attempted: $3.00)" in line
    page = cost_html(report)
    assert '<section id="cost">' in page
    assert "$ / M usable output tokens</span><b>$4.00</b>" in page


def test_energy_comes_from_the_dcgm_counter_else_from_the_power_gauge() -> None:
    counter = [TimedSample(t * S, {DCGM_ENERGY_MJ: 1_000.0 * t * 300}) for t in range(5)]
    assert energy_joules(counter, 1 * S, 3 * S) == pytest.approx(600.0)  # 300 W for 2 s
    power = [TimedSample(t * S, {DCGM_POWER_W: 100.0 + 100 * t}) for t in range(3)]
    assert energy_joules(power, 0, 2 * S) == pytest.approx(150 + 250)
    # A counter that went back (a GPU reset) gives no figure rather than a negative one.
    reset = [TimedSample(0, {DCGM_ENERGY_MJ: 5_000.0}), TimedSample(S, {DCGM_ENERGY_MJ: 10.0})]
    assert energy_joules(reset, 0, S) is None


def test_a_metrics_page_of_dcgm_alone_still_gives_each_steps_energy() -> None:
    samples = [TimedSample(t * S, {DCGM_ENERGY_MJ: 2_000.0 * t}) for t in range(11)]
    section = summarize(
        url="http://127.0.0.1:9400/metrics",
        interval_s=1.0,
        samples=samples,
        first=samples[0],
        last=samples[-1],
        steps=[StepBounds(index=0, start_ns=2 * S, end_ns=6 * S)],
        assay=AssayCounts(answered=1, unfinished=0, output_tokens=1, max_output_tokens=1),
    )
    assert section.kind is None
    assert section.problems == ()
    assert section.gpu_energy_joules == pytest.approx(20.0)
    [step] = section.steps
    assert step.gpu_energy_joules == pytest.approx(8.0)


def test_compare_judges_cost_per_usable_token_with_the_noise_rule() -> None:
    price = parse_price("10")
    cheap = _step(
        duration_s=3600, completed=10_000, dispatched=10_000, usable=2_000_000, attempted=2_000_000
    )
    dear = _step(
        duration_s=3600, completed=5_000, dispatched=10_000, usable=1_000_000, attempted=2_000_000
    )
    near = _step(
        duration_s=3600, completed=9_990, dispatched=10_000, usable=1_998_000, attempted=2_000_000
    )
    steps = [with_costs(_report(s), price).steps[0] for s in (cheap, dear, near)]
    rows = {row.label: row for row in compare_step(steps)}
    row = rows["$ / M usable out tok"]
    assert row.baseline == pytest.approx(5.0)
    assert [change.verdict for change in row.changes] == ["worse", "~"]
    assert "J / usable out tok" not in rows  # no run had GPU metrics
    assert "$ / M usable out tok" not in {r.label for r in compare_step([cheap, dear])}


class _Dcgm(BaseHTTPRequestHandler):
    """A DCGM exporter with two GPUs whose energy counters rise 1 J each per scrape."""

    scrapes: ClassVar[int] = 0

    def do_GET(self) -> None:
        type(self).scrapes += 1
        millijoules = 1000.0 * type(self).scrapes
        body = (
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
            f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0"}} {millijoules}\n'
            f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="1"}} {millijoules}\n'
            "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
            'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 250\nDCGM_FI_DEV_POWER_USAGE{gpu="1"} 250\n'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def dcgm_exporter() -> Iterator[str]:
    _Dcgm.scrapes = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Dcgm)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def test_a_run_scraping_a_dcgm_exporter_reports_joules_per_usable_output_token(
    tmp_path: Path, dcgm_exporter: str
) -> None:
    run_dir = tmp_path / "run"
    result = run_fast(
        run_dir, "--max-requests", "60", "--concurrency", "2", "--processes", "1",
        "--mock-itl-ms", "5", "--server-metrics", dcgm_exporter,
        "--server-metrics-interval", "0.1", "--cost-per-hour", "4x1.5",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = read_report(run_dir)
    server = report.server_metrics
    assert server is not None
    # Every scrape added 1 J per GPU: the run's energy is 2 J per exporter step between the
    # scrapes that bracket the load. A periodic scrape in flight beside a bracketing one may
    # land outside the bracket (one at each end at most), so the steps are the report's
    # scrapes less one, less up to two more.
    run_energy = server.gpu_energy_joules
    assert run_energy is not None
    assert run_energy % 2.0 == 0.0
    assert 2.0 * (server.scrapes - 3) <= run_energy <= 2.0 * (server.scrapes - 1)
    [step] = report.steps
    cost = step.cost
    assert cost is not None
    assert cost.price == Price(usd_per_gpu_hour=1.5, gpus=4)
    assert report.run_config.cost_per_hour == cost.price
    duration_s = step.metrics.throughput.duration_s
    assert cost.usd == pytest.approx(6.0 * duration_s / 3600)
    assert cost.usd_per_million_usable_output_tokens == pytest.approx(
        6.0 * duration_s / 3600 / step.metrics.throughput.usable_output_tokens * 1e6
    )
    assert "Cost at 4 x $1.50/h = $6.00/h" in result.stdout
    assert cost.energy_joules is not None
    assert 0 < cost.energy_joules <= run_energy
    usable = step.metrics.throughput.usable_output_tokens
    assert cost.joules_per_usable_output_token == pytest.approx(cost.energy_joules / usable)
    assert "GPU energy:" in result.stdout
    assert "per usable output token" in result.stdout
    cards = _cost_cards(run_dir / "report.html")
    assert cards["J / usable output token"] == f"{cost.joules_per_usable_output_token:.3g} J"
    assert "J / attempted output token" in cards
    assert cards["$ / M usable output tokens"].startswith("$")
    # assay compare shows the energy row of two such runs.
    compared = run_assay("compare", run_dir, run_dir)
    assert compared.exit_code == 0, compared.stderr
    assert "J / usable out tok" in compared.stdout
    assert "$ / M usable out tok" in compared.stdout


def test_a_price_that_is_not_one_is_one_error_line(tmp_path: Path) -> None:
    result = run_fast(tmp_path / "run", "--max-requests", "2", "--cost-per-hour", "8xfree")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: --cost-per-hour: a price per hour must be above 0, as USD or GPUSxUSD "
        "(e.g. 2.5 or 8x2.5), got '8xfree'"
    ]


def _cost_cards(page: Path) -> dict[str, str]:
    """The cost section's cards as a browser shows them: label -> value."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        try:
            tab = browser.new_page()
            tab.goto(page.resolve().as_uri())
            assert tab.locator("#cost").is_visible()
            texts = tab.locator("#cost .card").all_inner_texts()
        finally:
            browser.close()
    return {label: value for label, _, value in (text.partition("\n") for text in texts)}
