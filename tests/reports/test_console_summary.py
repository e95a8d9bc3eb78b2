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
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.metrics import Slo, StepAggregator
from assay.records import Completed, Errored, JudgedBy, RequestRecord
from assay.reports import Report, StepReport, build_report, collect_environment, render_summary

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
                text="a" * 16,
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
        run_config={"profile": "constant"},
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
    render_summary(_report(errors_per_code=1), Console(file=out, width=100))
    assert "\x1b[" not in out.getvalue()
    assert "INVALID RUN" in out.getvalue()
