"""`assay compare`: step-by-step tables with better/worse beyond noise, refusing different
workloads unless forced, and an HTML page that renders."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_harness import run_assay
from tests.reports.browser import artifacts_dir, render

from assay.reports.compare import Verdict, compare_all
from assay.reports.html import load_report_file

COMMON = (
    "--mock-itl-ms", "0", "--output-tokens", "16", "--prompt-tokens", "32",
    "--max-requests", "300", "--profile", "concurrent", "--concurrency", "8",
    "--processes", "1", "--mock-fault", "empty_stream=0.01",
)  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    fast, slow, other = root / "fast", root / "slow", root / "other"
    for folder, ttft in ((fast, "0"), (slow, "40")):
        result = run_assay("run", *COMMON, "--mock-ttft-ms", ttft, "--output-dir", folder)
        assert result.exit_code == 0, result.stderr
    result = run_assay(
        "run", *COMMON, "--mock-ttft-ms", "0", "--endpoint", "completions", "--output-dir", other
    )
    assert result.exit_code == 0, result.stderr
    return fast, slow, other


def test_a_slower_server_shows_worse_ttft_and_a_run_against_itself_only_noise(
    runs: tuple[Path, Path, Path],
) -> None:
    fast, slow, _ = runs
    baseline = load_report_file(fast / "report.json")
    (against_slow, against_self) = compare_all(
        [("fast", baseline), ("slow", load_report_file(slow / "report.json")),
         ("fast again", baseline)]
    )  # fmt: skip
    verdicts = {c.figure.name: c.verdict for c in against_slow.comparisons}
    assert verdicts["TTFT p50"] is Verdict.worse
    assert verdicts["E2E p50"] is Verdict.worse
    assert verdicts["goodput req/s"] is Verdict.unmeasured
    assert all(c.verdict in (Verdict.noise, Verdict.unmeasured) for c in against_self.comparisons)


def test_compare_prints_a_table_per_step_and_writes_a_page_that_renders(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    fast, slow, _ = runs
    page = tmp_path / "compare.html"
    result = run_assay("compare", fast, slow, "--html", page)
    assert result.exit_code == 0, result.stderr
    assert "Step 1 concurrent" in result.stdout
    assert "TTFT p50" in result.stdout
    assert "worse" in result.stdout
    rendered = render(page, artifacts_dir() / "compare.png")
    assert rendered.errors == ()
    assert len(rendered.charts) == 12
    for chart in rendered.charts:
        assert chart.svg_width > 100, chart


def test_compare_refuses_runs_of_different_workloads_unless_forced(
    runs: tuple[Path, Path, Path],
) -> None:
    fast, _, other = runs
    refused = run_assay("compare", fast, other)
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: ")
    assert "endpoint: chat vs completions" in refused.stderr
    assert "--force" in refused.stderr
    forced = run_assay("compare", fast, other, "--force")
    assert forced.exit_code == 0, forced.stderr


def test_compare_needs_two_runs_and_real_run_folders(tmp_path: Path) -> None:
    one = run_assay("compare", tmp_path)
    assert one.exit_code == 2
    assert "at least two runs" in one.stderr
    missing = run_assay("compare", tmp_path, tmp_path / "nope")
    assert missing.exit_code == 2
    assert "no report.json" in missing.stderr
