"""What `assay run` prints and records about its own settings, stops and unmeasured figures,
through real runs against the embedded mock (issue 10 items 12-14, issue 8 item 8, issue 12)."""

from __future__ import annotations

from pathlib import Path

from assay.spec.sections import DEMO_FAULTS
from tests.cli.cli_harness import (
    assert_every_request_accounted,
    read_record_lines,
    read_report,
    run_assay,
    run_fast,
)

# A fault at rate 0: no demo faults, so a small run's validity does not depend on chance.
NO_FAULTS = ("--mock-fault", "empty_stream=0")


def lines_starting(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip().startswith(prefix)]


def test_stop_error_rate_is_recorded_under_its_own_name(tmp_path: Path) -> None:
    # Issue 10 item 12: the stop was recorded as `max_error_rate`, the validity threshold's name.
    result = run_fast(
        tmp_path, "--mock-fault", "http_500=0.9", "--stop-error-rate", "0.5",
        "--profile", "concurrent", "--concurrency", "4", "--max-seconds", "60",
        "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    report = assert_every_request_accounted(tmp_path)
    step = report.steps[0]
    assert step.stopped_by == "stop_error_rate"
    constraints = report.run_config.constraints
    assert constraints is not None
    assert constraints.stop_error_rate == 0.5
    assert constraints.model_extra == {}  # no `max_error_rate` beside it
    assert report.run_config.max_error_rate == 0.05  # the validity threshold, unchanged
    raw = (tmp_path / "report.json").read_text()
    assert '"stopped_by": "stop_error_rate"' in raw
    assert (
        "Stopped: the error rate over the last 50 finished requests reached 50 % "
        "(--stop-error-rate)." in result.stdout
    )


def test_report_records_the_demo_faults_and_the_default_concurrency(tmp_path: Path) -> None:
    # Issue 10 item 12: the report said `mock_faults: {}` and `concurrency: null`.
    result = run_fast(tmp_path, "--max-requests", "20", "--processes", "1")
    assert result.exit_code in (0, 1), result.stderr
    report = read_report(tmp_path)
    assert report.run_config.mock_faults == DEMO_FAULTS
    assert report.run_config.concurrency == 64
    # Issue 8 item 8: the title read "throughput x64 concurrent".
    assert "Step 1: throughput, up to 64 in flight" in result.stdout
    assert "x64 concurrent" not in result.stdout
    assert "Stopped after 20 requests (--max-requests)." in result.stdout


def test_concurrent_step_title_names_its_streams_once(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path, "--profile", "concurrent", "--concurrency", "4", "--max-requests", "8",
        "--processes", "1",
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    assert "Step 1: concurrent, 4 streams" in result.stdout
    assert "concurrent x4 concurrent" not in result.stdout


def test_non_streamed_run_shows_token_timing_as_not_measured(tmp_path: Path) -> None:
    # Issue 10 item 13: TPOT read 0.00 ms for every non-streamed answer.
    result = run_fast(
        tmp_path, "--no-stream", "--profile", "concurrent", "--concurrency", "4",
        "--max-requests", "20", "--processes", "1", *NO_FAULTS,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = read_report(tmp_path)
    latency = report.steps[0].metrics.latency
    assert (latency.ttft_ms, latency.itl_ms, latency.tpot_ms) == (None, None, None)
    assert latency.not_streamed == report.steps[0].metrics.outcomes.completed > 0
    assert latency.e2e_ms is not None
    for label in ("TTFT", "ITL", "TPOT"):
        (row,) = lines_starting(result.stdout, label + " ")
        assert "n/a (not streamed)" in row
        assert "0.00" not in row
    raw = (tmp_path / "report.json").read_text()
    assert '"tpot_ms": null' in raw


def test_embeddings_run_shows_no_token_rows_and_no_output_count(tmp_path: Path) -> None:
    # Issue 10 item 13 / issue 8 item 8: a TTFT row equal to E2E and "output token counts from:
    # no count".
    # Not run_fast: its --output-tokens is refused for embeddings (an embedding has none).
    result = run_assay(
        "run", "--mock-ttft-ms", "0", "--mock-itl-ms", "0", "--prompt-tokens", "32",
        "--output-dir", tmp_path, "--endpoint", "embeddings", "--profile", "concurrent",
        "--concurrency", "4", "--max-requests", "20", "--processes", "1", *NO_FAULTS,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    for label in ("TTFT", "ITL", "TPOT", "output tokens/s"):
        assert not lines_starting(result.stdout, label), label
    assert "no count" not in result.stdout
    assert lines_starting(result.stdout, "E2E ")
    assert "Embeddings: no output tokens" in result.stdout
    metrics = read_report(tmp_path).steps[0].metrics
    assert metrics.tokens.embeddings == metrics.outcomes.completed > 0
    assert metrics.tokens.output_sources == {}


def test_time_bounded_step_explains_its_cancelled_requests(tmp_path: Path) -> None:
    # Issue 12: requests cut at the time limit must not read as failures. The mock's first token
    # comes after 30 s, so all 4 streams are in flight at the 1 s limit.
    result = run_fast(
        tmp_path, "--mock-ttft-ms", "30000", "--profile", "concurrent", "--concurrency", "4",
        "--max-seconds", "1", "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr  # nothing completed
    report = assert_every_request_accounted(tmp_path)
    assert report.steps[0].metrics.outcomes.cancelled == 4
    assert "Stopped at the 1 s limit (--max-seconds)." in result.stdout
    assert (
        "4 in flight at the 1 s limit were cancelled: cut by the run, not failed by the server"
        in result.stdout
    )


def test_max_errors_stop_is_named(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path, "--mock-fault", "http_500=1", "--max-errors", "5", "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    assert "Stopped after 5 errored requests (--max-errors)." in result.stdout
    assert "achieved" not in result.stdout


def test_sweep_ends_with_one_table_row_per_step(tmp_path: Path) -> None:
    # Issue 12: a sweep printed one block per step and no table across them.
    result = run_fast(
        tmp_path, "--profile", "sweep", "--sweep-rates", "2", "--max-seconds", "1",
        "--processes", "1", "--slo", "ttft_ms=1000",
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    report = read_report(tmp_path)
    assert len(report.steps) == 4
    table = result.stdout[result.stdout.index("Steps (latency in ms") :]
    assert "goodput" in table
    rows = [
        line.split()
        for line in table.splitlines()[1:]
        if line.split()[:1] in (["1"], ["2"], ["3"], ["4"])
    ]
    assert [row[0] for row in rows] == ["1", "2", "3", "4"]
    assert rows[0][1] == "sync"
    assert rows[1][1:3] == ["max", "<=64"]
    for row, step in zip(rows[2:], report.steps[2:], strict=True):
        assert step.requested_rate is not None
        assert row[1] == f"{step.requested_rate:.3g}/s"
    assert all(row[-2:] == ["time", "limit"] for row in rows)


def test_run_against_the_mock_reports_the_figures_peers_print(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path, "--profile", "concurrent", "--concurrency", "4", "--max-requests", "40",
        "--max-seconds", "30", "--processes", "2", "--mock-itl-ms", "10", *NO_FAULTS,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    # A token every 10 ms: 40 answers of 16 tokens over 4 streams last over a second, so the
    # console shows rates.
    metrics = read_report(tmp_path).steps[0].metrics
    completed = metrics.outcomes.completed
    assert completed == 40
    throughput, latency = metrics.throughput, metrics.latency
    # Input is the server's prompt counts of the completed requests, read back from the records.
    prompts = sum(
        line["usage"]["prompt_tokens"]
        for line in read_record_lines(tmp_path)
        if line["status"] == "completed"
    )
    assert throughput.usable_input_tokens == prompts > 0
    assert throughput.peak_output_tokens_per_s is not None
    assert 0 < throughput.peak_output_tokens_per_s <= throughput.usable_output_tokens
    assert latency.ttst_ms is not None
    assert latency.ttst_ms.count == completed
    assert latency.decode_ms is not None
    assert latency.decode_ms.count == completed
    assert metrics.concurrency.max <= 4
    for label in ("input tokens/s", "total tokens/s", "TTST ", "Decode (E2E - TTFT)"):
        assert label in result.stdout, label
    assert "Prefill vs decode (40 streamed answers)" in result.stdout
    assert "Concurrency (requests in flight): mean" in result.stdout
    summary = (tmp_path / "summary.csv").read_text().splitlines()
    row = dict(zip(summary[0].split(","), summary[1].split(","), strict=True))
    assert int(row["peak_output_tok_per_s"]) == throughput.peak_output_tokens_per_s
    assert row["ttst_p50_ms"] != ""
