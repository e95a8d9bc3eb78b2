"""The exit codes of every `assay` command: 0 a valid run, 1 an INVALID run, 2 bad usage or
input, 3 a crash of assay itself (Python's own 1 would read as INVALID RUN), 130 interrupted,
141 standard output closed by its reader (as a shell reports a command ended by SIGPIPE)."""

from typing import Final

EXIT_VALID: Final = 0
EXIT_INVALID: Final = 1
EXIT_USAGE: Final = 2
EXIT_CRASH: Final = 3
EXIT_INTERRUPTED: Final = 130
EXIT_PIPE_CLOSED: Final = 141

__all__ = [
    "EXIT_CRASH",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_PIPE_CLOSED",
    "EXIT_USAGE",
    "EXIT_VALID",
]
