"""When assay itself fails (a bug, not bad input): save the traceback, say where, exit 3.

Exit code 1 means INVALID RUN, so a crash must not use it (Python's default for an uncaught
exception). The traceback goes into the run folder when there is one, else a temporary file,
and the console gets one line instead of the traceback.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assay import __version__
from assay.cli.guard import EXIT_CRASH
from assay.run_folder import CRASH_FILE, SHARDS_DIR


@dataclass(slots=True)
class CrashSite:
    """Where a crash's traceback should go: the run folder, once the command has one."""

    folder: Path | None = None


def save_crash(error: BaseException, site: CrashSite) -> Path:
    """Write `error`'s traceback (with the version and command line) and return the file."""
    text = (
        f"assay {__version__} crashed at {datetime.now(UTC).isoformat()}\n"
        f"command: {' '.join(sys.argv)}\n\n" + "".join(traceback.format_exception(error))
    )
    if site.folder is not None and site.folder.is_dir():
        shards = site.folder / SHARDS_DIR
        if shards.is_dir() and any(shards.iterdir()):
            text += f"\nThe records written before the crash are kept in {shards}.\n"
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


__all__ = ["EXIT_CRASH", "CrashSite", "crash_line", "save_crash"]
