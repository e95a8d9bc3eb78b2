"""`assay report`: a run's HTML page, (re)built from the files the run wrote."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.guard import EXIT_VALID, exit_guarded


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run's output directory.")],
) -> None:
    """(Re)build RUN_DIR/report.html from its report.json and records.jsonl.

    Works for any stored run, and for a revalidated one (RUN_DIR/revalidated).
    """
    from assay.errors import DataError
    from assay.reports.html import write_html

    def body() -> int:
        if not run_dir.is_dir():
            raise DataError(f"{run_dir}: not a folder (give the run's output directory)")
        # The report loader says what is missing or wrong in the folder.
        path = write_html(run_dir)
        typer.echo(f"wrote {path}")
        return EXIT_VALID

    exit_guarded(body)
