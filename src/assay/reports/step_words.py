"""Words for a step: the load it offered, what stopped it, what its cancelled requests were.

A step that stops on a constraint cancels the requests still in flight; those are cut by the
run, not failed by the server, and the report must say so where it shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from assay.reports.report import Report, StepReport
from assay.spec.constraints import Constraints, StopReason
from assay.spec.load import load_words
from assay.spec.load_words import LoadWords, rate_text, rate_words, seconds_text

MIN_RATE_WINDOW_S: Final = 1.0
"""Below this step duration a request rate is not shown: a handful of requests over a few
milliseconds gives a number (e.g. 738 req/s over 0.01 s) that describes nothing."""


def constraint(report: Report, limit: Callable[[Constraints], float | None]) -> float | None:
    """A per-step constraint the run used, from the report's config; None when the report
    records no constraints.

    >>> from datetime import UTC, datetime
    >>> from assay.reports.report import build_report
    >>> from assay.spec.run import RunEcho
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> echo = RunEcho.model_validate({"constraints": {"max_seconds": 10.0}})
    >>> report = build_report(run_config=echo, steps=[], started_at=now, finished_at=now,
    ...                       max_error_rate=0.05)
    >>> constraint(report, lambda c: c.max_seconds), constraint(report, lambda c: c.max_errors)
    (10.0, None)
    """
    constraints = report.run_config.constraints
    return None if constraints is None else limit(constraints)


def stop_phrase(step: StepReport, report: Report) -> str:
    """Why the step ended, with the limit that ended it, e.g. "at the 10 s limit (--max-seconds)".

    >>> from datetime import UTC, datetime
    >>> from assay.metrics import StepAggregator
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> from assay.spec.run import RunEcho
    >>> step = StepReport.of(0, "throughput", StepAggregator().snapshot(),
    ...                      stopped_by=StopReason.max_seconds)
    >>> echo = RunEcho.model_validate({"constraints": {"max_seconds": 10.0}})
    >>> report = build_report(run_config=echo, steps=[step], started_at=now, finished_at=now,
    ...                       max_error_rate=0.05)
    >>> stop_phrase(step, report)
    'stopped at the 10 s limit (--max-seconds)'
    """
    match step.stopped_by:
        case StopReason.max_seconds:
            limit = constraint(report, lambda c: c.max_seconds)
            at = f"the {limit:g} s limit" if limit is not None else "its time limit"
            return f"stopped at {at} (--max-seconds)"
        case StopReason.max_requests:
            limit = constraint(report, lambda c: c.max_requests)
            count = f"{limit:g} requests" if limit is not None else "its request budget"
            if step.sessions is not None and limit is not None:
                # With --multi-turn the budget counts sessions; each sends several requests.
                sent = step.sessions.turns_sent
                count = f"{limit:g} sessions, {sent} request{'s' if sent != 1 else ''} sent"
                return f"stopped after {count} (--max-requests counts sessions with --multi-turn)"
            return f"stopped after {count} (--max-requests)"
        case StopReason.max_errors:
            limit = constraint(report, lambda c: c.max_errors)
            count = f"{limit:g} errored requests" if limit is not None else "its error budget"
            return f"stopped after {count} (--max-errors)"
        case StopReason.stop_error_rate:
            rate = constraint(report, lambda c: c.stop_error_rate)
            window = constraint(report, lambda c: c.error_rate_window)
            over = f" over the last {window:g} finished requests" if window is not None else ""
            reached = f" reached {rate * 100:g} %" if rate is not None else " reached its limit"
            return f"stopped: the error rate{over}{reached} (--stop-error-rate)"
        case StopReason.stop_signal:
            return "stopped by an interrupt (Ctrl-C)"
        case StopReason.data_exhausted:
            rows = "" if step.data_rows is None else f" after {step.data_rows} rows"
            return f"data exhausted{rows}: each row was sent once (--data-cycle reuses them)"
        case None if report.incomplete is not None:
            return f"its records end where the run stopped ({report.incomplete.state})"
        case None:
            return "ran to the end of its schedule"


def cancelled_phrase(step: StepReport, report: Report) -> str | None:
    """What the step's cancelled requests were, so nobody reads them as failures; None if none.

    >>> from datetime import UTC, datetime
    >>> from assay.metrics import Outcomes, StepAggregator
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> metrics = StepAggregator().snapshot().model_copy(
    ...     update={"outcomes": Outcomes(dispatched=70, completed=6, cancelled=64)})
    >>> from assay.spec.run import RunEcho
    >>> step = StepReport.of(0, "throughput", metrics, stopped_by=StopReason.max_seconds)
    >>> echo = RunEcho.model_validate({"constraints": {"max_seconds": 10.0}})
    >>> report = build_report(run_config=echo, steps=[step], started_at=now, finished_at=now,
    ...                       max_error_rate=0.05)
    >>> print(cancelled_phrase(step, report))
    64 in flight at the 10 s limit were cancelled: cut by the run, not failed by the server
    """
    cancelled = step.metrics.outcomes.cancelled
    if not cancelled:
        return None
    when = "when the step ended"
    match step.stopped_by:
        case StopReason.max_seconds:
            limit = constraint(report, lambda c: c.max_seconds)
            when = f"at the {limit:g} s limit" if limit is not None else "at the time limit"
        case StopReason.stop_signal:
            when = "at the interrupt"
        case StopReason.max_errors | StopReason.stop_error_rate:
            when = "when the error limit stopped the step"
        case StopReason.max_requests | StopReason.data_exhausted | None:
            when = "when the step ended"
    return f"{cancelled} in flight {when} were cancelled: cut by the run, not failed by the server"


def rate_is_meaningful(step: StepReport) -> bool:
    """Whether the step ran long enough for its request rates to describe it."""
    return step.metrics.throughput.duration_s >= MIN_RATE_WINDOW_S


def describe_load(step: StepReport) -> str:
    """The load a step offered: "synchronous", "throughput, up to 64 in flight", "ramp_up,
    linear from 1 to 20 req/s over 10 s", "constant at 20 req/s, burstiness 0.5", ...

    >>> from assay.metrics import StepAggregator
    >>> describe_load(StepReport.of(1, "throughput", StepAggregator().snapshot(),
    ...                             requested_concurrency=64))
    'throughput, up to 64 in flight'
    """
    load, _, _ = _load_words(step)
    if step.burstiness is not None:
        return f"{load}, burstiness {step.burstiness:g} (gamma gaps)"
    return load


def offered(step: StepReport) -> str:
    """The load a step offered, in a table cell: "sync", "4 streams", "max <=64", "12.5/s",
    "1->20/s" (a ramp).

    >>> from assay.metrics import StepAggregator
    >>> offered(StepReport.of(2, "constant", StepAggregator().snapshot(), requested_rate=12.5))
    '12.5/s'
    """
    _, cell, _ = _load_words(step)
    return cell


def step_label(step: StepReport) -> str:
    """A short name for a step on a chart axis: `1 constant 20/s`, `2 concurrent x8`.

    >>> from assay.metrics import StepAggregator
    >>> step_label(StepReport.of(0, "constant", StepAggregator().snapshot(), requested_rate=20))
    '1 constant 20/s'
    >>> step_label(StepReport.of(2, "sweep", StepAggregator().snapshot(), requested_rate=16.6234))
    '3 sweep 16.6/s'
    """
    _, _, label = _load_words(step)
    return f"{step.index + 1} {step.profile}{label}"


def _load_words(step: StepReport) -> LoadWords:
    """The load a step offered in words (`describe_load`), in a table cell (`offered`) and
    after its name on a chart axis (`step_label`): the load's own words (`words()` of each
    profile in `assay.spec.load`), else, for a kind without the figure that names it or a name
    from another version, the rate when there is one, else the name."""
    load = step.load
    if load is not None:
        return load_words(load)
    asked, flight = step.requested_rate, step.requested_concurrency
    if asked is not None:
        return rate_words(step.profile, asked)
    return LoadWords(step.profile, step.profile, "" if flight is None else f" x{flight}")


def bursty_rate_note(step: StepReport) -> str | None:
    """Why a bursty open loop dispatched below its asked rate: gamma gaps of shape F make the
    count of arrivals in T seconds at rate r vary by about 1 / sqrt(F r T) of itself, so a
    short or very bursty run lands off its rate by chance. None for any other step.

    >>> from assay.metrics import StepAggregator
    >>> from assay.spec.load import Constant
    >>> metrics = StepAggregator().snapshot()
    >>> metrics = metrics.model_copy(update={"throughput": metrics.throughput.model_copy(
    ...     update={"attempted_requests_per_s": 7.5, "duration_s": 10.0})})
    >>> note = bursty_rate_note(StepReport.of(0, Constant(rate=10, burstiness=0.1), metrics))
    >>> note.endswith("sends in bursts, so over 10 s the rate varies by about ±32 %")
    True
    >>> print(bursty_rate_note(StepReport.of(0, Constant(rate=10), metrics)))
    None
    """
    shape, asked = step.burstiness, step.requested_rate
    t = step.metrics.throughput
    if shape is None or asked is None or t.duration_s <= 0 or shape <= 0:
        return None
    if t.attempted_requests_per_s >= asked * 0.99:
        return None
    spread = 1 / (shape * asked * t.duration_s) ** 0.5
    return (
        f"below the asked {rate_text(asked)} req/s by chance: --burstiness {shape:g} sends in "
        f"bursts, so over {seconds_text(t.duration_s)} s the rate varies by about "
        f"±{spread * 100:.0f} %"
    )


def peak_output_text(peak: int | None, at_s: float | None) -> str:
    """The fullest one-second bucket of output tokens and where it starts in the step.

    >>> peak_output_text(7185, 4.0), peak_output_text(None, None), peak_output_text(12, None)
    ('7,185 at 4 s', 'n/a', '12')
    """
    if peak is None:
        return "n/a"
    return f"{peak:,}" if at_s is None else f"{peak:,} at {seconds_text(at_s)} s"


def format_ms(value: float) -> str:
    """A latency in ms with about three significant figures: 0.47, 12.6, 368."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"
