"""The console the commands print their results to."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from rich.console import Console

WIDE_COLUMNS: Final = 240
"""The width assumed when stdout is not a terminal and `COLUMNS` is not set."""


def output_console() -> Console:
    """A console on stdout, as wide as the terminal; when stdout is piped or logged, as wide as
    `COLUMNS` says, else `WIDE_COLUMNS`.

    Off a terminal rich assumes 80 columns, too narrow for a sweep's table: a CI log would get
    the table wrapped for no reader's screen. Tables are wrapped, never cut, whatever the width
    (`assay.reports.unclipped`). Nothing it prints can drive the terminal
    (`assay.cli.terminal`): server text is shown with its control characters escaped.
    """
    from assay.cli.terminal import terminal_console

    width = None
    if not os.environ.get("COLUMNS", "").strip().isdigit() and not sys.stdout.isatty():
        width = WIDE_COLUMNS
    return terminal_console(highlight=False, width=width)


class _Said:
    """Whether the command already told the user it was interrupted (one line, not two)."""

    interrupted = False


def say_interrupted(console: Console, text: str) -> None:
    """Print the command's own interruption line; `assay.cli.app` then adds none of its own."""
    console.print(text)
    _Said.interrupted = True


def interruption_said() -> bool:
    """Whether `say_interrupted` was called in this process."""
    return _Said.interrupted
