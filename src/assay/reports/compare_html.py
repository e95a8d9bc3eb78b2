"""The HTML page of `assay compare --html`: a grouped bar chart per figure and the full table."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from pydantic import JsonValue

from assay.file_writes import replace_with
from assay.reports.charts import step_label
from assay.reports.compare import Row, compare_step
from assay.reports.compare_console import NOISE_NOTE
from assay.reports.html import plotly_js, script_json
from assay.reports.report import Report

_COLOURS = {"better": "#2e7d32", "worse": "#c62828", "~": "#57606a", "": "#57606a"}


def write_compare_html(path: Path, reports: Sequence[Report], labels: Sequence[str]) -> None:
    """Write the comparison of `reports` (the first is the baseline) as one offline page."""
    shared = min(len(report.steps) for report in reports)
    steps_rows: list[tuple[str, list[Row]]] = [
        (
            step_label(reports[0].steps[index]),
            compare_step([report.steps[index] for report in reports]),
        )
        for index in range(shared)
    ]
    figures = _figures(steps_rows, labels)
    table_rows: list[str] = []
    for step, rows in steps_rows:
        for row in rows:
            cells = [f"<td>{html.escape(step)}</td><td>{html.escape(row.label)}</td>",
                     f"<td>{_fmt(row.baseline)} {html.escape(row.unit)}</td>"]  # fmt: skip
            for change in row.changes:
                relative = "" if change.relative is None else f" ({change.relative * 100:+.1f} %)"
                colour = _COLOURS.get(change.verdict, "#57606a")
                cells.append(
                    f"<td>{_fmt(change.value)}{relative} "
                    f'<b style="color:{colour}">{html.escape(change.verdict)}</b></td>'
                )
            table_rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{html.escape(label)}</th>" for label in labels)
    divs = "".join(f'<div class="plot" id="{spec["id"]}"></div>' for spec in figures)
    specs = script_json(figures)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>assay compare</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#1f2328}}
.grid{{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:12px}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #d0d7de;padding:3px 8px}}
</style><script>{plotly_js()}</script></head><body>
<h1>assay compare</h1><p>The first run is the baseline.</p>
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
    steps: list[JsonValue] = [step for step, _ in steps_rows]
    figures: list[dict[str, JsonValue]] = []
    for number, row in enumerate(steps_rows[0][1]):
        data: list[JsonValue] = []
        for run, label in enumerate(labels):
            values: list[JsonValue] = []
            for _, rows in steps_rows:
                same = rows[number]
                values.append(same.baseline if run == 0 else same.changes[run - 1].value)
            data.append({"type": "bar", "name": label, "x": steps, "y": values})
        figures.append(
            {
                "id": f"figure-{number}",
                "data": data,
                "layout": {
                    "title": {"text": f"{row.label} ({row.unit})" if row.unit else row.label},
                    "barmode": "group",
                    "height": 320,
                    "margin": {"t": 44, "r": 12, "b": 40, "l": 56},
                    "legend": {"orientation": "h", "y": -0.2},
                },
            }
        )
    return figures


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"
