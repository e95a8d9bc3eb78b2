"""Report: JSON round trip, files on disk, the CSV header and rows, totals and validity."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

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
from assay.metrics import Outcomes, Slo, StepAggregator, StepMetrics
from assay.records import Completed, Errored, JudgedBy, RequestRecord
from assay.reports import (
    SUMMARY_COLUMNS,
    Report,
    StepReport,
    assess_validity,
    build_report,
    collect_environment,
    summary_row,
    write_report,
)
from assay.spec.run import RunEcho

MS = 1_000_000
STARTED = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
FINISHED = datetime(2026, 12, 2, 9, 1, tzinfo=UTC)


def _completed(i: int, send_ms: int) -> RequestRecord[GenerationResponse]:
    first = (send_ms + 80) * MS
    times = tuple(first + k * 10 * MS for k in range(8))
    response = GenerationResponse(
        request_id=f"r{i}",
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text="tokens " * 8),
        finish_reason="length",
        usage=Usage(prompt_tokens=32, completion_tokens=8, total_tokens=40),
        content_chunks=8,
        streamed_tokens=8,
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(
            send_ns=send_ms * MS,
            first_token_ns=first,
            last_token_ns=times[-1],
            end_ns=times[-1] + MS,
            chunk_times_ns=times,
            chunk_tokens=(1,) * 8,
        ),
    )
    return RequestRecord[GenerationResponse](
        request_id=f"r{i}",
        targeted_start_ns=send_ms * MS,
        dispatched_ns=send_ms * MS,
        finished_ns=times[-1] + MS,
        outcome=Completed(response=response),
    )


def _errored(
    i: int, send_ms: int, code: DiagnosticCode, message: str
) -> RequestRecord[GenerationResponse]:
    return RequestRecord[GenerationResponse](
        request_id=f"e{i}",
        targeted_start_ns=send_ms * MS,
        dispatched_ns=send_ms * MS,
        finished_ns=(send_ms + 20) * MS,
        outcome=Errored(
            diagnostic=UnusableResponse(code=code, message=message), judged_by=JudgedBy.validator
        ),
    )


def _step_metrics(completed: int, errored: int, slo: Slo | None = None) -> StepMetrics:
    aggregator = StepAggregator(slo=slo)
    for i in range(completed):
        aggregator.add(_completed(i, i * 100))
    for i in range(errored):
        aggregator.add(_errored(i, i * 100 + 50, DiagnosticCode.http_status, "HTTP 503: busy"))
    return aggregator.snapshot()


def _report(completed: int = 10, errored: int = 0) -> Report:
    steps = [
        StepReport.of(0, "synchronous", _step_metrics(completed, 0)),
        StepReport.of(
            1, "constant", _step_metrics(completed, errored, Slo(ttft_ms=100)), requested_rate=10.0
        ),
    ]
    return build_report(
        run_config=RunEcho(target="http://127.0.0.1:8000", profile="sweep"),
        steps=steps,
        started_at=STARTED,
        finished_at=FINISHED,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
    )


def test_report_round_trips_through_json() -> None:
    report = _report(errored=2)
    restored = Report.model_validate_json(report.model_dump_json())
    assert restored == report
    assert restored.schema_version == "assay.report/1"


def test_report_json_on_disk_has_schema_version_steps_and_validity(tmp_path: Path) -> None:
    json_path, _ = write_report(_report(errored=5), tmp_path / "run")
    data = json.loads(json_path.read_text())
    assert data["schema_version"] == "assay.report/1"
    assert [step["profile"] for step in data["steps"]] == ["synchronous", "constant"]
    assert data["steps"][1]["metrics"]["errors_by_code"]["http_status"]["count"] == 5
    assert data["validity"]["valid"] is False
    assert Report.model_validate(data).totals.outcomes.errored == 5


def test_summary_csv_has_the_header_and_one_row_per_step(tmp_path: Path) -> None:
    _, csv_path = write_report(_report(errored=1), tmp_path)
    with csv_path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert tuple(rows[0]) == SUMMARY_COLUMNS
    assert len(rows) == 3
    second = dict(zip(SUMMARY_COLUMNS, rows[2], strict=True))
    assert second["step"] == "1"
    assert second["profile"] == "constant"
    assert second["requested_rate"] == "10.0"
    assert (second["dispatched"], second["completed"], second["errored"]) == ("11", "10", "1")
    assert float(second["ttft_p50_ms"]) == pytest.approx(80.0, rel=0.01)
    assert float(second["itl_p99_ms"]) == pytest.approx(10.0, rel=0.01)
    assert second["goodput_fraction"] != ""
    first = dict(zip(SUMMARY_COLUMNS, rows[1], strict=True))
    assert first["goodput_req_per_s"] == ""  # no SLO in the synchronous step
    assert first["output_token_sources"] == "server usage 10"


def test_totals_sum_outcomes_and_errors_over_steps() -> None:
    report = _report(completed=4, errored=2)
    totals = report.totals
    assert totals.outcomes == Outcomes(dispatched=10, completed=8, errored=2)
    assert totals.errors_by_code[DiagnosticCode.http_status].count == 2
    assert totals.usable_output_tokens == 64
    assert totals.error_rate == pytest.approx(0.2)


def test_run_with_too_many_errors_is_invalid_with_the_reason() -> None:
    report = _report(completed=10, errored=5)
    assert report.validity.valid is False
    assert report.validity.reasons == (
        "error rate 20.0 % exceeds the allowed 5.0 % (5 errored of 25 finished; beyond "
        "chance: a server erring at exactly 5.0 % gives 5 or more errors in 25 requests in "
        "0.7 % of runs)",
    )


def test_a_run_with_no_completed_request_is_invalid() -> None:
    verdict = assess_validity(Outcomes(dispatched=3, cancelled=3), max_error_rate=1.0)
    assert verdict.valid is False
    assert verdict.reasons == ("no request completed (3 dispatched)",)


def test_a_run_at_the_error_rate_limit_is_valid() -> None:
    verdict = assess_validity(Outcomes(dispatched=20, completed=19, errored=1), max_error_rate=0.05)
    assert verdict.valid is True
    assert verdict.reasons == ()


def test_environment_hashes_the_hostname() -> None:
    environment = collect_environment()
    assert environment.hostname_sha256 is not None
    assert len(environment.hostname_sha256) == 16
    assert environment.cpu_count is None or environment.cpu_count >= 1


def test_summary_csv_names_rates_by_what_they_count_and_says_why_a_step_stopped(
    tmp_path: Path,
) -> None:
    # Issue 10 item 14: "achieved_rate" was the dispatched rate, easy to read as the served one.
    report = _report(errored=1)
    stopped = report.steps[1].model_copy(update={"stopped_by": StopReason.max_seconds})
    report = report.model_copy(update={"steps": (report.steps[0], stopped)})
    _, csv_path = write_report(report, tmp_path)
    with csv_path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert "achieved_rate" not in SUMMARY_COLUMNS
    assert (rows[0]["stopped_by"], rows[1]["stopped_by"]) == ("", "max_seconds")
    assert rows[1]["not_streamed"] == "0"
    assert rows[1]["itl_coalesced_gaps"] == "0"


def test_summary_row_keys_are_the_summary_columns_in_order() -> None:
    # Both come from one list in reports/files.py; a column added to one is in the other.
    for step in _report(errored=1).steps:
        assert tuple(summary_row(step)) == SUMMARY_COLUMNS


def test_summary_csv_and_report_json_carry_the_figures_peers_print(tmp_path: Path) -> None:
    # Ten answers sent 100 ms apart: 32 prompt and 8 output tokens each, first token 80 ms
    # after the send, then one every 10 ms, the end 1 ms after the last: the step lasts 1.051 s.
    json_path, csv_path = write_report(_report(errored=0), tmp_path)
    with csv_path.open(newline="") as handle:
        row = list(csv.DictReader(handle))[1]
    assert float(row["usable_input_tok_per_s"]) == pytest.approx(320 / 1.051, abs=1e-3)
    assert float(row["usable_total_tok_per_s"]) == pytest.approx(400 / 1.051, abs=1e-3)
    # Seconds from the clock's zero: 9 whole answers and 2 tokens of the tenth in the first.
    assert row["peak_output_tok_per_s"] == "74"
    assert float(row["ttst_p50_ms"]) == pytest.approx(10.0, rel=0.01)
    assert float(row["decode_p99_ms"]) == pytest.approx(71.0, rel=0.01)
    assert float(row["per_user_output_tok_per_s_min"]) == pytest.approx(7 / 0.071, abs=1e-3)
    step = json.loads(json_path.read_text())["steps"][1]["metrics"]
    assert step["throughput"]["usable_input_tokens"] == 320
    assert step["throughput"]["peak_output_tokens_per_s"] == 74
    assert step["throughput"]["peak_output_at_s"] == 0.0
    assert step["throughput"]["per_user_output_tokens_per_s"]["count"] == 10
    assert step["latency"]["ttst_ms"]["count"] == 10
    assert step["latency"]["decode_ms"]["count"] == 10


def test_summary_csv_leaves_unmeasured_new_figures_empty(tmp_path: Path) -> None:
    report = _report(errored=0)
    bare = report.steps[0].model_copy(update={"metrics": StepAggregator().snapshot()})
    _, csv_path = write_report(report.model_copy(update={"steps": (bare,)}), tmp_path)
    with csv_path.open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    for column in (
        "usable_input_tok_per_s",
        "usable_total_tok_per_s",
        "peak_output_tok_per_s",
        "ttst_p50_ms",
        "decode_p50_ms",
        "per_user_output_tok_per_s_p50",
    ):
        assert row[column] == "", column
