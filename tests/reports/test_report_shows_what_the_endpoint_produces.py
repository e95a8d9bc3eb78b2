"""report.html shows what the run's endpoint produces and nothing else (issue 38 item 11): a
rerank run leads with documents/s, has no output-token card and no token charts, and no chart
is drawn as an empty frame (no errors chart when nothing errored)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.run_folder import HTML_FILE
from tests.cli.cli_harness import run_assay
from tests.reports.test_html_report import _figures_on

NO_FAULTS = ("--mock-fault", "empty_stream=0", "--mock-fault", "truncated_stream=0",
             "--mock-fault", "inband_error=0")  # fmt: skip


def cards(page: str) -> dict[str, str]:
    found = re.findall(r'<div class="card"><span class="muted">([^<]*)</span><b>([^<]*)</b>', page)
    return dict(found)


@pytest.fixture(scope="module")
def rerank_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    run_dir = tmp_path_factory.mktemp("rerank") / "run"
    result = run_assay(
        "run", "--output-dir", run_dir, "--endpoint", "rerank", "--documents", "4",
        "--max-seconds", "1.5", "--profile", "concurrent", "--concurrency", "4", *NO_FAULTS,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return (Path(run_dir) / HTML_FILE).read_text(encoding="utf-8")


def test_a_rerank_report_leads_with_documents_per_second(rerank_page: str) -> None:
    shown = cards(rerank_page)
    assert "usable output tokens" not in shown
    assert int(shown["documents scored"].replace(",", "")) > 0
    assert float(shown["documents/s"].replace(",", "")) > 0


def test_a_rerank_report_has_no_token_charts_and_no_empty_frames(rerank_page: str) -> None:
    figures = _figures_on(rerank_page)
    assert "Token rates" not in rerank_page
    for absent in ("token-rates", "per-user-output", "prefill-decode", "latency-itl_ms"):
        assert absent not in figures
    assert "errors" not in figures  # nothing errored
    assert "latency-e2e_ms" in figures
    for spec in figures.values():
        annotations = spec["layout"].get("annotations", [])
        assert not any("not measured" in str(note.get("text")) for note in annotations), spec["id"]
