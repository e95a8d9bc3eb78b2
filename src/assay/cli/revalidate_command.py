"""`assay revalidate`: a stricter (or looser) definition of usable, applied after the fact."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from assay.benchmark.revalidate import REVALIDATED_DIR, revalidate
from assay.reports import render_summary

EXIT_VALID = 0
EXIT_INVALID = 1


def revalidate_run(
    run_dir: Path,
    *,
    validators: tuple[str, ...],
    strict: bool,
    default_validators: bool,
    allow_missing_done: bool,
    max_error_rate: float | None,
) -> int:
    """Revalidate, print the new summary and what changed; the exit code of the new verdict."""
    console = Console(highlight=False)
    result = revalidate(
        run_dir,
        extra=validators,
        strict=strict,
        use_defaults=default_validators,
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
        f"{result.newly_completed} errored -> completed, {result.recoded} errored under "
        f"another code; files: {result.output_dir}/"
    )
    return EXIT_VALID if result.report.validity.valid else EXIT_INVALID
