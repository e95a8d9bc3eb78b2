"""A traffic mix, per model: each step's figures for the requests that named each model, as the
console, summary.csv and `assay compare` show them.

A run that sends several models (`--model a=0.7,b=0.3`) keeps a `StepMetrics` per model in each
step (`StepReport.models`, aggregated from the records' `model` as the run's sinks aggregate the
step) and per-model counts over the run (`Totals.models`). A one-model run has neither, and
nothing here prints for it. Each model's rates are over its own duration: the measured window
with warm-up or cool-down, else its first dispatch to its last finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rich import box
from rich.table import Table
from rich.text import Text

from assay.metrics.model_bound import MAX_MODELS, OTHER_MODELS
from assay.metrics.sketch import Distribution
from assay.metrics.step_metrics import StepMetrics
from assay.printable import printable
from assay.reports.report import Report, StepReport
from assay.reports.step_words import format_ms, rate_is_meaningful

# How much of a model's name the console and the page show: a name is text from a data file, a
# flag or a server, and may be a megabyte long; report.json and summary.csv keep it whole.
SHOWN_NAME_CHARS: Final = 80


def shown_name(name: str) -> str:
    """`name` as the console and the page show it: every control character as its escape (a
    line feed too), an empty name as `""`, and cut to `SHOWN_NAME_CHARS` with an ellipsis.

    >>> shown_name("lora-a"), shown_name(""), shown_name("a\\nVALID RUN\\x1b[2J")
    ('lora-a', '""', 'a\\\\x0aVALID RUN\\\\x1b[2J')
    >>> len(shown_name("x" * 1_000_000))
    80
    """
    if not name:
        return '""'
    shown = printable(name[: SHOWN_NAME_CHARS * 4])
    return shown if len(shown) <= SHOWN_NAME_CHARS else shown[: SHOWN_NAME_CHARS - 1] + "…"


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


def model_steps(step: StepReport, most: int | None = None) -> list[tuple[str, StepReport]]:
    """Each model of the step's mix (the first `most`, when given), by name, with the step as
    that model saw it; empty for a step that sent one model."""
    models = list((step.models or {}).items())[:most]
    return [(name, model_step(step, metrics)) for name, metrics in models]


# The models shown per step: a run keeps at most MAX_MODELS and OTHER_MODELS, but a report.json
# from elsewhere (or edited) may hold any number; summary.csv and report.json keep them all.
SHOWN_MODELS: Final = MAX_MODELS + 1


def unshown_note(report: Report) -> str | None:
    """What the console and the page say of the models of a step past `SHOWN_MODELS`."""
    unshown = sum(max(0, len(step.models or {}) - SHOWN_MODELS) for step in report.steps)
    if not unshown:
        return None
    return f"{unshown} more models are in report.json and summary.csv, not shown here"


def models_bound_note(report: Report) -> str | None:
    """What a run that named more than `MAX_MODELS` models in a step is told: the others are
    counted together; None when every model has figures of its own."""
    if not any(OTHER_MODELS in (step.models or {}) for step in report.steps):
        return None
    return (
        f"more than {MAX_MODELS} models were named in a step: the records of the others are "
        f"counted together as {OTHER_MODELS}; which models have figures of their own depends "
        "on the order their records came in each load process, so a model's row may miss "
        f"some of its records (counted in {OTHER_MODELS}); the step's figures count every record"
    )


def _models_of(report: Report) -> frozenset[str]:
    return frozenset(name for step in report.steps for name in step.models or {})


def mix_notes(reports: Sequence[Report]) -> list[str]:
    """What `assay compare` says of runs that did not send the same models: a traffic mix
    beside a run of one model, or mixes of different models; nothing when they agree.

    The note counts models and never names one: names are text from a data file or a server.
    """
    mixes = [_models_of(report) for report in reports]
    if all(mix == mixes[0] for mix in mixes):
        return []
    sent = ", ".join(
        f"run {number} " + (f"a traffic mix of {len(mix)} models" if mix else "one model (no mix)")
        for number, mix in enumerate(mixes, start=1)
    )
    return [
        f"the runs did not send the same models ({sent}): a step's figures are over different "
        "traffic; a model is compared on its own only where run 1 and another run both sent it "
        "in a mix"
    ]


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
        for name, seen in model_steps(step, SHOWN_MODELS):
            m = seen.metrics
            meaningful = rate_is_meaningful(seen)
            cells: list[str | Text] = [str(step.index + 1)] if several else []
            cells += [
                Text(shown_name(name)),
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


def models_lines(report: Report) -> list[Text]:
    """The lines under the models table: each model's errors by code, and its totals over the
    run when the run had several steps. `Text`, so a name is never read as console markup."""
    lines: list[Text] = []
    for note in (models_bound_note(report), unshown_note(report)):
        if note is not None:
            lines.append(Text(f"  {note}", style="yellow"))
    several = len(report.steps) > 1
    for step in report.steps:
        for name, metrics in (step.models or {}).items():
            if metrics.errors_by_code:
                where = f"step {step.index + 1}, " if several else ""
                codes = ", ".join(
                    f"{code} {summary.count}" for code, summary in metrics.errors_by_code.items()
                )
                lines.append(Text(f"  {where}{shown_name(name)}: errors by code: {codes}"))
    totals = report.totals.models
    if several and totals:
        for name, total in list(totals.items())[:SHOWN_MODELS]:
            o = total.outcomes
            good = "" if total.good is None else f", {total.good} met the SLO"
            lines.append(
                Text(
                    f"  {shown_name(name)} over the run: {o.dispatched} dispatched, "
                    f"{o.completed} completed, {o.errored} errored "
                    f"({total.error_rate * 100:.2f} %), "
                    f"{total.usable_output_tokens} usable output tokens{good}"
                )
            )
    return lines
