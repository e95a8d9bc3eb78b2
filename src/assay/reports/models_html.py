"""report.html's part of a traffic mix: a table per step with each model's outcomes, errors,
latency, throughput and goodput, the run's totals per model, and a latency chart by model.
Nothing for a run that sent one model."""

from __future__ import annotations

import html

from pydantic import JsonValue

from assay.metrics.sketch import Distribution
from assay.reports.chart_base import Figure, chart_layout, step_label
from assay.reports.models import (
    SHOWN_MODELS,
    has_models,
    model_steps,
    models_bound_note,
    shown_name,
    unshown_note,
)
from assay.reports.report import Report, StepReport
from assay.reports.step_words import format_ms, rate_is_meaningful

_HEAD = (
    "model",
    "dispatched",
    "completed",
    "errored",
    "error rate",
    "errors by code",
    "TTFT p50 / p99 ms",
    "TPOT p50 / p99 ms",
    "E2E p50 / p99 ms",
    "usable req/s",
    "usable output tok/s",
    "goodput req/s",
)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _pair(distribution: Distribution | None) -> str:
    if distribution is None:
        return "n/a"
    return f"{format_ms(distribution.p50)} / {format_ms(distribution.p99)}"


def _rate(step: StepReport, value: float | None) -> str:
    return "n/a" if value is None or not rate_is_meaningful(step) else f"{value:,.2f}"


def _row(name: str, seen: StepReport) -> str:
    m = seen.metrics
    codes = ", ".join(f"{code} {summary.count:,}" for code, summary in m.errors_by_code.items())
    counts = [
        f"{m.outcomes.dispatched:,}",
        f"{m.outcomes.completed:,}",
        f"{m.outcomes.errored:,}",
        f"{m.error_rate * 100:.2f} %",
    ]
    figures = [
        _pair(m.latency.ttft_ms),
        _pair(m.latency.tpot_ms),
        _pair(m.latency.e2e_ms),
        _rate(seen, m.throughput.usable_requests_per_s),
        _rate(seen, m.throughput.usable_output_tokens_per_s),
        _rate(seen, None if m.goodput is None else m.goodput.requests_per_s),
    ]
    return (
        f'<tr data-model="{_e(shown_name(name))}"><td>{_e(shown_name(name))}</td>'
        + "".join(f'<td class="num">{_e(cell)}</td>' for cell in counts)
        + f"<td>{_e(codes or '-')}</td>"
        + "".join(f'<td class="num">{_e(cell)}</td>' for cell in figures)
        + "</tr>"
    )


def _totals_table(report: Report) -> str:
    totals = report.totals.models
    if not totals or len(report.steps) < 2:
        return ""
    rows = "".join(
        f'<tr><td>{_e(shown_name(name))}</td><td class="num">{t.outcomes.dispatched:,}</td>'
        f'<td class="num">{t.outcomes.completed:,}</td>'
        f'<td class="num">{t.outcomes.errored:,}</td>'
        f'<td class="num">{t.error_rate * 100:.2f} %</td>'
        f'<td class="num">{t.usable_output_tokens:,}</td>'
        f'<td class="num">{"n/a" if t.good is None else f"{t.good:,}"}</td></tr>'
        for name, t in list(totals.items())[:SHOWN_MODELS]
    )
    return (
        "<h3>Over the run</h3>"
        '<table class="models-totals"><thead><tr><th>model</th><th>dispatched</th>'
        "<th>completed</th><th>errored</th><th>error rate</th><th>usable output tokens</th>"
        f"<th>met the SLO</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def models_html(report: Report) -> str:
    """The page's "By model" section; "" for a run that sent one model."""
    if not has_models(report):
        return ""
    head = "".join(f"<th>{_e(name)}</th>" for name in _HEAD)
    tables = []
    for step in report.steps:
        rows = "".join(_row(name, seen) for name, seen in model_steps(step, SHOWN_MODELS))
        if not rows:
            continue
        tables.append(
            f"<h3>Step {_e(step_label(step))}</h3>"
            f'<table class="models"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        )
    return (
        '<section id="models"><h2>By model</h2>'
        '<p class="muted">The requests that named each model of the mix, judged as the step\'s '
        "are: latency over completed requests, rates over the model's own first dispatch to "
        "last finish (the measured window with warm-up or cool-down).</p>"
        + "".join(
            f'<p class="muted models-bound">{_e(note)}</p>'
            for note in (models_bound_note(report), unshown_note(report))
            if note is not None
        )
        + "".join(tables)
        + _totals_table(report)
        + "</section>"
    )


_CHARTED = (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("e2e_ms", "E2E"))


def models_figures(report: Report) -> list[Figure]:
    """A grouped bar chart per latency metric: p50 and p99 of each model (of each step, when
    there are several); empty for a run that sent one model."""
    if not has_models(report):
        return []
    several = len(report.steps) > 1
    labels: list[JsonValue] = []
    seen_steps: list[StepReport] = []
    for step in report.steps:
        for name, seen in model_steps(step, SHOWN_MODELS):
            # Plotly reads tags in a label (<a href>, <br>) and decodes entities: escaped, a name
            # is shown as it is.
            shown = html.escape(shown_name(name), quote=False)
            labels.append(f"{shown} ({step_label(step)})" if several else shown)
            seen_steps.append(seen)
    figures = []
    for metric, title in _CHARTED:
        data: list[dict[str, JsonValue]] = []
        measured = False
        for percentile in ("p50", "p99"):
            values: list[JsonValue] = []
            for seen in seen_steps:
                distribution: Distribution | None = getattr(seen.metrics.latency, metric)
                measured |= distribution is not None
                values.append(
                    None if distribution is None else float(getattr(distribution, percentile))
                )
            data.append({"type": "bar", "name": percentile, "x": labels, "y": values})
        if not measured:
            continue  # not one model has the figure (TPOT of answers not streamed)
        layout = chart_layout(f"{title} by model", "model", "ms", barmode="group")
        figures.append(Figure(f"models-{metric.removesuffix('_ms')}", f"{title} by model", data,
                              layout))  # fmt: skip
    return figures
