"""`assay compare`: load runs, refuse different workloads unless forced, print the table."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from assay.errors import ConfigError, DataError
from assay.reports.charts import step_label
from assay.reports.compare import (
    Comparison,
    RunComparison,
    Verdict,
    compare_all,
    workload_differences,
)
from assay.reports.compare_html import write_compare_html
from assay.reports.html import load_report_file
from assay.reports.report import Report

_STYLES = {
    Verdict.better: "green",
    Verdict.worse: "bold red",
    Verdict.noise: "dim",
    Verdict.unmeasured: "dim",
}


def load_run(path: Path) -> Report:
    """A run's report from its folder (or the report.json itself)."""
    report_file = path / "report.json" if path.is_dir() else path
    if not report_file.is_file():
        raise DataError(f"{path}: no report.json (is it a run directory?)")
    return load_report_file(report_file)


def compare_command(runs: list[Path], *, force: bool, html: Path | None) -> int:
    """Print the comparison of `runs` against the first; exit 0 (2 for refused input)."""
    if len(runs) < 2:
        raise ConfigError("assay compare needs at least two runs")
    reports = [(str(path), load_run(path)) for path in runs]
    baseline_name, baseline = reports[0]
    for name, report in reports[1:]:
        differences = workload_differences(baseline, report)
        if differences and not force:
            raise ConfigError(
                f"{name} ran a different workload than {baseline_name} "
                f"({'; '.join(differences)}); --force compares them anyway"
            )
    console = Console(highlight=False)
    results = compare_all(reports)
    for step in baseline.steps:
        console.print(_step_table(step.index, step_label(step), baseline_name, results))
    for result in results:
        if result.unmatched_steps:
            steps = ", ".join(str(index + 1) for index in result.unmatched_steps)
            console.print(f"{result.name}: step(s) {steps} have no counterpart; not compared")
    console.print(
        "better/worse: beyond the noise the sample sizes allow (rates: Poisson counts; "
        "percentiles: order-statistic intervals; error rate: two-proportion z-test; all at ~95 %)"
    )
    if html is not None:
        write_compare_html(html, reports, results)
        console.print(f"wrote {html}")
    return 0


def _step_table(index: int, label: str, baseline: str, results: list[RunComparison]) -> Table:
    table = Table(title=f"Step {label}", title_justify="left", header_style="bold")
    table.add_column("figure")
    table.add_column(baseline, justify="right")
    for result in results:
        table.add_column(result.name, justify="right")
    rows: dict[str, list[Comparison]] = {}
    for result in results:
        for comparison in result.comparisons:
            if comparison.step == index:
                rows.setdefault(comparison.figure.name, []).append(comparison)
    for figure, comparisons in rows.items():
        first = comparisons[0]
        cells = [_value(first.baseline, first.figure.unit)]
        for comparison in comparisons:
            cells.append(_cell(comparison))
        table.add_row(figure, *cells)
    return table


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.2f} {unit}"


def _cell(comparison: Comparison) -> str:
    value = _value(comparison.value, comparison.figure.unit)
    change = comparison.change
    if comparison.verdict is Verdict.unmeasured:
        return value
    delta = "" if change is None else f" {change * 100:+.1f} %"
    style = _STYLES[comparison.verdict]
    return f"{value}{delta} [{style}]{comparison.verdict.value}[/{style}]"
