"""The HTML page of `assay compare --html`: a grouped bar chart per figure and the full table."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from pydantic import JsonValue

from assay.file_writes import replace_with
from assay.reports.chart_base import clear_of_modebar, step_label
from assay.reports.compare import (
    AlignedStep,
    Row,
    align_steps,
    capacity_lines,
    compare_step,
    format_change,
    format_value,
    model_groups,
    run_states,
)
from assay.reports.compare_console import NOISE_NOTE
from assay.reports.html import plotly_js, script_json
from assay.reports.models import mix_notes, shown_name
from assay.reports.report import Report

_COLOURS = {"better": "#2e7d32", "worse": "#c62828", "~": "#57606a", "": "#57606a"}
# The unit each kind of figure is shown in.
_UNITS = {"fraction": "%", "rate": "/s", "ms": "ms"}


def aligned_label(group: AlignedStep) -> str:
    """A compared step's label, naming every run's load where they differ:
    "3 constant 16.6/s" or "3 constant 16.6/s | run 2: 3 constant 14.6/s"."""
    first = step_label(group.baseline)
    label = first
    for number, step in enumerate(group.steps[1:], start=2):
        theirs = "none" if step is None else step_label(step)
        if theirs != first:
            label += f" | run {number}: {theirs}"
    return label


def write_compare_html(path: Path, reports: Sequence[Report], labels: Sequence[str]) -> None:
    """Write the comparison of `reports` (the first is the baseline) as one offline page."""
    groups, unmatched = align_steps(reports)
    steps_rows: list[tuple[str, list[Row]]] = [
        (aligned_label(group), compare_step(group.steps, judged=group.same_load))
        for group in groups
    ]
    figures = _figures(steps_rows, labels)
    # A traffic mix's models, each compared as its step is: in the table, not the charts.
    models_rows = [
        (
            f"{aligned_label(group)} · model {shown_name(name)}",
            compare_step(seen.steps, judged=seen.same_load),
        )
        for group in groups
        for name, seen in model_groups(group)
    ]
    table_rows: list[str] = []
    for step, rows in [*steps_rows, *models_rows]:
        for row in rows:
            unit = _UNITS.get(row.unit, row.unit)
            cells = [f"<td>{html.escape(step)}</td><td>{html.escape(titled(row.label, unit))}</td>",
                     f"<td>{html.escape(format_value(row.baseline, row.unit))}</td>"]  # fmt: skip
            for change in row.changes:
                amount = format_change(row, change)
                colour = _COLOURS.get(change.verdict, "#57606a")
                cells.append(
                    f"<td>{html.escape(format_value(change.value, row.unit))}"
                    + (f" ({html.escape(amount)})" if amount else "")
                    + f' <b style="color:{colour}">{html.escape(change.verdict)}</b></td>'
                )
            table_rows.append("<tr>" + "".join(cells) + "</tr>")
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in [*unmatched, *mix_notes(reports)])
    states = "".join(
        f'<p style="color:#c62828"><b>{html.escape(state)}</b></p>'
        for state in run_states(reports, labels)
    )
    head = "".join(f"<th>{html.escape(label)}</th>" for label in labels)
    divs = "".join(f'<div class="plot" id="{spec["id"]}"></div>' for spec in figures)
    specs = script_json(figures)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>assay compare</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#1f2328}}
.grid{{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:12px}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #d0d7de;padding:3px 8px}}
</style><script>{plotly_js()}</script></head><body>
<h1>assay compare</h1><p>The first run is the baseline. Steps are aligned by offered load;
steps of different loads are shown side by side, both loads named, and not judged.</p>
{states}
{f"<ul>{notes}</ul>" if notes else ""}
{"".join(f"<p>{html.escape(line)}</p>" for line in capacity_lines(reports))}
<p>{html.escape(NOISE_NOTE)}</p>
<div class="grid">{divs}</div>
<h2>All figures</h2><table><tr><th>step</th><th>figure</th>{head}</tr>{"".join(table_rows)}
</table>
<script>const F={specs};for(const f of F){{Plotly.newPlot(f.id,f.data,f.layout,
{{responsive:true,displaylogo:false}});}}</script></body></html>
"""
    replace_with(path, page)


def _figures(
    steps_rows: Sequence[tuple[str, list[Row]]], labels: Sequence[str]
) -> list[dict[str, JsonValue]]:
    """A grouped bar chart per figure: a bar per run, a group per step."""
    if not steps_rows:
        return []
    # One line per run's load on the axis: "3 constant 38.8/s", "run 2: 3 constant 54.3/s".
    steps: list[JsonValue] = [step.replace(" | ", "<br>") for step, _ in steps_rows]
    figures: list[dict[str, JsonValue]] = []
    for number, row in enumerate(steps_rows[0][1]):
        same = [rows[number] for _, rows in steps_rows]
        if all(r.baseline is None and all(c.value is None for c in r.changes) for r in same):
            continue  # a figure no run has (goodput without an SLO): no empty frame
        data: list[JsonValue] = []
        for run, label in enumerate(labels):
            values: list[JsonValue] = []
            for figure in same:
                value = figure.baseline if run == 0 else figure.changes[run - 1].value
                # An error rate in %, as the table and the console show it.
                scale = 100.0 if row.unit == "fraction" else 1.0
                values.append(None if value is None else value * scale)
            data.append({"type": "bar", "name": label, "x": steps, "y": values})
        unit = _UNITS.get(row.unit, row.unit)
        figures.append(
            {
                "id": f"figure-{number}",
                "data": data,
                "layout": {
                    "title": {"text": titled(row.label, unit)},
                    "barmode": "group",
                    "height": 360,
                    "margin": {"t": 44, "r": 12, "b": 40, "l": 56},
                    "xaxis": {"automargin": True, "tickangle": 0},
                    "legend": {
                        "orientation": "h",
                        "yref": "container",
                        "y": 0,
                        "yanchor": "bottom",
                    },
                },
            }
        )
    return [{**spec, "layout": clear_of_modebar(spec["layout"])} for spec in figures]


def titled(label: str, unit: str) -> str:
    """A figure's name with its unit, unless the name already ends with it.

    >>> titled("TTFT p50", "ms"), titled("goodput req/s", "/s"), titled("documents", "")
    ('TTFT p50 (ms)', 'goodput req/s', 'documents')
    """
    if not unit or label.endswith(unit):
        return label
    return f"{label} ({unit})"
