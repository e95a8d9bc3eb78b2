"""The source a run draws requests from, as one tagged config value, and how to build it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from assay.data.file_source import FileSource, FileSourceConfig
from assay.data.source import RequestSource
from assay.data.synthetic import SyntheticSource

SourceConfig = Annotated[SyntheticSource | FileSourceConfig, Field(discriminator="kind")]
"""Either synthetic requests or a prompt file, told apart by `kind` in JSON config."""


def build_source(config: SyntheticSource | FileSourceConfig) -> RequestSource:
    """The request source a config describes; a prompt file is read and checked here.

    >>> build_source(SyntheticSource(model="m")).request(0).request_id
    'req-00000000'
    """
    match config:
        case SyntheticSource():
            return config
        case FileSourceConfig():
            return FileSource.load(config)


__all__ = ["SourceConfig", "build_source"]
