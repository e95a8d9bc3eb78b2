"""What a run's notes say about its data: anything the user should see before the load starts."""

from __future__ import annotations

from collections.abc import Iterator

from assay.data.file_source import FileSource
from assay.data.session import FileSessions
from assay.data.source import RequestSource
from assay.data.trace import MooncakeTrace, PlainTrace


def describe_source(source: RequestSource) -> Iterator[str]:
    """One line per fact worth showing: rows not used, columns not used, the row fields that go
    into request bodies."""
    rows: FileSource | None = None
    if isinstance(source, FileSource):
        rows = source
    elif isinstance(source, FileSessions | PlainTrace):
        rows = source.rows
    elif isinstance(source, MooncakeTrace):
        yield from source.notes
    if rows is not None:
        yield from rows.notes
        fields = rows.body_fields()
        if fields:
            yield f"data: row fields sent in request bodies: {', '.join(fields)}"


__all__ = ["describe_source"]
