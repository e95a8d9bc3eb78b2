"""Definitions side by side, end to end: a run against the embedded mock keeps every peer's
figures in report.json, `assay report RUN --definitions` prints them, and report.html shows the
table in a real browser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from assay.metrics.definitions import Peer
from assay.reports.definitions import rule_of
from tests.cli.cli_harness import read_record_lines, read_report, run_assay, run_fast
from tests.reports.browser import CHROMIUM_ARGS, chromium_path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("definitions") / "run"
    result = run_fast(
        out, "--max-requests", "40", "--concurrency", "4", "--processes", "1",
        "--mock-itl-ms", "2", "--mock-fault", "empty_stream=0",
        "--mock-fault", "truncated_stream=0", "--mock-fault", "inband_error=0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return out


def test_report_json_keeps_the_peers_figures_of_the_completed_streamed_answers(
    run_dir: Path,
) -> None:
    step = read_report(run_dir).steps[0]
    peers = step.definitions
    assert peers is not None
    streamed = [
        line
        for line in read_record_lines(run_dir)
        if line["status"] == "completed" and line["response"]["streamed"]
    ]
    assert peers.answers == len(streamed) == step.metrics.outcomes.completed
    # The rules that agree on the mock's one-token chunks agree in the figures too.
    assert peers.vllm.ttft_ms is not None
    assert step.metrics.latency.ttft_ms is not None
    assert peers.vllm.ttft_ms.mean == pytest.approx(step.metrics.latency.ttft_ms.mean)
    assert peers.aiperf.tpot_ms is None
    # GuideLLM's TPOT, token-weighted, is the sum of (last chunk - send) over the tokens.
    assert peers.guidellm.tpot_ms is not None
    waited = sum(
        line["timing"]["chunk_times_ns"][-1] - line["timing"]["send_ns"] for line in streamed
    )
    tokens = sum(line["usage"]["completion_tokens"] for line in streamed)
    assert peers.guidellm.tpot_ms.mean == pytest.approx(waited / tokens / 1e6)


def test_assay_report_definitions_prints_one_row_per_definition(run_dir: Path) -> None:
    result = run_assay("report", run_dir, "--definitions")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    names = ["assay", *(rule_of(peer).name for peer in Peer)]
    for name in names:
        assert any(line.strip().startswith(name + " ") for line in lines), (name, lines)
    assert "How each differs from assay's:" in result.stdout
    assert (run_dir / "report.html").is_file()


def test_assay_report_definitions_computes_them_for_a_report_stored_without(
    tmp_path: Path, run_dir: Path
) -> None:
    old = tmp_path / "old"
    old.mkdir()
    raw = json.loads((run_dir / "report.json").read_text())
    for step in raw["steps"]:
        step.pop("definitions", None)
    (old / "report.json").write_text(json.dumps(raw))
    (old / "records.jsonl").write_bytes((run_dir / "records.jsonl").read_bytes())
    result = run_assay("report", old, "--definitions")
    assert result.exit_code == 0, result.stderr
    assert "inference-perf" in result.stdout


def test_report_html_shows_the_definitions_table_in_chromium(run_dir: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        try:
            page = browser.new_page()
            page.goto((run_dir / "report.html").resolve().as_uri())
            section = page.locator("#definitions")
            assert section.is_visible()
            rows = section.locator("table.definitions tbody tr").all_inner_texts()
        finally:
            browser.close()
    assert [row.split("\t")[0] for row in rows] == [
        "assay",
        *(rule_of(peer).name for peer in Peer),
    ]
    aiperf = next(row for row in rows if row.startswith("AIPerf")).split("\t")
    assert aiperf[3:5] == ["-", "-"]  # AIPerf defines no TPOT
