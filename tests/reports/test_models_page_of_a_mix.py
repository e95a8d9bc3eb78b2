"""A traffic mix sent as a newcomer sends it (`assay run --model a=0.6,b=0.4`, README), read in
Chromium: report.html has a section per model whose rows are the run's own counts, and the mock's
spread latencies show (b is served slower than a, so its TTFT p50 is higher)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.cli.cli_harness import read_record_lines, read_report, run_assay
from tests.reports.browser import CHROMIUM_ARGS, chromium_path


def test_a_mixed_runs_page_shows_each_model_it_sent(tmp_path: Path) -> None:
    run = tmp_path / "run"
    ran = run_assay(
        "run", "--model", "a=0.6,b=0.4", "--max-requests", "60", "--concurrency", "8",
        "--mock-ttft-ms", "20", "--mock-itl-ms", "1", "--mock-fault", "empty_stream=0",
        "--mock-fault", "truncated_stream=0", "--mock-fault", "inband_error=0",
        "--output-tokens", "8", "--prompt-tokens", "16", "--output-dir", run,
    )  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    sent = Counter(line["model"] for line in read_record_lines(run))
    assert sorted(sent) == ["a", "b"]
    assert sum(sent.values()) == 60
    step = read_report(run).steps[0]
    assert step.models is not None
    assert {name: m.outcomes.dispatched for name, m in step.models.items()} == dict(sent)
    ttft = {name: m.latency.ttft_ms for name, m in step.models.items()}
    assert ttft["a"] is not None
    assert ttft["b"] is not None
    assert ttft["b"].p50 > ttft["a"].p50  # the mock serves b at 1.5x a's time to first token
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        try:
            page = browser.new_page()
            page.goto((run / "report.html").resolve().as_uri())
            section = page.locator("#models")
            assert section.is_visible()
            rows = section.locator("table.models tbody tr").all_inner_texts()
            page.wait_for_selector("#models-ttft svg.main-svg")
        finally:
            browser.close()
    shown = {row.split("\t")[0]: row.split("\t")[1] for row in rows}
    assert shown == {name: f"{count:,}" for name, count in sent.items()}
