"""A dataset or trace read and checked before the run starts a target, then given the model.

The rows of `--data` or `--trace` (their local-media rule, the bounds on images and documents,
every row's shape) do not depend on the model the target serves; only the requests' `model`
field does. So the file is read once, before the embedded mock starts or any request is sent,
with the model the run was told or a stand-in, and the target's model is set afterwards
without reading it again. A bad file is then refused in the time its read takes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, assert_never

from assay.backend.served_models import RowModels
from assay.config import RunConfig
from assay.data.file_source import FileSource
from assay.data.session import FileSessions
from assay.data.source_config import source_of
from assay.data.trace import MooncakeTrace, PlainTrace

SourceAhead = FileSource | FileSessions | MooncakeTrace | PlainTrace
"""The sources read from a file: the ones worth reading before the target is up."""

_STAND_IN_MODEL: Final = "model"


@dataclass(frozen=True, slots=True)
class ReadAhead:
    """What `read_ahead` found: the file's source, or None when the run reads no file (its
    synthetic requests are built once the model is known)."""

    source: SourceAhead | None


def read_ahead(config: RunConfig) -> ReadAhead:
    """The run's `--data` or `--trace`, read and checked now (`DataError` for a bad row)."""
    source = config.source
    if source.data is None and source.trace is None:
        return ReadAhead(None)
    mix = config.target.mix()
    model = mix.names[0] if mix is not None else config.target.model or _STAND_IN_MODEL
    built = source_of(source, config.request, config.target.endpoint, model, config.seed, mix)
    match built:
        case FileSource() | FileSessions() | MooncakeTrace() | PlainTrace():
            return ReadAhead(built)
        case _:
            # A data or trace file always builds one of the above; anything else is built
            # again once the model is known, as before.
            return ReadAhead(None)


def with_model(source: SourceAhead, model: str) -> SourceAhead:
    """`source` with its requests naming `model`; the rows are shared, not read again.

    >>> from pathlib import Path
    >>> from assay.data.file_source import FileSourceConfig
    >>> rows = FileSource(FileSourceConfig(path=Path("p.jsonl"), model="model"), ())
    >>> with_model(rows, "served").config.model
    'served'
    """
    match source:
        case FileSource():
            return _file_with_model(source, model)
        case FileSessions() | PlainTrace():
            return replace(source, rows=_file_with_model(source.rows, model))
        case MooncakeTrace():
            if source.config.model == model:
                return source
            return replace(source, config=source.config.model_copy(update={"model": model}))
        case _:
            assert_never(source)


def _file_with_model(rows: FileSource, model: str) -> FileSource:
    if rows.config.model == model:
        return rows
    return replace(rows, config=rows.config.model_copy(update={"model": model}))


def rows_to_list(config: RunConfig, ahead: SourceAhead | None) -> RowModels | None:
    """The models `ahead`'s rows name, for `wait_for_model` to find listed before the load (as
    a traffic mix's are); None when no row names one, no file was read, or the target is the
    embedded mock (it answers every model name)."""
    if ahead is None or config.target.url is None:
        return None
    named = ahead.named_models()
    if named is None:
        return None
    flag = "--trace" if config.source.trace is not None else "--data"
    return RowModels(f"{flag} rows", named.unit, named)


__all__ = ["ReadAhead", "SourceAhead", "read_ahead", "rows_to_list", "with_model"]
