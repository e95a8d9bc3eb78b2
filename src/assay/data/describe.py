"""What a run's notes say about its data: anything the user should see before the load starts."""

from __future__ import annotations

from collections.abc import Iterator

from assay.data.file_source import FileSource
from assay.data.source import RequestSource


def describe_source(source: RequestSource) -> Iterator[str]:
    """One line per fact worth showing, e.g. the row fields that go into request bodies."""
    if isinstance(source, FileSource):
        yield from source.notes
        fields = source.body_fields()
        if fields:
            yield f"data: row fields sent in request bodies: {', '.join(fields)}"


__all__ = ["describe_source"]
