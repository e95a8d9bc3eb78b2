"""The steps of `assay run` once its flags are read: the checks made before any process starts,
the claim of the run folder, the start of the load, and the console around the run (progress,
then the summary and where the files are); the exit code says the outcome."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import typer

from assay.cli.exit_codes import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_VALID
from assay.cli.run_overrides import read_run_config
from assay.spec.capacity import Capacity
from assay.spec.load import Sweep

if TYPE_CHECKING:
    from rich.console import Console

    from assay.benchmark.run import RunOutcome
    from assay.benchmark.source_ahead import ReadAhead
    from assay.cli.crash import CrashSite
    from assay.config import RunConfig
    from assay.load_launcher import LoadProcesses
    from assay.run_folder import RunFolder


def run_from_flags(flags: Mapping[str, object], site: CrashSite) -> int:
    """Read the settings, check them against this machine and what they would send (the data
    file read and checked), claim the run folder, then run."""
    from assay.run_folder import claim_run_folder

    config = read_run_config(flags)
    warn_about_machine_limits(config)
    ahead = check_what_is_sent(config)
    # Before any process starts the run folder is claimed (a folder that cannot be written,
    # or holds a run, is refused).
    claimed_at = datetime.now(UTC)
    folder = claim_run_folder(config.output.dir, claimed_at)
    try:
        # From the claim on, a Ctrl-C or SIGTERM anywhere leaves no empty folder behind, and a
        # crash leaves the records merged with a partial report (`merge_after_crash`).
        site.folder, site.config, site.started_at = folder.path, config, claimed_at
        return start_and_report(config, folder, ahead)
    finally:
        folder.remove_if_empty()


def warn_about_machine_limits(config: RunConfig) -> None:
    """Refuse what this machine cannot do (`ConfigError`); warn about what it does poorly."""
    from assay.config import check_machine_limits

    for warning in check_machine_limits(config):
        typer.echo(f"warning: {warning}", err=True)


def check_what_is_sent(config: RunConfig) -> ReadAhead:
    """Refuse a bound a request would break (images, documents, sizes) and a bad data or trace
    file, before any process or target starts: the refusal takes the time of the check alone.
    The file read here is the one the run sends from (it is not read again)."""
    from assay.benchmark.preflight import check_source
    from assay.benchmark.source_ahead import read_ahead

    check_source(config)
    return read_ahead(config)


def start_and_report(config: RunConfig, folder: RunFolder, ahead: ReadAhead | None = None) -> int:
    """Start the load processes (Ray actors are started by the run), run and report."""
    from assay.config.limits import load_processes
    from assay.load_launcher import start_load_processes

    if config.engine.kind == "ray":
        return run_and_report(config, None, folder, ahead)
    # The load processes import the run path (`run_and_report` imports it) while this process
    # does the same.
    with start_load_processes(load_processes(config)) as started:
        return run_and_report(config, started, folder, ahead)


def run_and_report(
    config: RunConfig,
    started: LoadProcesses | None = None,
    folder: RunFolder | None = None,
    ahead: ReadAhead | None = None,
) -> int:
    """Run with its progress shown, print the summary and where the files are; the exit code
    for the outcome."""
    from assay.benchmark.run import run_from_config
    from assay.cli.console import output_console
    from assay.cli.progress import ProgressDisplay
    from assay.load.collector import collector_on

    collector_on()  # off while the command line started (`assay.cli.app.main`); on for the load
    console = output_console()
    limit = config.constraints_in_force().max_seconds
    with ProgressDisplay(console, steps=_progress_steps(config), max_seconds=limit) as shown:
        outcome = run_from_config(
            config,
            note=shown.note,
            on_progress=shown.update,
            started=started,
            folder=folder,
            ahead=ahead,
        )
    print_outcome(outcome, console)
    return exit_code(outcome)


def _progress_steps(config: RunConfig) -> int | None:
    """How many steps the progress counts (None: a sweep over rates, whose steps are found as
    it runs)."""
    match config.load:
        case Sweep(concurrencies=levels) if levels:
            return len(levels)
        case Sweep() | Capacity():
            return None
        case _:
            return 1


def print_outcome(outcome: RunOutcome, console: Console) -> None:
    """The summary, the injected faults caught, the server's metrics and where the files are."""
    from assay.benchmark.run import injected_faults_caught
    from assay.reports import render_summary
    from assay.reports.server_section import render_server_metrics

    render_summary(outcome.report, console)
    if outcome.report.capacity is not None:
        from assay.reports.capacity import capacity_lines

        for line in capacity_lines(outcome.report.capacity):
            console.print(line, highlight=False)
    caught = injected_faults_caught(outcome.report)
    if caught is not None:
        console.print(caught, highlight=False)
    render_server_metrics(outcome.report, console)
    console.print(
        f"files: {outcome.output_dir}/ (report.json, report.html, records.jsonl, summary.csv)"
    )
    if outcome.interrupted:
        from assay.cli.console import say_interrupted

        say_interrupted(console, "interrupted: the partial report and records were written")


def exit_code(outcome: RunOutcome) -> int:
    """130 for an interrupted run, else 0 for a valid run and 1 for an INVALID one."""
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_VALID if outcome.report.validity.valid else EXIT_INVALID


__all__ = [
    "check_what_is_sent",
    "exit_code",
    "print_outcome",
    "run_and_report",
    "run_from_flags",
    "start_and_report",
]
