"""The console view of `assay compare`: one table per step, the first run as the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.reports.compare import Change, Row, compare_step
from assay.reports.report import Report, StepReport
from assay.reports.step_words import describe_load, format_ms
from assay.reports.unclipped import unclipped

NOISE_NOTE = (
    "~ = within the run-to-run noise these sample sizes allow: rates within 2 Poisson standard "
    "errors of their request counts, error rates within 2 standard errors of the pooled "
    "proportion, percentiles whose 95 % order-statistic intervals overlap."
)

_STYLES = {"better": "green", "worse": "red", "~": "dim"}


def render_comparison(reports: Sequence[Report], labels: Sequence[str], console: Console) -> None:
    """Print the comparison of `reports` (at least two) step by step to `console`."""
    console.print(f"Comparing {len(reports)} runs; run 1 is the baseline:", highlight=False)
    for number, label in enumerate(labels, start=1):
        console.print(Text(f"  run {number}: {label}"))
    counts = [len(report.steps) for report in reports]
    shared = min(counts)
    if len(set(counts)) > 1:
        console.print(
            f"The runs have {', '.join(map(str, counts))} steps: the first {shared} are compared.",
            highlight=False,
        )
    console.print()
    for index in range(shared):
        steps = [report.steps[index] for report in reports]
        console.print(unclipped(_step_table(steps)))
        errors = _errors_line(steps)
        if errors is not None:
            console.print(errors)
        console.print()
    console.print(NOISE_NOTE, highlight=False)


def _step_title(steps: Sequence[StepReport]) -> str:
    loads = [describe_load(step) for step in steps]
    title = f"Step {steps[0].index + 1}: {loads[0]}"
    for number, load in enumerate(loads[1:], start=2):
        if load != loads[0]:
            title += f"; run {number}: {load}"
    return title


def _step_table(steps: Sequence[StepReport]) -> Table:
    table = Table(title=_step_title(steps), title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("", no_wrap=True)
    table.add_column("run 1", justify="right", no_wrap=True)
    for number in range(2, len(steps) + 1):
        table.add_column(f"run {number}", justify="right", no_wrap=True)
        table.add_column("change", no_wrap=True)
    for row in compare_step(steps):
        if row.baseline is None and all(change.value is None for change in row.changes):
            continue  # a figure no run has (goodput without an SLO, ITL of embeddings)
        cells: list[str | Text] = [row.label, _value(row.baseline, row.unit)]
        for change in row.changes:
            cells.append(_value(change.value, row.unit))
            cells.append(_change_text(row, change))
        table.add_row(*cells)
    return table


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    match unit:
        case "ms":
            return format_ms(value)
        case "fraction":
            return f"{value * 100:.2f} %"
        case _:
            return f"{value:.2f}"


def _change_text(row: Row, change: Change) -> Text:
    if row.baseline is None or change.value is None:
        return Text("")
    if row.unit == "fraction":
        amount = f"{(change.value - row.baseline) * 100:+.2f} pt"
    elif change.relative is None:
        amount = "new" if change.value else "="
    else:
        amount = f"{change.relative * 100:+.1f} %"
    verdict = change.verdict
    text = Text(amount)
    if verdict:
        text.append(f" {verdict}", style=_STYLES.get(verdict, ""))
    return text


def _errors_line(steps: Sequence[StepReport]) -> Text | None:
    codes = sorted({code for step in steps for code in step.metrics.errors_by_code})
    if not codes:
        return None
    parts = []
    for code in codes:
        counts = []
        for step in steps:
            summary = step.metrics.errors_by_code.get(code)
            counts.append(str(summary.count if summary is not None else 0))
        parts.append(f"{code.value} {' -> '.join(counts)}")
    return Text("errors by code: " + "; ".join(parts))
