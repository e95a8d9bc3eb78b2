"""`assay report`: a run's HTML page, (re)built from the files the run wrote."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli.exit_codes import EXIT_VALID
from assay.cli.guard import exit_guarded
from assay.run_folder import (
    CRASH_FILE,
    HTML_FILE,
    RECORDS_FILE,
    REPORT_FILE,
    run_in_progress,
    shard_files,
)

if TYPE_CHECKING:
    from assay.reports.latency_samples import Samples
    from assay.reports.report import Report


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run's output directory.")],
    definitions: Annotated[
        bool,
        typer.Option(
            "--definitions",
            help="Also print TTFT, TPOT, ITL and E2E as vLLM, SGLang, GuideLLM, AIPerf and "
            "inference-perf define them, beside assay's own (from records.jsonl).",
        ),
    ] = False,
) -> None:
    """(Re)build RUN_DIR/report.html from its report.json and records.jsonl.

    Works for any stored run, and for a revalidated one (RUN_DIR/revalidated). A run that ended
    without its report (assay crashed, or the run was killed) gets one built from the records it
    left: its shards merged into records.jsonl, and report.json, summary.csv and report.html
    marked crashed (a traceback file is there) or unfinished, never valid.
    """
    from assay.errors import DataError
    from assay.reports.html import write_html

    def body() -> int:
        if not run_dir.is_dir():
            raise DataError(f"{run_dir}: not a folder (give the run's output directory)")
        if _left_unfinished(run_dir):
            return _finish(run_dir)
        # The report loader says what is missing or wrong in the folder.
        try:
            if definitions:
                shown, samples = _print_definitions(run_dir)
                path = write_html(run_dir, shown, samples=samples)
            else:
                path = write_html(run_dir)
        except OSError as error:
            written = error.filename is not None and (
                Path(error.filename).resolve().parent == run_dir.resolve()
            )
            if not written:
                raise  # not the page's write (reading the run's files raises `DataError`)
            # The page is written beside its name, then renamed: nothing partial is left.
            raise DataError(
                f"cannot write {run_dir / HTML_FILE}: {error.strerror or error}"
            ) from None
        typer.echo(f"wrote {path}")
        return EXIT_VALID

    exit_guarded(body)


def _left_unfinished(run_dir: Path) -> bool:
    """Whether `run_dir` holds what a run left without its report: shards, or the records and
    traceback of a run that crashed after it merged them."""
    if (run_dir / REPORT_FILE).exists():
        return False
    crashed_after_merge = (run_dir / RECORDS_FILE).is_file() and (run_dir / CRASH_FILE).is_file()
    return bool(shard_files(run_dir)) or crashed_after_merge


def _finish(run_dir: Path) -> int:
    """Merge what an unfinished run left and write its partial report; say what was done."""
    from assay.benchmark.unfinished_run import finish_unfinished_run
    from assay.errors import DataError
    from assay.printable import printable

    if run_in_progress(run_dir):
        raise DataError(
            f"{run_dir} is the folder of a run still going (its process holds it); its "
            "report is written when it ends"
        )
    crashed = (run_dir / CRASH_FILE).is_file()
    _drop_half_merge(run_dir)
    try:
        finished = finish_unfinished_run(
            run_dir, crash_file=CRASH_FILE if crashed else None, config=None
        )
    except OSError as error:
        raise DataError(
            f"cannot write the report of {run_dir}: {error.strerror or error} "
            "(the shards are kept as they were)"
        ) from None
    merged = finished.merged
    if merged is not None:
        dropped = (
            f"; {merged.lines_dropped} line(s) cut off mid-record dropped"
            if merged.lines_dropped
            else ""
        )
        typer.echo(
            f"merged {merged.records} records from {merged.shards} shard(s) into "
            f"{run_dir / RECORDS_FILE}{dropped}"
        )
    incomplete = finished.report.incomplete
    assert incomplete is not None  # a report of what a run left is always marked
    typer.echo(
        f"{incomplete.state.upper()} RUN, partial results and no verdict: "
        f"{printable(finished.report.validity.reasons[0])}"
    )
    typer.echo(f"wrote {run_dir}/ {finished.files}")
    if finished.page_problem is not None:
        raise DataError(f"report.html could not be built: {finished.page_problem}")
    return EXIT_VALID


def _print_definitions(run_dir: Path) -> "tuple[Report, Samples | None]":
    """Print the run's figures under each peer's definitions (computed when report.json has
    none: a run stored before they were kept); return the report with them, and the page's
    latency samples when records.jsonl was read for them (one pass serves both)."""
    from assay.reports.definitions import definitions_text, with_found
    from assay.reports.loader import load_report
    from assay.reports.readback import read_back

    report = load_report(run_dir)
    samples = None
    records = run_dir / RECORDS_FILE
    if all(step.definitions is None for step in report.steps) and records.is_file():
        found = read_back(records, report)
        report, samples = with_found(report, found.definitions), found.samples
    lines = definitions_text(report)
    if not lines:
        typer.echo("no completed streamed answer: no figures to compare")
    for line in lines:
        typer.echo(line)
    return report, samples


def _drop_half_merge(run_dir: Path) -> None:
    """Remove the records.jsonl a merge cut short left beside the shards it came from (a full
    disk stopped it, in a version of assay that did not remove it): it holds only their first
    bytes, so the shards are merged again in its place."""
    from assay.records.shards import repeats_shards

    records = run_dir / RECORDS_FILE
    shards = shard_files(run_dir)
    if shards and repeats_shards(records, shards):
        records.unlink()
        typer.echo(
            f"{records} held only the start of the shards (a merge cut short): merging them again"
        )
