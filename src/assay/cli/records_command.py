"""`assay records`: find a run's record by any id that joins it to the server's view."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.exit_codes import EXIT_INVALID, EXIT_VALID
from assay.cli.guard import exit_guarded
from assay.run_folder import RECORDS_FILE as _RECORDS_FILE


def records(
    run_dir: Annotated[
        Path, typer.Argument(help="A run's output directory (or its records.jsonl).")
    ],
    wanted_id: Annotated[
        str,
        typer.Option(
            "--id",
            metavar="ID",
            help="assay's record id, the request id sent or echoed, the answer's id "
            "(chatcmpl-...), or the trace id.",
        ),
    ],
) -> None:
    """Print the records.jsonl line of each record that carries ID (one JSON line each).

    Exit code 0: found; 1: no record carries ID; 2: RUN_DIR holds no readable records.jsonl.
    A sweep runs the same request ids in every step: each step's record is printed.
    """
    from assay.errors import DataError
    from assay.records.lookup import find_lines

    def body() -> int:
        path = run_dir / _RECORDS_FILE if run_dir.is_dir() else run_dir
        if not path.is_file():
            raise DataError(f"{run_dir}: no {_RECORDS_FILE} (give the run's output directory)")
        wanted = wanted_id.strip()
        if not wanted:
            raise DataError("--id: an empty id finds nothing")
        skipped: list[int] = []
        found = 0
        for line in find_lines(path, wanted, skipped):
            typer.echo(line.text)
            found += 1
        if skipped:
            numbers = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
            typer.echo(f"warning: {path}: line {numbers} is not JSON; not searched", err=True)
        if found:
            return EXIT_VALID
        typer.echo(
            f"no record in {path} has the id {wanted!r} (searched: record ids, request ids sent "
            "and echoed, answer ids, trace ids)",
            err=True,
        )
        return EXIT_INVALID

    exit_guarded(body)
