"""`assay revalidate`: a stricter (or looser) definition of usable, applied after the fact."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from assay.cli.exit_codes import EXIT_INVALID, EXIT_VALID
from assay.cli.guard import exit_guarded


def revalidate(
    run_dir: Annotated[Path, typer.Argument(help="A run's output directory.")],
    validator: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME|MODULE:ATTR",
            help="Add a validator: a built-in name or package.module:name.",
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Use the strict chains.")] = False,
    no_default_validators: Annotated[
        bool, typer.Option("--no-default-validators", help="Only the --validator ones.")
    ] = False,
    allow_missing_done: Annotated[
        bool,
        typer.Option(
            "--allow-missing-done", help="A stream with a finish_reason passes without [DONE]."
        ),
    ] = False,
    max_error_rate: Annotated[
        float | None, typer.Option(help="Validity threshold [the run's].")
    ] = None,
) -> None:
    """Re-apply a validator chain to a run's stored responses and write a new report beside it.

    Only validators' verdicts are judged again: a transport or handler failure (no usable
    answer arrived) stays as it was.
    """

    def body() -> int:
        from assay.benchmark.revalidate import REVALIDATED_DIR
        from assay.benchmark.revalidate import revalidate as revalidate_records
        from assay.cli.console import output_console
        from assay.reports import render_summary

        if max_error_rate is not None:
            checked_max_error_rate(max_error_rate)
        console = output_console()
        result = revalidate_records(
            run_dir,
            extra=tuple(validator or ()),
            strict=strict,
            use_defaults=not no_default_validators,
            allow_missing_done=allow_missing_done,
            max_error_rate=max_error_rate,
        )
        render_summary(result.report, console)
        if result.output_dir.name != REVALIDATED_DIR:
            console.print(
                f"{REVALIDATED_DIR}/ already exists: this revalidation went to "
                f"{result.output_dir.name}/ (none is ever overwritten)"
            )
        console.print(
            f"revalidated: {result.newly_errored} completed -> errored, "
            f"{result.newly_completed} errored -> completed, "
            f"{recoded_phrase(result.recoded, result.recodings)}; files: {result.output_dir}/"
        )
        return EXIT_VALID if result.report.validity.valid else EXIT_INVALID

    exit_guarded(body)


def checked_max_error_rate(rate: float) -> float:
    """`rate` when a run could be given it (`--max-error-rate`, the run spec's own field and
    bounds), else a `ConfigError` saying why.

    >>> checked_max_error_rate(-1)
    Traceback (most recent call last):
    ...
    assay.errors.ConfigError: --max-error-rate: Input should be greater than or equal to 0
    """
    from pydantic import ValidationError

    from assay.config.run_config import describe_validation_error
    from assay.errors import ConfigError
    from assay.spec.sections import Validation

    try:
        return Validation(max_error_rate=rate).max_error_rate
    except ValidationError as error:
        names = {"max_error_rate": "--max-error-rate"}
        raise ConfigError(describe_validation_error(error, names)) from None


def recoded_phrase(count: int, recodings: Mapping[tuple[str, str], int]) -> str:
    """How many errored answers are now errored under another code, naming the codes.

    >>> recoded_phrase(0, {})
    '0 errored under another code'
    >>> recoded_phrase(3, {("empty_response", "missing_finish_reason"): 3})
    '3 errored under another code (3 empty_response -> missing_finish_reason)'
    """
    if not recodings:
        return f"{count} errored under another code"
    moves = sorted(recodings.items(), key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{n} {was} -> {now}" for (was, now), n in moves)
    return f"{count} errored under another code ({named})"
