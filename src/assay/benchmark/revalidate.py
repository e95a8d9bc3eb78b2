"""Re-apply a validator chain to a finished run's stored responses, without sending any load.

Each record's answer is replayed into `judge`, the function `assay run` decided it with:
completed requests and validators' verdicts (the judged response is kept as evidence) are
judged again; a transport or handler failure is replayed as the same failure, so it stays what
it was whatever the validators (no validator can make a missing answer usable). Cancellations
and assay's own internal errors are kept as they were.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from returns.result import Failure, Result, Success

from assay.benchmark.chain_spec import ChainSpec
from assay.benchmark.shard_sink import add_to_groups, model_snapshots, turn_snapshots
from assay.core import GenerationResponse, UnusableResponse
from assay.errors import DataError
from assay.metrics import Slo, StepAggregator, Timeline, TimeWindow
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.records.jsonl import RecordWriter, read_records
from assay.reports import Report, StepReport, build_report, write_report
from assay.reports.definitions import with_found
from assay.reports.html import write_html
from assay.reports.loader import load_report
from assay.reports.readback import read_back
from assay.run_folder import RECORDS_FILE, fresh_folder
from assay.run_folder import REVALIDATED_DIR as REVALIDATED_DIR
from assay.validators import Validator
from assay.worker import judge


@dataclass(frozen=True, slots=True)
class RevalidationOutcome:
    """The new report, where it was written, and how many verdicts changed."""

    report: Report
    output_dir: Path
    newly_errored: int
    newly_completed: int
    recoded: int = 0
    # The errored answers now under another code, by (code before, code now).
    recodings: Counter[tuple[str, str]] = field(default_factory=Counter)


def rejudge(
    record: RequestRecord[GenerationResponse], validate: Validator[GenerationResponse]
) -> RequestRecord[GenerationResponse]:
    """The record with its outcome decided again by `judge` on the answer the record keeps."""
    answer = replayed_answer(record)
    if answer is None:
        return record
    return record.model_copy(update={"outcome": judge(answer, validate)})


def replayed_answer(
    record: RequestRecord[GenerationResponse],
) -> Result[GenerationResponse, UnusableResponse] | None:
    """What the resolver gave for this record, as far as the record shows; `None` when nothing
    can be judged again (a cancellation, an internal error, a verdict without its response).

    A validator's verdict replays the response it judged (the validators decide again); a
    transport or handler failure replays that failure, which `judge` keeps as it is.
    """
    match record.outcome:
        case Completed(response=response):
            return Success(response)
        case Errored(diagnostic=diagnostic, judged_by=JudgedBy.validator):
            partial = diagnostic.evidence.partial
            if partial is None:
                return None
            status = diagnostic.evidence.http_status
            if partial.http_status is None and status is not None:
                # Records written before responses kept their status had it in the evidence.
                partial = partial.model_copy(update={"http_status": status})
            return Success(partial)
        case Errored(diagnostic=diagnostic, judged_by=JudgedBy.transport | JudgedBy.handler):
            return Failure(diagnostic)
        case Errored() | Cancelled():
            return None


def revalidate(
    run_dir: Path,
    *,
    extra: tuple[str, ...] = (),
    strict: bool = False,
    use_defaults: bool = True,
    allow_missing_done: bool = False,
    max_error_rate: float | None = None,
) -> RevalidationOutcome:
    """Judge a run's records again and write report.json, summary.csv and records.jsonl into
    `run_dir/revalidated/` (or `revalidated-2/`, ... when taken); the run's files stay as they
    were."""
    old = load_report(run_dir)
    ran = old.run_config
    spec = ChainSpec(
        ran.endpoint,
        strict=strict,
        extra=extra,
        use_defaults=use_defaults,
        allow_missing_done=allow_missing_done,
    )
    validate = spec()
    slo = Slo.model_validate(ran.slo) if ran.slo else None
    steps_by_index = {step.index: step for step in old.steps}

    def fresh(step: int) -> StepAggregator:
        ran = steps_by_index[step]
        return StepAggregator(slo=slo, window=_window(ran), origin_ns=_origin(ran))

    aggregators = {step.index: fresh(step.index) for step in old.steps}
    # Session turns judged again by turn index, for the steps that ran sessions, and records
    # by the model they named, for a run that sent several (as the run's own sinks aggregate
    # them).
    turns: dict[int, dict[int, StepAggregator]] = {}
    models: dict[int, dict[str, StepAggregator]] = {}

    timelines = {
        step.index: Timeline(origin_ns=step.timeline.origin_ns)
        for step in old.steps
        if step.timeline is not None
    }
    # A fresh folder each time (revalidated-2, ...): an earlier revalidation is never overwritten.
    out_dir = fresh_folder(run_dir / REVALIDATED_DIR)
    newly_errored = newly_completed = 0
    recodings: Counter[tuple[str, str]] = Counter()
    with RecordWriter(out_dir / RECORDS_FILE) as writer:
        for record in read_records(run_dir / RECORDS_FILE):
            judged = rejudge(record, validate)
            was, now = record.outcome, judged.outcome
            newly_errored += was.status == "completed" and now.status == "errored"
            newly_completed += was.status == "errored" and now.status == "completed"
            if (
                isinstance(was, Errored)
                and isinstance(now, Errored)
                and was.diagnostic.code != now.diagnostic.code
            ):
                recodings[(str(was.diagnostic.code), str(now.diagnostic.code))] += 1
            writer.write(judged)
            aggregator = aggregators.get(judged.step)
            if aggregator is None:
                raise DataError(f"records.jsonl names step {judged.step}, not in report.json")
            aggregator.add(judged)
            timeline = timelines.get(judged.step)
            if timeline is not None:
                timeline.add(judged)
            add_to_groups(
                turns.setdefault(judged.step, {}),
                models.setdefault(judged.step, {}),
                judged,
                partial(fresh, judged.step),
            )
    steps = [
        # What never became a record (scheduled, not sent, lost, how the sessions went) is not
        # the validators' to change; the figures, the turns' and models' included, are judged
        # again.
        step.judged_again(
            aggregators[step.index].snapshot(),
            timeline=timelines[step.index].snapshot() if step.index in timelines else None,
            turns=turn_snapshots(turns.get(step.index)),
            models=model_snapshots(models.get(step.index, {})),
        )
        for step in old.steps
    ]
    threshold = ran.max_error_rate if max_error_rate is None else max_error_rate
    report = build_report(
        run_config=ran.revalidated(
            validator_chain=spec.describe(),
            at=datetime.now(UTC).isoformat(),
            max_error_rate=threshold,
        ),
        steps=steps,
        started_at=old.started_at,
        finished_at=old.finished_at,
        max_error_rate=threshold,
        max_not_sent_rate=ran.max_not_sent_rate,
        environment=old.environment,
        incomplete=old.incomplete,  # a crashed run judged again is still a crashed run
    )
    # records.jsonl read back once: the peers' figures and the page's latency samples.
    found = read_back(out_dir / RECORDS_FILE, report)
    report = with_found(report, found.definitions)
    write_report(report, out_dir)
    write_html(out_dir, report, new=True, samples=found.samples)
    return RevalidationOutcome(
        report,
        out_dir,
        newly_errored,
        newly_completed,
        recoded=sum(recodings.values()),
        recodings=recodings,
    )


def _window(step: StepReport) -> TimeWindow | None:
    metrics = step.metrics
    if metrics.excluded and metrics.start_ns is not None and metrics.end_ns is not None:
        return TimeWindow(start_ns=metrics.start_ns, end_ns=metrics.end_ns)
    return None


def _origin(step: StepReport) -> int | None:
    """The step's start, where its peak output rate's one-second buckets began."""
    if step.timeline is not None:
        return step.timeline.origin_ns
    return step.metrics.start_ns
