"""`assay compare`: stored runs side by side, refusing runs of different workloads."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.exit_codes import EXIT_VALID
from assay.cli.guard import exit_guarded


def compare(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="Two or more run directories; the first is the baseline.")
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Compare runs even when their workloads differ.")
    ] = False,
    html: Annotated[
        Path | None, typer.Option(help="Also write the comparison as an HTML page here.")
    ] = None,
) -> None:
    """Compare stored runs step by step: each figure against the first run, better or worse, or
    within the noise their sample sizes allow.
    """

    def body() -> int:
        from assay.cli.console import output_console
        from assay.errors import ConfigError, OutputError
        from assay.reports import load_report
        from assay.reports.compare import workload_differences
        from assay.reports.compare_console import render_comparison
        from assay.reports.compare_html import write_compare_html

        if len(run_dirs) < 2:
            raise ConfigError("compare needs at least two run directories")
        if html is not None:
            _refuse_unwritable(html)
        reports = [load_report(run_dir) for run_dir in run_dirs]
        differences = workload_differences(reports)
        console = output_console()
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
            try:
                write_compare_html(html, reports, labels)
            except OSError as error:
                # Nothing is left at `html`: the page is written beside it, then renamed.
                raise OutputError(f"--html {html}: cannot be written: {_why(error)}") from None
            console.print(f"wrote {html}", highlight=False)
        return EXIT_VALID

    exit_guarded(body)


def _refuse_unwritable(path: Path) -> None:
    """Refuse an --html PATH that cannot be a file, before the comparison is printed."""
    from assay.errors import OutputError

    if path.is_dir():
        raise OutputError(f"--html {path}: cannot be written: it is a folder (name a file)")
    if not path.parent.is_dir():
        raise OutputError(
            f"--html {path}: cannot be written: its folder {path.parent} does not exist"
        )


def _why(error: OSError) -> str:
    """An OS error in words, without the path the message names already."""
    return error.strerror or type(error).__name__
