"""`assay compare` on real runs: the console tables, the refusal of different workloads, and the
HTML page, rendered in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_harness import run_assay
from tests.reports.browser import artifacts_dir, render

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


def test_compare_marks_a_slower_server_worse_and_writes_a_page_that_renders(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    fast, slow, _ = runs
    page = tmp_path / "compare.html"
    result = run_assay("compare", fast, slow, "--html", page)
    assert result.exit_code == 0, result.stderr
    assert "Step 1" in result.stdout
    assert "TTFT" in result.stdout
    assert "worse" in result.stdout
    rendered = render(page, artifacts_dir() / "compare.png")
    assert rendered.errors == ()
    assert len(rendered.charts) >= 8
    for chart in rendered.charts:
        assert chart.svg_width > 100, chart
    assert "worse" in page.read_text(encoding="utf-8")


def test_compare_refuses_runs_of_different_workloads_unless_forced(
    runs: tuple[Path, Path, Path],
) -> None:
    fast, _, other = runs
    refused = run_assay("compare", fast, other)
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: ")
    assert "endpoint: 'chat' (run 1) vs 'completions' (run 2)" in refused.stderr
    forced = run_assay("compare", fast, other, "--force")
    assert forced.exit_code == 0, forced.stderr
