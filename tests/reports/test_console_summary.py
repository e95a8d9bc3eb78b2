"""The console summary: readable at 100 columns, plain text off a terminal, a clear verdict."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.engine import StopReason
from assay.metrics import Slo, StepAggregator
from assay.records import Completed, Errored, JudgedBy, RequestRecord
from assay.reports import Report, StepReport, build_report, collect_environment, render_summary
from assay.spec.run import RunEcho

MS = 1_000_000
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
ERRORS = {
    DiagnosticCode.empty_response: (
        "empty response payload: no text, no tool calls, 0 output tokens"
    ),
    DiagnosticCode.truncated_stream: "stream ended without [DONE] and without a finish_reason "
    "after 12 chunks; the connection closed cleanly",
    DiagnosticCode.http_status: "HTTP 503: {'error': 'server overloaded'}",
}


def _completed(i: int) -> RequestRecord[GenerationResponse]:
    send = i * 40 * MS
    first = send + (60 + i % 7) * MS
    times = tuple(first + k * 12 * MS for k in range(16))
    return RequestRecord[GenerationResponse](
        request_id=f"r{i}",
        targeted_start_ns=send - MS,
        dispatched_ns=send,
        finished_ns=times[-1] + MS,
        outcome=Completed(
            response=GenerationResponse(
                request_id=f"r{i}",
                endpoint=Endpoint.completions,
                streamed=True,
                answer=TextAnswer(text="a" * 16),
                finish_reason="length",
                usage=Usage(prompt_tokens=64, completion_tokens=16),
                content_chunks=16,
                streamed_tokens=16,
                streamed_token_source=TokenSource.stream,
                terminal_seen=True,
                timing=ResponseTiming(
                    send_ns=send,
                    first_token_ns=first,
                    end_ns=times[-1] + MS,
                    chunk_times_ns=times,
                    chunk_tokens=(1,) * 16,
                ),
            )
        ),
    )


def _errored(i: int, code: DiagnosticCode) -> RequestRecord[GenerationResponse]:
    send = i * 40 * MS + 5 * MS
    return RequestRecord[GenerationResponse](
        request_id=f"e{i}",
        targeted_start_ns=send,
        dispatched_ns=send,
        finished_ns=send + 30 * MS,
        outcome=Errored(
            diagnostic=UnusableResponse(code=code, message=ERRORS[code]),
            judged_by=JudgedBy.validator,
        ),
    )


def _report(errors_per_code: int) -> Report:
    aggregator = StepAggregator(slo=Slo(ttft_ms=65, tpot_ms=20))
    for i in range(30):
        aggregator.add(_completed(i))
    for i in range(errors_per_code):
        for code in ERRORS:
            aggregator.add(_errored(i, code))
    step = StepReport.of(0, "constant", aggregator.snapshot(), requested_rate=25.0)
    return build_report(
        run_config=RunEcho(profile="constant"),
        steps=[step],
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
    )


def _render(report: Report) -> str:
    console = Console(record=True, width=100, file=io.StringIO())
    render_summary(report, console)
    return console.export_text()


def test_summary_names_every_error_code_with_its_example_message() -> None:
    text = _render(_report(errors_per_code=2))
    for code in ERRORS:
        assert code.value in text
    assert "empty response payload: no text, no tool calls, 0 output tokens" in text
    assert "without [DONE]" in text  # brackets are printed, not read as markup
    assert "INVALID RUN: error rate 16.7 % exceeds the allowed 5.0 %" in text


def test_summary_has_latency_and_throughput_tables() -> None:
    text = _render(_report(errors_per_code=0))
    for label in ("TTFT", "ITL", "TPOT", "E2E from targeted start", "Dispatch lag"):
        assert label in text
    assert "requests/s" in text
    assert "output tokens/s" in text
    assert "usable (completed)" in text
    assert "attempted (dispatched)" in text
    assert "Goodput:" in text
    assert "server usage 30" in text
    assert "VALID RUN" in text
    assert "INVALID" not in text


def test_summary_fits_in_100_columns() -> None:
    text = _render(_report(errors_per_code=1))
    assert max(len(line) for line in text.splitlines()) <= 100


def test_summary_off_a_terminal_has_no_colour_codes() -> None:
    out = io.StringIO()
    render_summary(_report(errors_per_code=3), Console(file=out, width=100))
    assert "\x1b[" not in out.getvalue()
    assert "INVALID RUN" in out.getvalue()


def _short_step_report() -> Report:
    # Issue 10 item 14: a --max-errors stop printed "achieved 738.79 req/s over 0.01 s".
    aggregator = StepAggregator()
    for i in range(7):
        aggregator.add(
            _errored(i, DiagnosticCode.http_status).model_copy(
                update={"dispatched_ns": i * MS, "finished_ns": 9 * MS + i * MS // 2}
            )
        )
    metrics = aggregator.snapshot()
    assert metrics.throughput.duration_s < 0.02
    step = StepReport.of(
        0, "throughput", metrics, requested_concurrency=64, stopped_by=StopReason.max_errors
    )
    return build_report(
        run_config=RunEcho.model_validate({"constraints": {"max_errors": 7}}),
        steps=[step],
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
    )


def test_step_shorter_than_a_second_shows_counts_not_rates() -> None:
    report = _short_step_report()
    text = _render(report)
    rate = report.steps[0].metrics.throughput.attempted_requests_per_s
    assert rate > 500
    assert f"{rate:.2f}" not in text
    assert "achieved" not in text
    assert "7 dispatched, 0 completed (too short for a rate)" in text
    assert "no rates: the step lasted 0.01 s" in text
    assert "Stopped after 7 errored requests (--max-errors)." in text


def test_step_header_names_dispatched_and_served_rates() -> None:
    report = _report(errors_per_code=2)
    throughput = report.steps[0].metrics.throughput
    text = _render(report)
    assert "Step 1: constant at 25 req/s" in text
    assert (
        f"Ran {throughput.duration_s:.2f} s: dispatched {throughput.attempted_requests_per_s:.2f} "
        f"req/s, served (usable) {throughput.usable_requests_per_s:.2f} req/s"
    ) in text
    assert throughput.usable_requests_per_s < throughput.attempted_requests_per_s


def test_single_step_run_prints_no_steps_table() -> None:
    assert "Steps (latency" not in _render(_report(errors_per_code=0))


def test_steps_table_has_a_row_per_step_with_short_steps_marked() -> None:
    long_step = _report(errors_per_code=0).steps[0]
    short_step = _short_step_report().steps[0].model_copy(update={"index": 1})
    report = build_report(
        run_config=RunEcho(),
        steps=[long_step, short_step],
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
    )
    text = _render(report)
    table = text[text.index("Steps (latency") :]
    assert "-: the step lasted under 1 s, too short for a rate" in table
    first = next(line.split() for line in table.splitlines() if line.split()[:1] == ["1"])
    second = next(line.split() for line in table.splitlines() if line.split()[:1] == ["2"])
    assert first[1] == "25/s"
    assert second[1:5] == ["max", "<=64", "-", "-"]
    assert second[-2:] == ["max", "errors"]


def test_report_with_the_former_stop_name_loads_as_stop_error_rate() -> None:
    report = _report(errors_per_code=0)
    raw = report.model_dump(mode="json")
    raw["steps"][0]["stopped_by"] = "max_error_rate"
    loaded = Report.model_validate(raw)
    assert loaded.steps[0].stopped_by is StopReason.stop_error_rate


def test_summary_shows_the_figures_peers_print() -> None:
    # 30 answers of 16 tokens and 64 prompt tokens, 40 ms apart: tokens every 12 ms after the
    # first, the end 1 ms after the last, so 181 ms of decode per answer.
    text = _render(_report(errors_per_code=0))
    (input_row,) = [line for line in text.splitlines() if "input tokens/s" in line]
    assert input_row.split()[-1] == f"{30 * 64 / 1.402:.1f}"
    assert [line for line in text.splitlines() if "total tokens/s" in line]
    (peak_row,) = [line for line in text.splitlines() if "peak output tokens/s (1 s)" in line]
    assert int(peak_row.split()[-1]) > 0
    (ttst_row,) = [line for line in text.splitlines() if line.strip().startswith("TTST")]
    assert ttst_row.split()[1:4] == ["30", "12.0", "12.0"]
    (decode_row,) = [line for line in text.splitlines() if "Decode (E2E - TTFT)" in line]
    assert decode_row.split()[4:6] == ["30", "181"]
    assert f"Per-user output tokens/s (30 answers of 2+ tokens): mean {15 / 0.181:.1f}" in text
    assert "Prefill vs decode (30 streamed answers): TTFT mean" in text
    # A peak known exactly is one figure (issue 38: "(at most 7, sampled every 1 us)").
    assert "Concurrency (requests in flight): mean 5.22, peak 7\n" in text
