"""Writing a report to disk: the full report.json and a one-row-per-step summary.csv."""

from __future__ import annotations

import csv
from pathlib import Path

from assay.metrics.sketch import Distribution
from assay.reports.report import Report, StepReport

REPORT_FILE = "report.json"
SUMMARY_FILE = "summary.csv"

SUMMARY_COLUMNS: tuple[str, ...] = (
    "step",
    "profile",
    "requested_rate",
    "requested_concurrency",
    "stopped_by",
    "duration_s",
    "dispatched",
    "completed",
    "errored",
    "cancelled",
    "scheduled",
    "not_sent",
    "lost",
    "excluded",
    "error_rate",
    "usable_req_per_s",
    "attempted_req_per_s",
    "usable_output_tok_per_s",
    "attempted_output_tok_per_s",
    "goodput_req_per_s",
    "goodput_fraction",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "itl_p50_ms",
    "itl_p99_ms",
    "itl_coalesced_gaps",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "not_streamed",
    "e2e_from_target_p99_ms",
    "dispatch_lag_p99_ms",
    "mean_concurrency",
    "max_concurrency",
    "output_token_sources",
)

Cell = str | int | float | None


def summary_row(step: StepReport) -> dict[str, Cell]:
    """The headline figures of one step, keyed by `SUMMARY_COLUMNS`; empty where not measured.

    Request rates are `attempted_req_per_s` (everything dispatched) and `usable_req_per_s`
    (completed only); there is no column that could be read as either.
    """
    m = step.metrics
    latency = m.latency
    throughput = m.throughput

    def p(dist: Distribution | None, name: str) -> float | None:
        return None if dist is None else round(float(getattr(dist, name)), 3)

    return {
        "step": step.index,
        "profile": step.profile,
        "requested_rate": step.requested_rate,
        "requested_concurrency": step.requested_concurrency,
        "stopped_by": None if step.stopped_by is None else step.stopped_by.value,
        "duration_s": round(throughput.duration_s, 3),
        "dispatched": m.outcomes.dispatched,
        "completed": m.outcomes.completed,
        "errored": m.outcomes.errored,
        "cancelled": m.outcomes.cancelled,
        "scheduled": step.scheduled,
        "not_sent": step.not_sent,
        "lost": step.lost,
        "excluded": m.excluded,
        "error_rate": round(m.error_rate, 6),
        "usable_req_per_s": round(throughput.usable_requests_per_s, 3),
        "attempted_req_per_s": round(throughput.attempted_requests_per_s, 3),
        "usable_output_tok_per_s": round(throughput.usable_output_tokens_per_s, 3),
        "attempted_output_tok_per_s": round(throughput.attempted_output_tokens_per_s, 3),
        "goodput_req_per_s": None if m.goodput is None else round(m.goodput.requests_per_s, 3),
        "goodput_fraction": None if m.goodput is None else round(m.goodput.fraction, 6),
        "ttft_p50_ms": p(latency.ttft_ms, "p50"),
        "ttft_p99_ms": p(latency.ttft_ms, "p99"),
        "itl_p50_ms": p(latency.itl_ms, "p50"),
        "itl_p99_ms": p(latency.itl_ms, "p99"),
        "itl_coalesced_gaps": latency.itl_coalesced_gaps,
        "tpot_p50_ms": p(latency.tpot_ms, "p50"),
        "tpot_p99_ms": p(latency.tpot_ms, "p99"),
        "e2e_p50_ms": p(latency.e2e_ms, "p50"),
        "e2e_p99_ms": p(latency.e2e_ms, "p99"),
        "not_streamed": latency.not_streamed,
        "e2e_from_target_p99_ms": p(latency.e2e_from_target_ms, "p99"),
        "dispatch_lag_p99_ms": p(latency.dispatch_lag_ms, "p99"),
        "mean_concurrency": round(m.concurrency.mean, 3),
        "max_concurrency": m.concurrency.max,
        "output_token_sources": m.tokens.output_source_note,
    }


def write_report(report: Report, out_dir: Path) -> tuple[Path, Path]:
    """Write report.json and summary.csv into `out_dir` (created if needed); return both paths.

    >>> import tempfile, pathlib
    >>> from datetime import UTC, datetime
    >>> from assay.metrics import StepAggregator
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> report = build_report(run_config={"target": "mock"}, started_at=now, finished_at=now,
    ...     steps=[StepReport.of(0, "synchronous", StepAggregator().snapshot())],
    ...     max_error_rate=0.05)
    >>> json_path, csv_path = write_report(report, pathlib.Path(tempfile.mkdtemp()))
    >>> csv_path.read_text().splitlines()[0].split(",")[:3]
    ['step', 'profile', 'requested_rate']
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / REPORT_FILE
    json_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    csv_path = out_dir / SUMMARY_FILE
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for step in report.steps:
            writer.writerow(summary_row(step))
    return json_path, csv_path
