"""When assay itself fails (a bug, not bad input): save the traceback, say where, exit 3.

Exit code 1 means INVALID RUN, so a crash must not use it (Python's default for an uncaught
exception). The traceback goes into the run folder when there is one, else a temporary file,
and the console gets one line instead of the traceback. A run that crashed after it wrote
records gets them merged into records.jsonl and a partial report marked crashed
(`merge_after_crash`); if that fails too, the records stay in its shards.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from assay import __version__
from assay.cli.exit_codes import EXIT_CRASH
from assay.file_writes import open_append
from assay.run_folder import CRASH_FILE, RECORDS_FILE, REPORT_FILE, SHARDS_DIR, shard_files

if TYPE_CHECKING:
    from assay.config import RunConfig


@dataclass(slots=True)
class CrashSite:
    """Where a crash's traceback should go: the run folder, once the command has one; and the
    run's settings and start, for the partial report of what it wrote before the crash."""

    folder: Path | None = None
    config: RunConfig | None = None
    started_at: datetime | None = None


def save_crash(error: BaseException, site: CrashSite) -> Path:
    """Write `error`'s traceback (with the version and command line) and return the file."""
    text = (
        f"assay {__version__} crashed at {datetime.now(UTC).isoformat()}\n"
        f"command: {' '.join(sys.argv)}\n\n" + "".join(traceback.format_exception(error))
    )
    if site.folder is not None and site.folder.is_dir():
        path = site.folder / CRASH_FILE
        try:
            with path.open("x", encoding="utf-8") as handle:  # never over an earlier file
                handle.write(text)
        except OSError:
            pass
        else:
            return path
    descriptor, name = tempfile.mkstemp(prefix="assay-crash-", suffix=".txt")
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return Path(name)


def crash_line(error: BaseException, saved: Path) -> str:
    """The one line printed for a crash: what kind of failure, and where its traceback is.

    >>> crash_line(RuntimeError("x"), Path("t.txt")).split("; ")[1]
    'the traceback is in t.txt (exit code 3)'
    """
    return (
        f"error: assay failed with an internal error ({type(error).__name__}, a bug in assay); "
        f"the traceback is in {saved} (exit code {EXIT_CRASH})"
    )


def merge_after_crash(site: CrashSite, saved: Path) -> list[str]:
    """Merge the records a crashed run left into records.jsonl and write its partial report
    (see `assay.benchmark.unfinished_run`); the lines that say so, for the console.

    Never raises: if the merge fails too, its traceback joins the crash's in `saved`, the
    shards stay as they are, and the line says where they are.
    """
    folder = site.folder
    if folder is None or not folder.is_dir():
        return []
    shards = folder / SHARDS_DIR
    try:
        from assay.benchmark.unfinished_run import finish_unfinished_run

        if (folder / REPORT_FILE).exists():
            return []  # the run wrote its report before it crashed
        if not shard_files(folder) and not (folder / RECORDS_FILE).exists():
            return []  # it crashed before any record
        crash_file = saved.name if saved.parent == folder else str(saved)
        finished = finish_unfinished_run(
            folder,
            crash_file=crash_file,
            config=site.config,
            started_at=site.started_at,
            finished_at=datetime.now(UTC),
        )
    except (Exception, KeyboardInterrupt) as error:
        _append(
            saved,
            "\nMerging the records after the crash failed too; they are kept in "
            f"{shards}:\n\n" + "".join(traceback.format_exception(error)),
        )
        return [
            f"crashed run: the records written before the crash are kept in {shards} "
            f"(merging them failed too: {type(error).__name__}; see {saved})"
        ]
    outcome = finished.report.totals.outcomes
    merged = finished.merged
    how = (
        f"{merged.records} records from {merged.shards} shard(s) merged into "
        f"{folder / RECORDS_FILE}"
        if merged is not None
        else f"from the {outcome.dispatched} records in {folder / RECORDS_FILE}"
    )
    if merged is not None and merged.lines_dropped:
        how += f" ({merged.lines_dropped} line(s) cut off mid-record dropped)"
    line = (
        f"CRASHED RUN: partial results, no verdict; {how}; the partial report, marked crashed, "
        f"is in {folder}/ ({finished.files})"
    )
    if finished.page_problem is not None:
        line += f"; report.html could not be built ({finished.page_problem})"
    if merged is not None and merged.kept:
        line += f"; {len(merged.kept)} shard(s) kept in {shards} (not merged whole)"
    _append(saved, f"\n{line}\n")
    return [line]


def _append(saved: Path, text: str) -> None:
    """Add `text` to the crash file (best effort: the console line says it all too)."""
    try:
        with open_append(saved) as handle:
            handle.write(text.encode())
    except OSError:
        pass


__all__ = ["CrashSite", "crash_line", "merge_after_crash", "save_crash"]
