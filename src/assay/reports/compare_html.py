"""The HTML page of `assay compare --html`: the figures of every run as grouped bars per step."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import orjson
from pydantic import JsonValue

from assay.reports.charts import step_label
from assay.reports.compare import COMPARED, RunComparison, Verdict
from assay.reports.html import plotly_js
from assay.reports.report import Report

_COLOURS = {
    Verdict.better: "#2e7d32",
    Verdict.worse: "#c62828",
    Verdict.noise: "#57606a",
    Verdict.unmeasured: "#57606a",
}


def write_compare_html(
    path: Path, reports: Sequence[tuple[str, Report]], results: Sequence[RunComparison]
) -> None:
    """Write the comparison page: a chart per figure (a bar per run and step) and the table."""
    _, baseline = reports[0]
    labels: list[JsonValue] = [step_label(step) for step in baseline.steps]
    figures: list[dict[str, JsonValue]] = []
    for number, (figure, _) in enumerate(COMPARED):
        data: list[JsonValue] = []
        for run_index, (name, _report) in enumerate(reports):
            values: list[JsonValue] = []
            for step in baseline.steps:
                value: float | None = None
                for result in results:
                    for comparison in result.comparisons:
                        if comparison.step != step.index or comparison.figure != figure:
                            continue
                        if run_index == 0:
                            value = comparison.baseline
                        elif result is results[run_index - 1]:
                            value = comparison.value
                values.append(value)
            data.append({"type": "bar", "name": name, "x": labels, "y": values})
        layout: dict[str, JsonValue] = {
            "title": {"text": f"{figure.name} ({figure.unit})"},
            "barmode": "group",
            "height": 320,
            "margin": {"t": 44, "r": 12, "b": 40, "l": 56},
            "legend": {"orientation": "h", "y": -0.2},
        }
        figures.append({"id": f"figure-{number}", "data": data, "layout": layout})
    rows: list[str] = []
    for result in results:
        for comparison in result.comparisons:
            change = comparison.change
            colour = _COLOURS[comparison.verdict]
            rows.append(
                "<tr>"
                f"<td>{html.escape(result.name)}</td><td>{comparison.step + 1}</td>"
                f"<td>{html.escape(comparison.figure.name)}</td>"
                f"<td>{_fmt(comparison.baseline)}</td><td>{_fmt(comparison.value)}</td>"
                f"<td>{'n/a' if change is None else f'{change * 100:+.1f} %'}</td>"
                f'<td style="color:{colour}">{comparison.verdict.value}</td></tr>'
            )
    divs = "".join(f'<div class="plot" id="figure-{i}"></div>' for i in range(len(figures)))
    specs = orjson.dumps(figures).decode().replace("</", "<\\/")
    names = ", ".join(html.escape(name) for name, _ in reports)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>assay compare</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#1f2328}}
.grid{{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:12px}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #d0d7de;padding:3px 8px}}
</style><script>{plotly_js()}</script></head><body>
<h1>assay compare</h1><p>Baseline: the first run. Runs: {names}.</p>
<p>better/worse only beyond the noise the sample sizes allow (rates: Poisson counts;
percentiles: order-statistic intervals; error rate: two-proportion z-test; ~95 %).</p>
<div class="grid">{divs}</div>
<h2>All figures</h2><table><tr><th>run</th><th>step</th><th>figure</th><th>baseline</th>
<th>value</th><th>change</th><th>verdict</th></tr>{"".join(rows)}</table>
<script>const F={specs};for(const f of F){{Plotly.newPlot(f.id,f.data,f.layout,
{{responsive:true,displaylogo:false}});}}</script></body></html>
"""
    path.write_text(page, encoding="utf-8")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"
