"""`assay records`: find a run's record by any id that joins it to the server's view."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

import re
from pathlib import Path
from typing import Annotated

import typer

from assay.cli.exit_codes import EXIT_INVALID, EXIT_VALID
from assay.cli.guard import exit_guarded
from assay.run_folder import RECORDS_FILE

# vLLM's engine ids, as its spans and logs show them: the answer's id with the prompt's index
# (`cmpl-<sent id>-0`, `resp_<hex>_0`), its prefix around the request id assay sent.
_ENGINE_SUFFIX = re.compile(r"^(?P<answer>(?:chatcmpl-|cmpl-|resp_)(?P<sent>.+?))[-_]\d+$")
_ANSWER_PREFIX = re.compile(r"^(?:chatcmpl-|cmpl-|resp_)(?P<sent>.+)$")


def candidate_ids(wanted: str) -> list[str]:
    """The ids a record may carry for `wanted`, most specific first: `wanted` itself, then,
    for a server's engine id, the answer id it extends and the request id inside it.

    >>> candidate_ids("cmpl-f84aacf4-cebb-5a8b-949f-c956265a7d0f-0")
    ['cmpl-f84aacf4-cebb-5a8b-949f-c956265a7d0f-0', 'cmpl-f84aacf4-cebb-5a8b-949f-c956265a7d0f', \
'f84aacf4-cebb-5a8b-949f-c956265a7d0f']
    >>> candidate_ids("resp_1a2b_0")
    ['resp_1a2b_0', 'resp_1a2b', '1a2b']
    >>> candidate_ids("req-00000042")
    ['req-00000042']
    """
    found = [wanted]
    engine = _ENGINE_SUFFIX.match(wanted)
    if engine is not None:
        found += [engine["answer"], engine["sent"]]
    else:
        answer = _ANSWER_PREFIX.match(wanted)
        if answer is not None:
            found.append(answer["sent"])
    return list(dict.fromkeys(found))


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
            "(chatcmpl-...), a server's engine id (cmpl-...-0, resp_..._0), or the trace id.",
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
        path = run_dir / RECORDS_FILE if run_dir.is_dir() else run_dir
        if not path.is_file():
            raise DataError(f"{run_dir}: no {RECORDS_FILE} (give the run's output directory)")
        wanted = wanted_id.strip()
        if not wanted:
            raise DataError("--id: an empty id finds nothing")
        skipped: list[int] = []
        found = 0
        # The most specific id that any record carries: `cmpl-<id>-0` finds the record whose
        # answer is `cmpl-<id>`, or else the one that sent `<id>`.
        for candidate in candidate_ids(wanted):
            skipped.clear()
            for line in find_lines(path, candidate, skipped):
                typer.echo(line.text)
                found += 1
            if found:
                break
        if skipped:
            numbers = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
            typer.echo(f"warning: {path}: line {numbers} is not JSON; not searched", err=True)
        if found:
            return EXIT_VALID
        typer.echo(
            f"no record in {path} has the id {wanted!r} (searched: record ids, request ids sent "
            "and echoed, answer ids and the engine ids made of them, trace ids)",
            err=True,
        )
        return EXIT_INVALID

    exit_guarded(body)
