"""Re-apply a validator chain to a finished run's stored responses, without sending any load.

Completed requests and requests errored at the content stage (their full response is kept as
evidence) are judged again; transport and protocol errors and cancellations stay as they were,
since no validator can make a missing answer usable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError
from returns.result import Failure, Success

from assay.benchmark.validation import ChainSpec
from assay.core import Endpoint, GenerationResponse, Stage, outcome
from assay.errors import DataError
from assay.metrics import Slo, StepAggregator, TimeWindow
from assay.records import Cancelled, Completed, Errored, RequestRecord
from assay.records.jsonl import RecordWriter, read_records
from assay.reports import Report, StepReport, build_report, write_report
from assay.reports.validity import DEFAULT_MAX_NOT_SENT_RATE
from assay.validators import Validator

REVALIDATED_DIR = "revalidated"


@dataclass(frozen=True, slots=True)
class RevalidationOutcome:
    """The new report, where it was written, and how many verdicts changed."""

    report: Report
    output_dir: Path
    newly_errored: int
    newly_completed: int


def rejudge(
    record: RequestRecord[GenerationResponse], validate: Validator[GenerationResponse]
) -> RequestRecord[GenerationResponse]:
    """The record with its outcome decided again by `validate`, where a response allows it."""
    candidate = _judgeable_response(record)
    if candidate is None:
        return record
    verdict: Completed[GenerationResponse] | Errored
    match outcome(validate(candidate)):
        case Success(usable):
            verdict = Completed[GenerationResponse](response=usable)
        case Failure(problem):
            verdict = Errored(diagnostic=problem)
    return record.model_copy(update={"outcome": verdict})


def _judgeable_response(record: RequestRecord[GenerationResponse]) -> GenerationResponse | None:
    match record.outcome:
        case Completed(response=response):
            return response
        case Errored(diagnostic=diagnostic) if diagnostic.stage is Stage.content:
            return diagnostic.evidence.partial
        case Errored() | Cancelled():
            return None


def revalidate(
    run_dir: Path,
    *,
    extra: tuple[str, ...] = (),
    strict: bool = False,
    use_defaults: bool = True,
    max_error_rate: float | None = None,
) -> RevalidationOutcome:
    """Judge a run's records again and write report.json, summary.csv and records.jsonl into
    `run_dir/revalidated/`; the original files are left untouched."""
    old = _read_report(run_dir / "report.json")
    endpoint = Endpoint(str(old.run_config.get("endpoint", Endpoint.chat.value)))
    spec = ChainSpec(endpoint, strict=strict, extra=extra, use_defaults=use_defaults)
    validate = spec()
    slo_keys = old.run_config.get("slo")
    slo = Slo.model_validate(slo_keys) if isinstance(slo_keys, dict) and slo_keys else None
    aggregators = {step.index: StepAggregator(slo=slo, window=_window(step)) for step in old.steps}
    out_dir = run_dir / REVALIDATED_DIR
    newly_errored = newly_completed = 0
    with RecordWriter(out_dir / "records.jsonl") as writer:
        for record in read_records(run_dir / "records.jsonl"):
            judged = rejudge(record, validate)
            was, now = record.outcome.status, judged.outcome.status
            newly_errored += was == "completed" and now == "errored"
            newly_completed += was == "errored" and now == "completed"
            writer.write(judged)
            aggregator = aggregators.get(judged.step)
            if aggregator is None:
                raise DataError(f"records.jsonl names step {judged.step}, not in report.json")
            aggregator.add(judged)
    steps = [
        StepReport.of(
            step.index,
            step.profile,
            aggregators[step.index].snapshot(),
            requested_rate=step.requested_rate,
            requested_concurrency=step.requested_concurrency,
            stopped_by=step.stopped_by,
            # What never became a record is not the validators' to change.
            scheduled=step.scheduled,
            not_sent=step.not_sent,
            lost=step.lost,
            lost_processes=step.lost_processes,
        )
        for step in old.steps
    ]
    threshold = max_error_rate
    if threshold is None:
        stored = old.run_config.get("max_error_rate")
        threshold = float(stored) if isinstance(stored, int | float) else 0.05
    report = build_report(
        run_config={
            **old.run_config,
            "validator_chain": spec.describe(),
            "revalidated_at": datetime.now(UTC).isoformat(),
            "max_error_rate": threshold,
        },
        steps=steps,
        started_at=old.started_at,
        finished_at=old.finished_at,
        max_error_rate=threshold,
        max_not_sent_rate=_stored_rate(old, "max_not_sent_rate", DEFAULT_MAX_NOT_SENT_RATE),
        environment=old.environment,
    )
    write_report(report, out_dir)
    return RevalidationOutcome(report, out_dir, newly_errored, newly_completed)


def _stored_rate(report: Report, key: str, default: float) -> float:
    stored = report.run_config.get(key)
    return float(stored) if isinstance(stored, int | float) else default


def _read_report(path: Path) -> Report:
    try:
        return Report.model_validate_json(path.read_bytes())
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    except ValidationError as error:
        raise DataError(f"{path} is not an assay report ({error.error_count()} problems)") from None


def _window(step: StepReport) -> TimeWindow | None:
    metrics = step.metrics
    if metrics.excluded and metrics.start_ns is not None and metrics.end_ns is not None:
        return TimeWindow(start_ns=metrics.start_ns, end_ns=metrics.end_ns)
    return None
