"""Whether whatever reads standard output is still there (`assay report RUN | head -1`).

A reader that leaves is its own choice, not a failure of assay: the command stops writing to
standard output and ends with 141 (`assay.cli.exit_codes.EXIT_PIPE_CLOSED`), as a shell
reports a command ended by SIGPIPE. Python ignores SIGPIPE, so the write fails instead, as a
`BrokenPipeError`; rich's console and typer would each turn it into exit code 1, which for
`assay run` means INVALID RUN.
"""

from __future__ import annotations


class _Left:
    """Whether this process gave up on standard output because its reader left."""

    reader_left = False


def stdout_closed() -> bool:
    """Whether whatever reads standard output has gone (a pipe into `head` that has read its
    lines): writing to it then fails with `BrokenPipeError`, which is the reader's choice, not
    a crash. Linux and macOS report a pipe without a reader as an error condition to `poll`."""
    import select
    import sys

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLERR)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll, or no real stdout
        return False


def give_up_stdout() -> None:
    """Point standard output at the null device, so no later write (nor the interpreter's last
    flush) fails again, and remember that the reader left (`reader_left`)."""
    import os
    import sys

    _Left.reader_left = True
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdout: nothing to point elsewhere
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


def reader_left() -> bool:
    """Whether `give_up_stdout` was called in this process."""
    return _Left.reader_left


def forget_reader_left() -> None:
    """Start a command with standard output's reader there (a process may run several; a test
    does)."""
    _Left.reader_left = False


__all__ = ["forget_reader_left", "give_up_stdout", "reader_left", "stdout_closed"]
