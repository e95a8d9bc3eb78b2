"""The console summary of a report: outcomes, errors by code, latency and throughput, the verdict.

Built from rich tables sized for 100 columns. Every server-supplied string goes through `Text`,
so a message such as "no [DONE] marker" is printed as is, never read as markup. On a console
that is not a terminal rich emits no colour codes, so the summary reads the same in a log file.
"""

from __future__ import annotations

from typing import Final

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.metrics.sketch import Distribution
from assay.metrics.step_metrics import Outcomes, StepMetrics, Throughput
from assay.printable import printable
from assay.reports.client_bound import step_client_bound
from assay.reports.cost import cost_lines, cost_of, price_of
from assay.reports.inputs import input_lines
from assay.reports.models import models_lines, models_table
from assay.reports.report import Report, StepReport
from assay.reports.shown import produces_tokens, scores_documents
from assay.reports.step_words import (
    MIN_RATE_WINDOW_S,
    bursty_rate_note,
    cancelled_phrase,
    describe_load,
    format_ms,
    offered,
    rate_is_meaningful,
    stop_phrase,
)
from assay.reports.unclipped import unclipped
from assay.spec.constraints import StopReason

DISPATCH_LAG_WARNING_MS = 25.0
"""A dispatch lag p99 from which a step warns that the client could not keep its schedule."""

_LATENCY_ROWS: tuple[tuple[str, str], ...] = (
    ("TTFT", "ttft_ms"),
    ("TTST", "ttst_ms"),
    ("ITL", "itl_ms"),
    ("TPOT", "tpot_ms"),
    ("Decode (E2E - TTFT)", "decode_ms"),
    ("E2E", "e2e_ms"),
    ("E2E from targeted start", "e2e_from_target_ms"),
    ("Dispatch lag", "dispatch_lag_ms"),
)


def render_summary(report: Report, console: Console) -> None:
    """Print every step of `report`, a table across the steps when there are several, and the
    final verdict line to `console`.

    >>> from datetime import UTC, datetime
    >>> from assay.metrics import StepAggregator
    >>> from assay.reports.report import build_report
    >>> from assay.spec.run import RunEcho
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> report = build_report(run_config=RunEcho(), started_at=now, finished_at=now,
    ...     steps=[StepReport.of(0, "synchronous", StepAggregator().snapshot())],
    ...     max_error_rate=0.05)
    >>> import io
    >>> console = Console(record=True, width=100, file=io.StringIO())
    >>> render_summary(report, console)
    >>> "INVALID RUN: no request completed" in console.export_text()
    True
    """
    for step in report.steps:
        _render_step(step, report, console)
    if len(report.steps) > 1:
        console.print(unclipped(steps_table(report)))
        console.print()
    by_model = models_table(report)
    if by_model is not None:  # a traffic mix: each model's figures
        console.print(unclipped(by_model))
        for line in models_lines(report):
            console.print(line, highlight=False)
        console.print()
    _render_verdict(report, console)


def _render_step(step: StepReport, report: Report, console: Console) -> None:
    m = step.metrics
    embeddings = is_embeddings(step, report)
    console.rule(Text(step_title(step), style="bold"), align="left")
    for line in _ran_lines(step, report):
        console.print(line, highlight=False)
    console.print(_outcomes_line(m.outcomes, m.excluded, step))
    for warning in client_warnings(step):
        console.print(Text(warning, style="yellow"))
    if (bound := step_client_bound(step)) is not None:
        console.print(Text(bound, style="bold yellow"))
    cancelled = cancelled_phrase(step, report)
    if cancelled is not None:
        console.print(f"  ({cancelled})", highlight=False)
    if m.errors_by_code:
        console.print(unclipped(_errors_table(m)))
    console.print(unclipped(_latency_table(m, embeddings=embeddings)))
    for note in _latency_notes(m, embeddings=embeddings):
        console.print(note, highlight=False)
    console.print(
        unclipped(
            _throughput_table(step, embeddings=embeddings, documents=scores_documents(report))
        )
    )
    for line in peer_figure_lines(step, embeddings=embeddings):
        console.print(line, highlight=False)
    for line in cost_lines(cost_of(step, report, price_of(report))):
        console.print(line, highlight=False)
    if m.goodput is not None:
        limits = ", ".join(
            f"{name.removesuffix('_ms').upper()} <= {value:g} ms"
            for name, value in m.goodput.slo.model_dump().items()
            if value is not None
        )
        rate = (
            f"{m.goodput.requests_per_s:.2f} req/s"
            if rate_is_meaningful(step)
            else "no rate (step too short)"
        )
        console.print(
            f"Goodput: {rate}; {m.goodput.good} requests "
            f"({m.goodput.fraction * 100:.1f} % of finished) met the SLO ({limits or 'no limit'})",
            highlight=False,
        )
    prompts = Text(
        f"prompt tokens reported by the server for {m.tokens.prompt_reported} of "
        f"{m.outcomes.completed}."
    )
    if embeddings:
        words = report.run_config.endpoint.traits.answer.traits.no_output_words
        console.print(Text(words) + prompts)
    else:
        console.print(Text(f"Output token counts from: {m.tokens.output_source_note}; ") + prompts)
    console.print(f"Concurrency (requests in flight): {_concurrency_words(m)}", highlight=False)
    for line in input_lines(m.inputs):
        console.print(line, highlight=False)
    if step.sessions is not None:
        _render_sessions(step, console)
    console.print()


def is_embeddings(step: StepReport, report: Report) -> bool:
    """Whether the step's answers have no output tokens and no token timing (embeddings,
    rerank and score)."""
    if not produces_tokens(report):
        return True
    tokens = step.metrics.tokens
    return tokens.embeddings > 0 and tokens.embeddings == step.metrics.outcomes.completed


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


def step_title(step: StepReport) -> str:
    """What the step asked for, in words: "Step 2: constant at 12.5 req/s".

    >>> from assay.metrics import StepAggregator
    >>> step_title(StepReport.of(0, "concurrent", StepAggregator().snapshot(),
    ...                          requested_concurrency=4))
    'Step 1: concurrent, 4 streams'
    """
    return f"Step {step.index + 1}: {describe_load(step)}"


def _ran_lines(step: StepReport, report: Report) -> tuple[str, str]:
    """How long the step ran with its named rates, and why it stopped."""
    t = step.metrics.throughput
    outcomes = step.metrics.outcomes
    if rate_is_meaningful(step):
        rates = (
            f"dispatched {t.attempted_requests_per_s:.2f} req/s, "
            f"served (usable) {t.usable_requests_per_s:.2f} req/s"
        )
        bursty = bursty_rate_note(step)
        rates += "" if bursty is None else f" ({bursty})"
    else:
        rates = (
            f"{outcomes.dispatched} dispatched, {outcomes.completed} completed "
            "(too short for a rate)"
        )
    stop = stop_phrase(step, report)
    return f"Ran {t.duration_s:.2f} s: {rates}", f"{stop[0].upper()}{stop[1:]}."


def _outcomes_line(outcomes: Outcomes, excluded: int, step: StepReport | None = None) -> Text:
    line = Text("Outcomes: ")
    if step is not None and step.scheduled is not None:
        line.append(f"{step.scheduled} scheduled, ")
    line.append(f"{outcomes.dispatched} dispatched, ")
    line.append(f"{outcomes.completed} completed", style="green")
    line.append(", ")
    line.append(f"{outcomes.errored} errored", style="red" if outcomes.errored else "")
    line.append(f", {outcomes.cancelled} cancelled")
    if step is not None and step.not_sent:
        line.append(f", {step.not_sent} not sent", style="yellow")
    if step is not None and step.lost:
        line.append(f", {step.lost} lost", style="yellow")
    if excluded:
        # Sent and answered, only outside the measured window (issue 38: "40 outside the
        # window" next to "40 dispatched" read as 40 never sent).
        line.append(f"; {excluded} more sent in warm-up or cool-down, not counted here")
    line.append(f"; error rate {outcomes.error_rate * 100:.2f} %")
    return line


def client_warnings(step: StepReport) -> list[str]:
    """The lines that say the client, not the server, set the pace or lost part of the load.

    A step warns when its schedule owed requests it never sent, when its dispatch lag p99
    reached `DISPATCH_LAG_WARNING_MS`, and for each load process it lost.
    """
    warnings: list[str] = []
    lag = step.metrics.latency.dispatch_lag_ms
    lag_note = (
        ""
        if lag is None
        else f"dispatch lag p50 {format_ms(lag.p50)} ms, p99 {format_ms(lag.p99)} ms, "
        f"max {format_ms(lag.max)} ms"
    )
    if step.not_sent and step.scheduled:
        share = step.not_sent / step.scheduled * 100
        unsent = f"{step.not_sent} of {step.scheduled} scheduled requests ({share:.1f} %)"
        if step.lost_processes:
            # Most of them were the lost process's slice, not a client too slow for its rate.
            warnings.append(f"Warning: {unsent} were never sent (a load process was lost).")
        else:
            warnings.append(
                f"Warning: the client was the bottleneck: {unsent} were never sent"
                + (f"; {lag_note}" if lag_note else "")
                + ". Add --processes or lower the rate."
            )
    elif lag is not None and lag.p99 >= DISPATCH_LAG_WARNING_MS:
        warnings.append(
            f"Warning: the client fell behind its schedule: {lag_note}. "
            "Latency from targeted start includes that wait."
        )
    for reason in step.lost_processes:
        warnings.append(
            f"Warning: degraded step: {reason}; the step finished without it "
            f"({step.lost} of its requests lost with their records)."
        )
    return warnings


def _errors_table(m: StepMetrics) -> Table:
    table = Table(title="Errors by code", title_justify="left", box=box.SIMPLE, expand=False)
    table.add_column("code", no_wrap=True)
    table.add_column("count", justify="right")
    table.add_column("example message", overflow="fold", max_width=70)
    for code, summary in m.errors_by_code.items():
        table.add_row(
            Text(code.value, style="red"), str(summary.count), Text(printable(summary.example))
        )
    return table


_NOT_STREAMED: Final = "n/a (not streamed)"
_TOKEN_TIMING: Final = frozenset({"ttft_ms", "ttst_ms", "itl_ms", "tpot_ms", "decode_ms"})


def _latency_table(m: StepMetrics, *, embeddings: bool) -> Table:
    table = Table(
        title="Latency of completed requests (ms; dispatch lag over all dispatched)",
        title_justify="left",
        box=box.SIMPLE,
    )
    table.add_column("metric", no_wrap=True)
    for name in ("count", "mean", "p50", "p90", "p99", "max"):
        table.add_column(name, justify="right")
    for label, field in _LATENCY_ROWS:
        if embeddings and field in _TOKEN_TIMING:
            continue  # vectors have no tokens to time
        dist: Distribution | None = getattr(m.latency, field)
        if dist is None:
            if field in _TOKEN_TIMING and m.latency.not_streamed:
                table.add_row(label, _NOT_STREAMED, *("" for _ in range(5)))
            else:
                table.add_row(label, "0", *("-" for _ in range(5)))
            continue
        figures = (dist.mean, dist.p50, dist.p90, dist.p99, dist.max)
        table.add_row(label, str(dist.count), *(format_ms(value) for value in figures))
    return table


def _latency_notes(m: StepMetrics, *, embeddings: bool) -> list[str]:
    notes: list[str] = []
    latency = m.latency
    streamed = m.outcomes.completed - latency.not_streamed
    if not embeddings and latency.not_streamed and streamed > 0:
        notes.append(
            f"{latency.not_streamed} of {m.outcomes.completed} completed answers were not "
            "streamed: they count in E2E only (no TTFT, ITL or TPOT)."
        )
    if latency.itl_coalesced_gaps:
        notes.append(
            f"ITL: {latency.itl_coalesced_gaps} token gaps were coalesced by the transport "
            "(several tokens in one network read); each read's gap is spread evenly over its "
            "tokens, not counted as zero gaps."
        )
    return notes


def _throughput_table(step: StepReport, *, embeddings: bool, documents: bool = False) -> Table:
    t = step.metrics.throughput
    table = Table(title="Throughput", title_justify="left", box=box.SIMPLE)
    table.add_column("", no_wrap=True)
    table.add_column("usable (completed)", justify="right")
    table.add_column("attempted (dispatched)", justify="right")
    if not rate_is_meaningful(step):
        table.add_row("requests/s", "-", "-")
        if not embeddings:
            table.add_row(
                "output tokens", str(t.usable_output_tokens), str(t.attempted_output_tokens)
            )
        if documents:
            table.add_row("documents scored", str(t.usable_documents), "-")
        table.caption = f"no rates: the step lasted {t.duration_s:.2f} s"
        table.caption_justify = "left"
        return table
    table.add_row(
        "requests/s", f"{t.usable_requests_per_s:.2f}", f"{t.attempted_requests_per_s:.2f}"
    )
    if not embeddings:
        table.add_row(
            "output tokens/s",
            f"{t.usable_output_tokens_per_s:.1f}",
            f"{t.attempted_output_tokens_per_s:.1f}",
        )
    _add_token_rate_rows(table, t, embeddings=embeddings)
    if documents:
        table.add_row("documents/s", f"{t.usable_documents_per_s:.1f}", "-")
    return table


def _add_token_rate_rows(table: Table, t: Throughput, *, embeddings: bool) -> None:
    """Input, total and peak output token rates: completed requests only, so no attempted."""
    if t.usable_input_tokens_per_s is None or t.usable_total_tokens_per_s is None:
        table.add_row("input tokens/s", "n/a (no server prompt count)", "")
    else:
        table.add_row("input tokens/s", f"{t.usable_input_tokens_per_s:.1f}", "")
        if not embeddings:
            table.add_row("total tokens/s", f"{t.usable_total_tokens_per_s:.1f}", "")
    if not embeddings and t.peak_output_tokens_per_s is not None:
        table.add_row("peak output tokens/s (1 s)", f"{t.peak_output_tokens_per_s}", "")


def peer_figure_lines(step: StepReport, *, embeddings: bool) -> list[str]:
    """The lines under the throughput table: per-user output rate and prefill vs decode time.

    The rates beside output (input, total, peak) are rows of the throughput table; these are
    distributions over requests, so they read better as lines.
    """
    if embeddings:
        return []
    m = step.metrics
    lines: list[str] = []
    per_user = m.throughput.per_user_output_tokens_per_s
    if per_user is not None:
        lines.append(
            f"Per-user output tokens/s ({per_user.count} answers of 2+ tokens): "
            f"mean {per_user.mean:.1f}, p50 {per_user.p50:.1f}, min {per_user.min:.1f}, "
            f"max {per_user.max:.1f}"
        )
    ttft, decode = m.latency.ttft_ms, m.latency.decode_ms
    if ttft is not None and decode is not None:
        whole = ttft.mean + decode.mean
        share = ttft.mean / whole * 100 if whole > 0 else 0.0
        lines.append(
            f"Prefill vs decode ({ttft.count} streamed answers): TTFT mean "
            f"{format_ms(ttft.mean)} ms ({share:.0f} % of E2E), decode "
            f"{format_ms(decode.mean)} ms ({100 - share:.0f} %)"
        )
    return lines


def _concurrency_words(m: StepMetrics) -> str:
    """Mean and peak in flight; the peak is read in buckets of `resolution_ns`, so the true
    peak lies between the two figures when they differ (issue 38: "(at most 64, sampled every
    1 us)" read as a cap).

    >>> from assay.metrics.step_metrics import Concurrency
    >>> from assay.metrics import StepAggregator
    >>> m = StepAggregator().snapshot().model_copy(update={"concurrency": Concurrency(
    ...     mean=1.11, max=2, max_upper_bound=2, resolution_ns=1000)})
    >>> _concurrency_words(m)
    'mean 1.11, peak 2'
    >>> m = m.model_copy(update={"concurrency": Concurrency(
    ...     mean=40.5, max=60, max_upper_bound=64, resolution_ns=1_000_000)})
    >>> _concurrency_words(m)
    'mean 40.50, peak 60 to 64 (read in 1 ms buckets)'
    """
    c = m.concurrency
    if c.max_upper_bound <= c.max:
        return f"mean {c.mean:.2f}, peak {c.max}"
    return (
        f"mean {c.mean:.2f}, peak {c.max} to {c.max_upper_bound} "
        f"(read in {_resolution(c.resolution_ns)} buckets)"
    )


def _resolution(ns: int) -> str:
    if ns < 1_000_000:
        return f"{ns / 1000:.0f} us"
    return f"{ns / 1e6:.0f} ms"


def _render_verdict(report: Report, console: Console) -> None:
    totals = report.totals
    outcomes = totals.outcomes
    scheduled = "" if totals.scheduled is None else f"{totals.scheduled} scheduled, "
    counts = (
        f"{len(report.steps)} step(s), {scheduled}{outcomes.dispatched} dispatched, "
        f"{outcomes.completed} completed, {outcomes.errored} errored, "
        f"{outcomes.cancelled} cancelled"
    )
    if totals.not_sent:
        counts += f", {totals.not_sent} not sent"
    if totals.lost:
        counts += f", {totals.lost} lost"
    console.print(f"Totals: {counts}", highlight=False)
    if report.incomplete is not None:
        # Built from what a crash or a kill left: partial, whatever its figures say.
        state = report.incomplete.state.upper()
        console.print(Text(f"{state} RUN: partial results, no verdict", style="bold red"))
    elif report.run_config.interrupted:
        # A partial run has no verdict: its figures cover only the part that ran.
        console.print(Text("INTERRUPTED: partial results, no verdict", style="bold yellow"))
    elif report.validity.valid:
        console.print(Text("VALID RUN", style="bold green"))
    else:
        reasons = "; ".join(report.validity.reasons)
        console.print(Text(f"INVALID RUN: {reasons}", style="bold red"))
    for note in report.validity.notes:
        console.print(Text(f"note: {note}", style="yellow"))


# One table across a run's steps: the view a sweep is made for (load offered against what was
# served, latency and errors), printed after the per-step blocks.


def _stop_name(reason: StopReason) -> str:
    """What stopped a step, in a table cell (a new `StopReason` is a type error here)."""
    match reason:
        case StopReason.max_seconds:
            return "time limit"
        case StopReason.max_requests:
            return "max requests"
        case StopReason.max_errors:
            return "max errors"
        case StopReason.stop_error_rate:
            return "error rate"
        case StopReason.stop_signal:
            return "interrupt"
        case StopReason.data_exhausted:
            return "data exhausted"


def steps_table(report: Report) -> Table:
    """A row per step: offered load, dispatched and usable req/s, TTFT and ITL p50/p99, error
    rate, goodput (when an SLO was given) and what stopped the step.

    Rates of a step shorter than `MIN_RATE_WINDOW_S` are shown as "-".
    """
    with_goodput = any(step.metrics.goodput is not None for step in report.steps)
    table = Table(
        title="Steps (latency in ms over completed requests)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("offered", no_wrap=True)
    headers = (
        "dispatched\nreq/s",
        "usable\nreq/s",
        "TTFT\np50",
        "TTFT\np99",
        "ITL\np50",
        "ITL\np99",
        "error\nrate",
    )
    for name in headers:
        table.add_column(name, justify="right", no_wrap=True)
    if with_goodput:
        table.add_column("goodput\nreq/s", justify="right", no_wrap=True)
    table.add_column("stopped\nby", overflow="fold")
    short = False
    for step in report.steps:
        m = step.metrics
        t = m.throughput
        meaningful = rate_is_meaningful(step)
        short = short or not meaningful

        def rate(value: float, meaningful: bool = meaningful) -> str:
            return f"{value:.2f}" if meaningful else "-"

        ttft, itl = m.latency.ttft_ms, m.latency.itl_ms
        row = [
            str(step.index + 1),
            offered(step),
            rate(t.attempted_requests_per_s),
            rate(t.usable_requests_per_s),
            _p(ttft, "p50"),
            _p(ttft, "p99"),
            _p(itl, "p50"),
            _p(itl, "p99"),
            f"{m.error_rate * 100:.1f} %",
        ]
        if with_goodput:
            row.append("" if m.goodput is None else rate(m.goodput.requests_per_s))
        row.append("" if step.stopped_by is None else _stop_name(step.stopped_by))
        table.add_row(*row)
    if short:
        table.caption = f"-: the step lasted under {MIN_RATE_WINDOW_S:g} s, too short for a rate"
        table.caption_justify = "left"
    return table


def _p(dist: Distribution | None, name: str) -> str:
    return "-" if dist is None else format_ms(float(getattr(dist, name)))
