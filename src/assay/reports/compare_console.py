"""The console view of `assay compare`: one table per step, the first run as the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.reports.compare import (
    AlignedStep,
    Change,
    Row,
    align_steps,
    capacity_lines,
    compare_step,
    format_change,
    format_value,
    model_groups,
    run_states,
)
from assay.reports.models import mix_notes, shown_name
from assay.reports.report import Report, StepReport
from assay.reports.step_words import describe_load
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
    for state in run_states(reports):
        console.print(Text(f"warning: {state}", style="yellow"))
    groups, unmatched = align_steps(reports)
    console.print(
        "Steps are aligned by offered load; steps of different loads are shown side by side, "
        "not judged.",
        highlight=False,
    )
    for note in [*unmatched, *mix_notes(reports)]:
        console.print(f"note: {note}", highlight=False)
    for line in capacity_lines(reports):
        console.print(line, highlight=False)
    console.print()
    for group in groups:
        title = step_title(group)
        # A traffic mix: its step, then model by model.
        models = (
            (f"{title}, model {shown_name(name)}", seen) for name, seen in model_groups(group)
        )
        for shown, aligned in [(title, group), *models]:
            # The title on its own line: a table's title wraps to the table's width.
            console.print(Text(shown, style="bold"))
            console.print(unclipped(_step_table(aligned)))
            errors = _errors_line(aligned.steps)
            if errors is not None:
                console.print(errors)
            console.print()
    console.print(NOISE_NOTE, highlight=False)


def step_title(group: AlignedStep) -> str:
    """A compared step's title, with each run's load where it differs from the first run's.

    "Step 3: constant at 16.6 req/s; run 2: constant at 14.6 req/s (loads differ: not judged)".
    """
    first = describe_load(group.baseline)
    title = f"Step {group.baseline.index + 1}: {first}"
    for number, step in enumerate(group.steps[1:], start=2):
        if step is None:
            title += f"; run {number}: no step of this load"
        elif step.index != group.baseline.index:
            title += f"; run {number}: its step {step.index + 1}, {describe_load(step)}"
        elif describe_load(step) != first:
            title += f"; run {number}: {describe_load(step)}"
    if not group.same_load:
        title += " (loads differ: not judged)"
    return title


def _step_table(group: AlignedStep) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("", no_wrap=True)
    table.add_column("run 1", justify="right", no_wrap=True)
    for number in range(2, len(group.steps) + 1):
        table.add_column(f"run {number}", justify="right", no_wrap=True)
        table.add_column("change", no_wrap=True)
    for row in compare_step(group.steps, judged=group.same_load):
        if row.baseline is None and all(change.value is None for change in row.changes):
            continue  # a figure no run has (goodput without an SLO, ITL of embeddings)
        cells: list[str | Text] = [row.label, format_value(row.baseline, row.unit)]
        for change in row.changes:
            cells.append(format_value(change.value, row.unit))
            cells.append(_change_text(row, change))
        table.add_row(*cells)
    return table


def _change_text(row: Row, change: Change) -> Text:
    amount = format_change(row, change)
    if not amount:
        return Text("")
    verdict = change.verdict
    text = Text(amount)
    if verdict:
        text.append(f" {verdict}", style=_STYLES.get(verdict, ""))
    return text


def _errors_line(steps: Sequence[StepReport | None]) -> Text | None:
    present = [step for step in steps if step is not None]
    codes = sorted({code for step in present for code in step.metrics.errors_by_code})
    if not codes:
        return None
    parts = []
    for code in codes:
        counts = []
        for step in steps:
            summary = None if step is None else step.metrics.errors_by_code.get(code)
            counts.append("-" if step is None else str(summary.count if summary else 0))
        parts.append(f"{code.value} {' -> '.join(counts)}")
    return Text("errors by code: " + "; ".join(parts))
