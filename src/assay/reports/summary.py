"""The console summary of a report: outcomes, errors by code, latency and throughput, the verdict.

Built from rich tables sized for 100 columns. Every server-supplied string goes through `Text`,
so a message such as "no [DONE] marker" is printed as is, never read as markup. On a console
that is not a terminal rich emits no colour codes, so the summary reads the same in a log file.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.metrics.sketch import Distribution
from assay.metrics.step_metrics import Outcomes, StepMetrics
from assay.reports.report import Report, StepReport

_LATENCY_ROWS: tuple[tuple[str, str], ...] = (
    ("TTFT", "ttft_ms"),
    ("ITL", "itl_ms"),
    ("TPOT", "tpot_ms"),
    ("E2E", "e2e_ms"),
    ("E2E from targeted start", "e2e_from_target_ms"),
    ("Dispatch lag", "dispatch_lag_ms"),
)


def render_summary(report: Report, console: Console) -> None:
    """Print every step of `report` and the final verdict line to `console`.

    >>> from datetime import UTC, datetime
    >>> from assay.metrics import StepAggregator
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> report = build_report(run_config={}, started_at=now, finished_at=now,
    ...     steps=[StepReport.of(0, "synchronous", StepAggregator().snapshot())],
    ...     max_error_rate=0.05)
    >>> import io
    >>> console = Console(record=True, width=100, file=io.StringIO())
    >>> render_summary(report, console)
    >>> "INVALID RUN: no request completed" in console.export_text()
    True
    """
    for step in report.steps:
        _render_step(step, console)
    _render_verdict(report, console)


def _render_step(step: StepReport, console: Console) -> None:
    m = step.metrics
    console.rule(Text(_step_title(step), style="bold"), align="left")
    console.print(_outcomes_line(m.outcomes, m.excluded))
    if m.errors_by_code:
        console.print(_errors_table(m))
    console.print(_latency_table(m))
    console.print(_throughput_table(m))
    if m.goodput is not None:
        limits = ", ".join(
            f"{name.removesuffix('_ms').upper()} <= {value:g} ms"
            for name, value in m.goodput.slo.model_dump().items()
            if value is not None
        )
        console.print(
            f"Goodput: {m.goodput.requests_per_s:.2f} req/s; {m.goodput.good} requests "
            f"({m.goodput.fraction * 100:.1f} % of finished) met the SLO ({limits or 'no limit'})",
            highlight=False,
        )
    console.print(
        Text(f"Output token counts from: {m.tokens.output_source_note}; prompt tokens reported ")
        + Text(f"by the server for {m.tokens.prompt_reported} of {m.outcomes.completed}.")
    )
    console.print(
        f"Concurrency: mean {m.concurrency.mean:.2f}, max {m.concurrency.max} "
        f"(at most {m.concurrency.max_upper_bound}, "
        f"sampled every {_resolution(m.concurrency.resolution_ns)})",
        highlight=False,
    )
    if step.sessions is not None:
        _render_sessions(step, console)
    console.print()


def _render_sessions(step: StepReport, console: Console) -> None:
    """The sessions line (turns not sent included) and TTFT per turn index."""
    sessions = step.sessions
    assert sessions is not None  # the caller checked
    console.print(
        f"Sessions: {sessions.started} started, {sessions.completed} completed every turn, "
        f"{sessions.ended_early} ended early; turns sent {sessions.turns_sent}, "
        f"not sent {sessions.turns_not_sent} (after an errored or cancelled turn, or the end)",
        highlight=False,
    )
    for turn, metrics in (step.turns or {}).items():
        ttft = metrics.latency.ttft_ms
        shown = "-" if ttft is None else f"p50 {ttft.p50:.2f} ms, p99 {ttft.p99:.2f} ms"
        outcomes = metrics.outcomes
        console.print(
            f"  turn {turn}: {outcomes.dispatched} sent, {outcomes.completed} completed, "
            f"{outcomes.errored} errored; TTFT {shown}",
            highlight=False,
        )


def _step_title(step: StepReport) -> str:
    asked = ""
    if step.requested_rate is not None:
        asked = f" @ {step.requested_rate:g} req/s"
    elif step.requested_concurrency is not None:
        asked = f" x{step.requested_concurrency} concurrent"
    duration = step.metrics.throughput.duration_s
    return (
        f"Step {step.index + 1}: {step.profile}{asked} "
        f"(achieved {step.achieved_rate:.2f} req/s over {duration:.2f} s)"
    )


def _outcomes_line(outcomes: Outcomes, excluded: int) -> Text:
    line = Text("Outcomes: ")
    line.append(f"{outcomes.dispatched} dispatched, ")
    line.append(f"{outcomes.completed} completed", style="green")
    line.append(", ")
    line.append(f"{outcomes.errored} errored", style="red" if outcomes.errored else "")
    line.append(f", {outcomes.cancelled} cancelled")
    if excluded:
        line.append(f", {excluded} outside the window (excluded)")
    line.append(f"; error rate {outcomes.error_rate * 100:.2f} %")
    return line


def _errors_table(m: StepMetrics) -> Table:
    table = Table(title="Errors by code", title_justify="left", box=box.SIMPLE, expand=False)
    table.add_column("code", no_wrap=True)
    table.add_column("count", justify="right")
    table.add_column("example message", overflow="fold", max_width=70)
    for code, summary in m.errors_by_code.items():
        table.add_row(Text(code.value, style="red"), str(summary.count), Text(summary.example))
    return table


def _latency_table(m: StepMetrics) -> Table:
    table = Table(
        title="Latency of completed requests (ms; dispatch lag over all dispatched)",
        title_justify="left",
        box=box.SIMPLE,
    )
    table.add_column("metric", no_wrap=True)
    for name in ("count", "mean", "p50", "p90", "p99", "max"):
        table.add_column(name, justify="right")
    for label, field in _LATENCY_ROWS:
        dist: Distribution | None = getattr(m.latency, field)
        if dist is None:
            table.add_row(label, "0", *("-" for _ in range(5)))
            continue
        figures = (dist.mean, dist.p50, dist.p90, dist.p99, dist.max)
        table.add_row(label, str(dist.count), *(_ms(value) for value in figures))
    return table


def _throughput_table(m: StepMetrics) -> Table:
    t = m.throughput
    table = Table(title="Throughput", title_justify="left", box=box.SIMPLE)
    table.add_column("", no_wrap=True)
    table.add_column("usable (completed)", justify="right")
    table.add_column("attempted (dispatched)", justify="right")
    table.add_row(
        "requests/s", f"{t.usable_requests_per_s:.2f}", f"{t.attempted_requests_per_s:.2f}"
    )
    table.add_row(
        "output tokens/s",
        f"{t.usable_output_tokens_per_s:.1f}",
        f"{t.attempted_output_tokens_per_s:.1f}",
    )
    return table


def _ms(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _resolution(ns: int) -> str:
    if ns < 1_000_000:
        return f"{ns / 1000:.0f} us"
    return f"{ns / 1e6:.0f} ms"


def _render_verdict(report: Report, console: Console) -> None:
    totals = report.totals
    outcomes = totals.outcomes
    counts = (
        f"{len(report.steps)} step(s), {outcomes.dispatched} dispatched, "
        f"{outcomes.completed} completed, {outcomes.errored} errored, "
        f"{outcomes.cancelled} cancelled"
    )
    console.print(f"Totals: {counts}", highlight=False)
    if report.validity.valid:
        console.print(Text("VALID RUN", style="bold green"))
    else:
        reasons = "; ".join(report.validity.reasons)
        console.print(Text(f"INVALID RUN: {reasons}", style="bold red"))
