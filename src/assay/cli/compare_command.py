"""`assay compare`: stored runs side by side, refusing runs of different workloads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from assay.errors import ConfigError
from assay.reports import load_report
from assay.reports.compare import workload_differences
from assay.reports.compare_console import render_comparison
from assay.reports.compare_html import write_compare_html


def compare_runs(run_dirs: Sequence[Path], *, force: bool, html: Path | None = None) -> int:
    """Load the runs, check their workloads agree (unless `force`), print the comparison."""
    if len(run_dirs) < 2:
        raise ConfigError("compare needs at least two run directories")
    reports = [load_report(run_dir) for run_dir in run_dirs]
    differences = workload_differences(reports)
    console = Console(highlight=False)
    if differences and not force:
        raise ConfigError(
            "the runs' workloads differ, so their figures are not comparable: "
            + "; ".join(differences)
            + " (--force compares them anyway)"
        )
    for difference in differences:
        console.print(f"warning: workloads differ: {difference}", style="yellow")
    labels = [str(run_dir) for run_dir in run_dirs]
    render_comparison(reports, labels, console)
    if html is not None:
        write_compare_html(html, reports, labels)
        console.print(f"wrote {html}", highlight=False)
    return 0
