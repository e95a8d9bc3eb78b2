"""`assay run`: the progress display around the run, the summary after it, the exit code."""

from __future__ import annotations

from rich.console import Console

from assay.benchmark.from_config import constraints_of
from assay.benchmark.run import run_from_config
from assay.cli.progress import ProgressDisplay
from assay.config import RunConfig
from assay.load_launcher import LoadProcesses
from assay.reports import render_summary
from assay.reports.server_section import render_server_metrics
from assay.run_folder import RunFolder

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_INTERRUPTED = 130


def run_and_report(
    config: RunConfig, started: LoadProcesses | None = None, folder: RunFolder | None = None
) -> int:
    """Run, print the summary and where the files are; the exit code for the outcome."""
    console = Console(highlight=False)
    steps = None if config.profile == "sweep" else 1
    max_seconds = constraints_of(config).max_seconds
    with ProgressDisplay(console, steps=steps, max_seconds=max_seconds) as display:
        outcome = run_from_config(
            config, note=display.note, on_progress=display.update, started=started, folder=folder
        )
    render_summary(outcome.report, console)
    render_server_metrics(outcome.report, console)
    console.print(
        f"files: {outcome.output_dir}/ (report.json, report.html, records.jsonl, summary.csv)"
    )
    if outcome.interrupted:
        console.print("interrupted: the partial report and records were written")
        return EXIT_INTERRUPTED
    return EXIT_VALID if outcome.report.validity.valid else EXIT_INVALID
