"""The folder a run writes into: claimed atomically, never shared, never overwritten.

Rules (see the README's Output section):
- the default folder `assay-results/run-<UTC time to the millisecond>` is created with an
  exclusive `mkdir`; when two runs start in the same millisecond the later one takes the same
  name with `-2`, `-3`, ... so no two runs ever share a folder;
- an `--output-dir` may exist (empty, or holding other files) but must not hold a run: a folder
  with any of `RUN_ENTRIES` is refused, never overwritten;
- assay deletes only what it created: its own shard files, and on a failed start the folders it
  made, and only while they are empty;
- the run's process holds a lock on its folder (`flock`, where the system has it) until it ends,
  so `assay report` can tell the folder of a run still going from one a crash or a kill left.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Final

from assay.errors import ConfigError

DEFAULT_PARENT: Final = Path("assay-results")
# The one spelling of every name a run writes into its folder.
REPORT_FILE: Final = "report.json"
HTML_FILE: Final = "report.html"
RECORDS_FILE: Final = "records.jsonl"
SUMMARY_FILE: Final = "summary.csv"
SHARDS_DIR: Final = "shards"
REVALIDATED_DIR: Final = "revalidated"
CRASH_FILE: Final = "crash-traceback.txt"
RUN_ENTRIES: Final = (
    REPORT_FILE,
    HTML_FILE,
    RECORDS_FILE,
    SUMMARY_FILE,
    SHARDS_DIR,
    REVALIDATED_DIR,
    CRASH_FILE,
)
"""Names a run writes into its folder; a folder holding any of them already holds a run."""
_MAX_ATTEMPTS: Final = 1000
SHARD_NAME: Final = re.compile(r"records\.step(\d+)\.p(\d+)\.jsonl")
"""The name of a shard (`shard_name`): its step and its load process."""


def shard_name(step: int, process: int) -> str:
    """The file in `SHARDS_DIR` where load process `process` writes the records of step `step`.

    >>> shard_name(1, 0)
    'records.step001.p000.jsonl'
    """
    return f"records.step{step:03d}.p{process:03d}.jsonl"


@dataclass(slots=True)
class RunFolder:
    """A claimed run folder and what assay created to claim it (removed again if left empty)."""

    path: Path
    created: list[Path] = field(default_factory=list)
    # The open folder whose lock says a run is going (see `run_in_progress`); None once released.
    held: int | None = None

    @property
    def shards(self) -> Path:
        """Where the load processes write their records until the run merges them."""
        return self.path / SHARDS_DIR

    def drop_shards(self, merged: Iterable[Path]) -> None:
        """Delete the shard files merged into records.jsonl, then `shards/` once it is empty
        (a shard no step reported, say of a process that died, stays with its folder)."""
        for shard in merged:
            shard.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.shards.rmdir()

    def release(self) -> None:
        """Let go of the folder's lock (the end of the process lets go of it too)."""
        held, self.held = self.held, None
        if held is not None:
            with contextlib.suppress(OSError):
                os.close(held)

    def remove_if_empty(self) -> None:
        """Remove the folders this claim created, deepest first, but only the empty ones: a run
        that failed to start leaves nothing behind, one that wrote anything keeps it."""
        for folder in reversed(self.created):
            # Not there, or not empty (something was written): either way it stays as it is.
            with contextlib.suppress(OSError):
                folder.rmdir()


def shard_files(run_dir: Path) -> list[Path]:
    """The shard files in `run_dir/shards/`, in step and then process order (a file there of
    another name, or a link, is not a shard).

    >>> import tempfile
    >>> shards = Path(tempfile.mkdtemp()) / SHARDS_DIR
    >>> shards.mkdir()
    >>> for name in ("records.step001.p000.jsonl", "records.step000.p001.jsonl", "notes.txt"):
    ...     (shards / name).touch()
    >>> [path.name for path in shard_files(shards.parent)]
    ['records.step000.p001.jsonl', 'records.step001.p000.jsonl']
    """
    folder = run_dir / SHARDS_DIR
    if not folder.is_dir():
        return []
    found: list[tuple[int, int, Path]] = []
    for path in folder.iterdir():
        named = SHARD_NAME.fullmatch(path.name)
        if named is not None and path.is_file() and not path.is_symlink():
            found.append((int(named[1]), int(named[2]), path))
    return [path for _, _, path in sorted(found)]


def _hold(folder: Path) -> int | None:
    """The folder opened and locked for this process (released when the process ends, however
    it ends); None where the system has no `flock` or the folder cannot be locked."""
    try:
        import fcntl  # Unix only
    except ImportError:
        return None
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def run_in_progress(folder: Path) -> bool:
    """Whether a process of a run still holds `folder` (see `claim_run_folder`).

    >>> import tempfile
    >>> from datetime import UTC
    >>> claimed = claim_run_folder(Path(tempfile.mkdtemp()) / "a", datetime(2026, 1, 1, tzinfo=UTC))
    >>> run_in_progress(claimed.path)
    True
    >>> claimed.release()
    >>> run_in_progress(claimed.path)
    False
    """
    try:
        import fcntl  # Unix only
    except ImportError:
        return False  # nothing to ask
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)  # closing lets go of a lock taken here
    return False


def default_run_name(now: datetime) -> str:
    """`run-YYYYmmdd-HHMMSS-mmm`: the start time to the millisecond.

    >>> from datetime import UTC
    >>> default_run_name(datetime(2026, 12, 2, 9, 5, 1, 250000, tzinfo=UTC))
    'run-20261202-090501-250'
    """
    return f"run-{now:%Y%m%d-%H%M%S}-{now.microsecond // 1000:03d}"


def claim_run_folder(requested: Path | None, now: datetime) -> RunFolder:
    """Create the run's folder (and its `shards/`) or raise a `ConfigError` saying why not.

    >>> import tempfile
    >>> from datetime import UTC
    >>> parent = Path(tempfile.mkdtemp())
    >>> first = claim_run_folder(parent / "a", datetime(2026, 1, 1, tzinfo=UTC))
    >>> sorted(p.name for p in first.path.iterdir())
    ['shards']
    """
    if requested is None:
        return _claim_fresh(DEFAULT_PARENT / default_run_name(now))
    folder = RunFolder(requested)
    if requested.is_dir():
        held = [name for name in RUN_ENTRIES if (requested / name).exists()]
        if held:
            raise ConfigError(
                f"--output-dir {_shown(requested)} already holds a run ({', '.join(held)}); "
                "assay never overwrites one: choose a new folder or move the old run away"
            )
    elif requested.exists():
        raise ConfigError(f"--output-dir {_shown(requested)} is a file, not a folder")
    else:
        folder.created.extend(_make_parents(requested))
    try:
        folder.shards.mkdir()
        folder.created.append(folder.shards)
    except FileExistsError:
        folder.remove_if_empty()
        raise ConfigError(
            f"--output-dir {_shown(requested)} is in use by another run that started just now"
        ) from None
    except OSError as error:
        folder.remove_if_empty()
        raise ConfigError(_cannot_write(requested, error)) from None
    except BaseException:  # a Ctrl-C or SIGTERM while claiming: leave nothing behind
        folder.remove_if_empty()
        raise
    folder.held = _hold(folder.path)
    return folder


def fresh_folder(wanted: Path) -> Path:
    """Create and return `wanted`, or when it exists the first free `wanted-2`, `wanted-3`, ...

    The exclusive `mkdir` makes this safe against another process doing the same at once.

    >>> import tempfile
    >>> parent = Path(tempfile.mkdtemp())
    >>> [fresh_folder(parent / "revalidated").name for _ in range(3)]
    ['revalidated', 'revalidated-2', 'revalidated-3']
    """
    for attempt in range(1, _MAX_ATTEMPTS + 1):
        candidate = wanted if attempt == 1 else wanted.with_name(f"{wanted.name}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as error:
            raise ConfigError(_cannot_write(candidate, error)) from None
        return candidate
    raise ConfigError(f"no free folder name like {wanted} after {_MAX_ATTEMPTS} tries")


def _claim_fresh(wanted: Path) -> RunFolder:
    folder = RunFolder(wanted, _make_parents(wanted.parent))
    try:
        folder.path = fresh_folder(wanted)
        folder.created.append(folder.path)
        folder.shards.mkdir()
        folder.created.append(folder.shards)
    except (ConfigError, OSError) as error:
        folder.remove_if_empty()
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(_cannot_write(folder.path, error)) from None
    except BaseException:  # a Ctrl-C or SIGTERM while claiming: leave nothing behind
        folder.remove_if_empty()
        raise
    folder.held = _hold(folder.path)
    return folder


def _make_parents(path: Path) -> list[Path]:
    """Create `path` and its missing parents; the ones created, outermost first."""
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(_cannot_write(path, error)) from None
    return list(reversed(missing))


def _cannot_write(path: Path, error: OSError) -> str:
    return f"cannot write the run's files in {_shown(path)}: {error.strerror or error}"


def _shown(path: Path) -> str:
    return str(path) if str(path) != "." else ". (the current folder)"


__all__ = [
    "CRASH_FILE",
    "DEFAULT_PARENT",
    "RUN_ENTRIES",
    "SHARDS_DIR",
    "SHARD_NAME",
    "RunFolder",
    "claim_run_folder",
    "default_run_name",
    "fresh_folder",
    "run_in_progress",
    "shard_files",
]
