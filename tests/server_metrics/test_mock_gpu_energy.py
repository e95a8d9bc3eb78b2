"""Energy against the embedded mock, as a newcomer runs it (`--mock-gpu-watts`): the mock's
/metrics shows one simulated GPU drawing a constant power, and the run turns its DCGM energy
counter into joules per usable output token."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.mock.metrics import gpu_lines
from assay.server_metrics.gpu_energy import DCGM_POWER_W, dcgm_only, energy_joules
from assay.server_metrics.observer import TimedSample
from assay.server_metrics.scrape import parse_exposition
from tests.cli.cli_harness import read_report, run_assay, run_fast

WATTS = 300.0
INTERVAL_S = 0.25


def test_a_run_against_a_mock_with_a_gpu_reports_its_energy(tmp_path: Path) -> None:
    ran = run_fast(
        tmp_path / "run", "--mock-gpu-watts", str(WATTS), "--max-requests", "200",
        "--concurrency", "8", "--mock-itl-ms", "2", "--server-metrics-interval", str(INTERVAL_S),
        "--mock-fault", "truncated_stream=0.05",
    )  # fmt: skip
    assert ran.exit_code in (0, 1), ran.stderr
    assert "GPU energy:" in ran.stdout
    step = read_report(tmp_path / "run").steps[0]
    cost = step.cost
    assert cost is not None
    assert cost.energy_joules is not None
    metrics = step.metrics
    assert metrics.start_ns is not None
    assert metrics.end_ns is not None
    seconds = (metrics.end_ns - metrics.start_ns) / 1e9
    # A constant draw: the energy between the scrapes that bracket the step is the power times
    # their distance, which is the step's duration and at most a scrape interval on each side.
    drawn_s = cost.energy_joules / WATTS
    assert seconds - 0.01 <= drawn_s <= seconds + 2 * INTERVAL_S + 0.5
    usable = metrics.throughput.usable_output_tokens
    attempted = metrics.throughput.attempted_output_tokens
    assert usable < attempted  # the cut answers' tokens were generated, not usable
    assert cost.joules_per_usable_output_token == pytest.approx(cost.energy_joules / usable)
    assert cost.joules_per_attempted_output_token == pytest.approx(cost.energy_joules / attempted)


def test_the_simulated_gpu_reads_as_a_dcgm_exporter() -> None:
    """Two scrapes two seconds apart, read as assay reads an exporter's pages: 600 J."""
    pages = [
        parse_exposition("\n".join(gpu_lines(WATTS, seconds_since_boot=at)) + "\n")
        for at in (10.0, 12.0)
    ]
    assert pages[0][DCGM_POWER_W] == WATTS
    scrapes = [TimedSample(at_ns, page) for at_ns, page in zip((0, 2 * 10**9), pages, strict=True)]
    assert energy_joules(dcgm_only(scrapes), 0, 2 * 10**9) == pytest.approx(2 * WATTS)


def test_a_gpu_drawing_no_power_is_refused(tmp_path: Path) -> None:
    ran = run_assay("run", "--mock-gpu-watts", "0", "--output-dir", tmp_path / "run")
    assert ran.exit_code == 2
    assert ran.stderr.count("error:") == 1
    assert "--mock-gpu-watts" in ran.stderr
