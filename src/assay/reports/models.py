"""A traffic mix, per model: each step's figures for the requests that named each model, as the
console, summary.csv and `assay compare` show them.

A run that sends several models (`--model a=0.7,b=0.3`) keeps a `StepMetrics` per model in each
step (`StepReport.models`, aggregated from the records' `model` as the run's sinks aggregate the
step) and per-model counts over the run (`Totals.models`). A one-model run has neither, and
nothing here prints for it. Each model's rates are over its own duration: the measured window
with warm-up or cool-down, else its first dispatch to its last finish.
"""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from assay.metrics.sketch import Distribution
from assay.metrics.step_metrics import StepMetrics
from assay.reports.report import Report, StepReport
from assay.reports.step_words import format_ms, rate_is_meaningful


def model_step(step: StepReport, metrics: StepMetrics) -> StepReport:
    """`step` as seen by one model of its mix: its figures are `metrics`; what only the step
    has (the schedule's counts, cost, peers' figures, sessions) is left out."""
    return step.model_copy(
        update={
            "metrics": metrics,
            "achieved_rate": metrics.throughput.attempted_requests_per_s,
            "scheduled": None,
            "not_sent": 0,
            "lost": 0,
            "lost_processes": (),
            "timeline": None,
            "sessions": None,
            "turns": None,
            "models": None,
            "definitions": None,
            "cost": None,
            "client_load": (),
            "client_bound": None,
        }
    )


def model_steps(step: StepReport) -> list[tuple[str, StepReport]]:
    """Each model of the step's mix, by name, with the step as that model saw it; empty for a
    step that sent one model."""
    return [(name, model_step(step, metrics)) for name, metrics in (step.models or {}).items()]


def has_models(report: Report) -> bool:
    """Whether any step of `report` sent several models."""
    return any(step.models for step in report.steps)


def _pair(distribution: Distribution | None) -> str:
    if distribution is None:
        return "-"
    return f"{format_ms(distribution.p50)} / {format_ms(distribution.p99)}"


def models_table(report: Report) -> Table | None:
    """The console's table of a traffic mix: a row per step and model with its outcomes, error
    rate, TTFT, TPOT and E2E p50 / p99, usable output tokens/s and goodput; None for a run
    that sent one model."""
    if not has_models(report):
        return None
    several = len(report.steps) > 1
    with_goodput = any(
        m.goodput is not None for step in report.steps for m in (step.models or {}).values()
    )
    table = Table(
        title="By model (latency p50 / p99 in ms over completed requests)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    if several:
        table.add_column("step", justify="right", no_wrap=True)
    table.add_column("model", overflow="fold", max_width=24)
    headers = ["sent", "done", "errored", "error\nrate", "TTFT", "TPOT", "E2E", "usable\ntok/s"]
    if with_goodput:
        headers.append("goodput\nreq/s")
    for name in headers:
        table.add_column(name, justify="right", no_wrap=True)
    for step in report.steps:
        for name, seen in model_steps(step):
            m = seen.metrics
            meaningful = rate_is_meaningful(seen)
            cells: list[str | Text] = [str(step.index + 1)] if several else []
            cells += [
                Text(name),
                str(m.outcomes.dispatched),
                str(m.outcomes.completed),
                str(m.outcomes.errored),
                f"{m.error_rate * 100:.2f} %",
                _pair(m.latency.ttft_ms),
                _pair(m.latency.tpot_ms),
                _pair(m.latency.e2e_ms),
                f"{m.throughput.usable_output_tokens_per_s:.1f}" if meaningful else "-",
            ]
            if with_goodput:
                good = m.goodput
                cells.append(
                    "-" if good is None or not meaningful else f"{good.requests_per_s:.2f}"
                )
            table.add_row(*cells)
    return table


def models_lines(report: Report) -> list[str]:
    """The lines under the models table: each model's errors by code, and its totals over the
    run when the run had several steps."""
    lines: list[str] = []
    several = len(report.steps) > 1
    for step in report.steps:
        for name, metrics in (step.models or {}).items():
            if metrics.errors_by_code:
                where = f"step {step.index + 1}, " if several else ""
                codes = ", ".join(
                    f"{code} {summary.count}" for code, summary in metrics.errors_by_code.items()
                )
                lines.append(f"  {where}{name}: errors by code: {codes}")
    totals = report.totals.models
    if several and totals:
        for name, total in totals.items():
            o = total.outcomes
            good = "" if total.good is None else f", {total.good} met the SLO"
            lines.append(
                f"  {name} over the run: {o.dispatched} dispatched, {o.completed} completed, "
                f"{o.errored} errored ({total.error_rate * 100:.2f} %), "
                f"{total.usable_output_tokens} usable output tokens{good}"
            )
    return lines
