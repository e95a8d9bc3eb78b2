"""Writing a report to disk: the full report.json and a one-row-per-step summary.csv."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeAlias

from assay.file_writes import write_new
from assay.metrics.sketch import Distribution
from assay.reports.client_bound import with_client_verdicts
from assay.reports.cost import price_of, with_costs
from assay.reports.definitions import with_definitions
from assay.reports.models import has_models, model_steps
from assay.reports.report import Report, StepReport
from assay.run_folder import RECORDS_FILE, REPORT_FILE, SUMMARY_FILE

Cell: TypeAlias = str | int | float | None
Column: TypeAlias = Callable[[StepReport], Cell]
"""How one summary.csv cell is read from a step."""


def _ms(distribution: Callable[[StepReport], Distribution | None], percentile: str) -> Column:
    """A latency percentile in ms, rounded to µs (or a rate to 3 decimals); empty where it was
    not measured."""

    def cell(step: StepReport) -> Cell:
        measured = distribution(step)
        return None if measured is None else round(float(getattr(measured, percentile)), 3)

    return cell


def _rounded(value: float | None) -> Cell:
    """A rate rounded to 3 decimals; empty where it was not measured."""
    return None if value is None else round(value, 3)


# The one list of summary.csv's columns, in order, each with how its cell is read from a step:
# `SUMMARY_COLUMNS` and `summary_row` both come from it. Request rates are
# `attempted_req_per_s` (everything dispatched) and `usable_req_per_s` (completed only);
# there is no column that could be read as either.
_SUMMARY: Final[tuple[tuple[str, Column], ...]] = (
    ("step", lambda s: s.index),
    ("profile", lambda s: s.profile),
    ("requested_rate", lambda s: s.requested_rate),
    ("requested_concurrency", lambda s: s.requested_concurrency),
    ("stopped_by", lambda s: None if s.stopped_by is None else s.stopped_by.value),
    ("duration_s", lambda s: round(s.metrics.throughput.duration_s, 3)),
    ("dispatched", lambda s: s.metrics.outcomes.dispatched),
    ("completed", lambda s: s.metrics.outcomes.completed),
    ("errored", lambda s: s.metrics.outcomes.errored),
    ("cancelled", lambda s: s.metrics.outcomes.cancelled),
    ("scheduled", lambda s: s.scheduled),
    ("not_sent", lambda s: s.not_sent),
    ("lost", lambda s: s.lost),
    ("excluded", lambda s: s.metrics.excluded),
    ("error_rate", lambda s: round(s.metrics.error_rate, 6)),
    ("usable_req_per_s", lambda s: round(s.metrics.throughput.usable_requests_per_s, 3)),
    ("attempted_req_per_s", lambda s: round(s.metrics.throughput.attempted_requests_per_s, 3)),
    (
        "usable_output_tok_per_s",
        lambda s: round(s.metrics.throughput.usable_output_tokens_per_s, 3),
    ),
    (
        "attempted_output_tok_per_s",
        lambda s: round(s.metrics.throughput.attempted_output_tokens_per_s, 3),
    ),
    ("usable_input_tok_per_s", lambda s: _rounded(s.metrics.throughput.usable_input_tokens_per_s)),
    ("usable_total_tok_per_s", lambda s: _rounded(s.metrics.throughput.usable_total_tokens_per_s)),
    ("peak_output_tok_per_s", lambda s: s.metrics.throughput.peak_output_tokens_per_s),
    (
        "goodput_req_per_s",
        lambda s: None if s.metrics.goodput is None else round(s.metrics.goodput.requests_per_s, 3),
    ),
    (
        "goodput_fraction",
        lambda s: None if s.metrics.goodput is None else round(s.metrics.goodput.fraction, 6),
    ),
    ("ttft_p50_ms", _ms(lambda s: s.metrics.latency.ttft_ms, "p50")),
    ("ttft_p99_ms", _ms(lambda s: s.metrics.latency.ttft_ms, "p99")),
    ("itl_p50_ms", _ms(lambda s: s.metrics.latency.itl_ms, "p50")),
    ("itl_p99_ms", _ms(lambda s: s.metrics.latency.itl_ms, "p99")),
    ("itl_coalesced_gaps", lambda s: s.metrics.latency.itl_coalesced_gaps),
    ("tpot_p50_ms", _ms(lambda s: s.metrics.latency.tpot_ms, "p50")),
    ("tpot_p99_ms", _ms(lambda s: s.metrics.latency.tpot_ms, "p99")),
    ("ttst_p50_ms", _ms(lambda s: s.metrics.latency.ttst_ms, "p50")),
    ("ttst_p99_ms", _ms(lambda s: s.metrics.latency.ttst_ms, "p99")),
    ("decode_p50_ms", _ms(lambda s: s.metrics.latency.decode_ms, "p50")),
    ("decode_p99_ms", _ms(lambda s: s.metrics.latency.decode_ms, "p99")),
    (
        "per_user_output_tok_per_s_p50",
        _ms(lambda s: s.metrics.throughput.per_user_output_tokens_per_s, "p50"),
    ),
    (
        "per_user_output_tok_per_s_min",
        _ms(lambda s: s.metrics.throughput.per_user_output_tokens_per_s, "min"),
    ),
    ("e2e_p50_ms", _ms(lambda s: s.metrics.latency.e2e_ms, "p50")),
    ("e2e_p99_ms", _ms(lambda s: s.metrics.latency.e2e_ms, "p99")),
    ("not_streamed", lambda s: s.metrics.latency.not_streamed),
    ("e2e_from_target_p99_ms", _ms(lambda s: s.metrics.latency.e2e_from_target_ms, "p99")),
    ("dispatch_lag_p99_ms", _ms(lambda s: s.metrics.latency.dispatch_lag_ms, "p99")),
    ("mean_concurrency", lambda s: round(s.metrics.concurrency.mean, 3)),
    ("max_concurrency", lambda s: s.metrics.concurrency.max),
    ("output_token_sources", lambda s: s.metrics.tokens.output_source_note),
)

SUMMARY_COLUMNS: Final[tuple[str, ...]] = tuple(name for name, _ in _SUMMARY)
"""summary.csv's columns, in order."""


def summary_row(step: StepReport) -> dict[str, Cell]:
    """The headline figures of one step, keyed by `SUMMARY_COLUMNS`; empty where not measured."""
    return {name: cell(step) for name, cell in _SUMMARY}


# What a spreadsheet reads as the start of a formula in a cell (OWASP, "CSV Injection").
_FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")


def _defused(cell: Cell) -> Cell:
    """A text cell as summary.csv writes it: one a spreadsheet would run as a formula (a model
    named `=HYPERLINK(...)`) starts with a `'`, so it is shown as text; numbers stay numbers.

    >>> _defused("=1+2"), _defused("@SUM(1)"), _defused("lora-a"), _defused(-1.5)
    ("'=1+2", "'@SUM(1)", 'lora-a', -1.5)
    """
    return "'" + cell if isinstance(cell, str) and cell.startswith(_FORMULA_STARTS) else cell


def summary_csv(report: Report) -> str:
    """summary.csv's text: a row per step; a run that sent several models has a `model` column
    (second), empty on a step's row, and after each step's row a row per model of its mix.
    Text cells are defused (`_defused`)."""
    mixed = has_models(report)
    columns = (SUMMARY_COLUMNS[0], "model", *SUMMARY_COLUMNS[1:]) if mixed else SUMMARY_COLUMNS
    rows: list[dict[str, Cell]] = [dict(zip(columns, columns, strict=True))]  # the header
    for step in report.steps:
        rows.append(summary_row(step))
        rows += ({**summary_row(seen), "model": name} for name, seen in model_steps(step))
    # Each line is written alone by a writer ending it in "\r\n", so that a cell holding a bare CR
    # is quoted as one holding "\n" is (a reader would end the row there), then ends in "\n".
    line = io.StringIO()
    writer = csv.DictWriter(line, fieldnames=columns, lineterminator="\r\n")

    def written(row: dict[str, Cell]) -> str:
        line.seek(0)
        line.truncate()
        writer.writerow({column: _defused(cell) for column, cell in row.items()})
        return line.getvalue().removesuffix("\r\n") + "\n"

    return "".join(map(written, rows))


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
    if all(step.definitions is None for step in report.steps):  # not read yet by the caller
        report = with_definitions(report, out_dir / RECORDS_FILE)  # peers' figures, when recorded
    report = with_costs(report, price_of(report))  # cost and energy per unit, when known
    report = with_client_verdicts(report)  # CLIENT-BOUND steps, said in report.json
    # Both are new files of the run: created exclusively, never over a file already there.
    json_path = out_dir / REPORT_FILE
    write_new(json_path, report.model_dump_json(indent=2) + "\n")
    csv_path = out_dir / SUMMARY_FILE
    write_new(csv_path, summary_csv(report))
    return json_path, csv_path
