"""The one exception hierarchy, for misuse and bad input; server faults are values, not these.

AssayError
├── ConfigError          a bad flag, option or config file
├── DataError            a bad prompt file or tokenizer file (with the line where it applies)
├── ValidatorLoadError   a `module:name` that does not name a usable validator
├── ServerNotReady       the target cannot be benchmarked (nothing listening, no models)
└── OutputError          the run's files cannot be written (a full disk, a read-only file system)
"""

from __future__ import annotations


class AssayError(Exception):
    """Base of every error assay raises on purpose; its message is meant for the user."""


class ConfigError(AssayError):
    """A bad flag, option or config file."""


class DataError(AssayError):
    """A bad prompt file, data spec or tokenizer file."""


class ValidatorLoadError(AssayError):
    """A `package.module:name` that does not exist or is not a validator."""


class ServerNotReady(AssayError):
    """The target is not there or cannot serve the benchmark."""


class OutputError(AssayError):
    """The run's records or report cannot be written (a full disk, a read-only file system)."""


def first_assay_error(error: BaseException) -> AssayError | None:
    """The `AssayError` behind `error`, also when task groups wrapped it in exception groups
    (a full disk met inside a request's task), so it can still be told as one line.

    >>> first_assay_error(ExceptionGroup("tasks", [ValueError(), OutputError("disk full")]))
    OutputError('disk full')
    """
    if isinstance(error, AssayError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = first_assay_error(inner)
            if found is not None:
                return found
    return None


__all__ = [
    "AssayError",
    "ConfigError",
    "DataError",
    "OutputError",
    "ServerNotReady",
    "ValidatorLoadError",
    "first_assay_error",
]
