"""The source a run draws requests from, as one tagged config value, and how to build it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from assay.data.file_source import FileSource, FileSourceConfig
from assay.data.media import ImageSize
from assay.data.session import FileSessions, SyntheticSessions
from assay.data.source import RequestSource
from assay.data.synthetic import SyntheticSource
from assay.data.token_count import parse_token_count
from assay.data.trace import TraceConfig, load_trace
from assay.errors import ConfigError, DataError
from assay.spec.endpoint import Endpoint
from assay.spec.model_mix import ModelMix
from assay.spec.sections import Request, Source
from assay.spec.source import PromptColumns

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


def source_of(
    source: Source,
    request: Request,
    endpoint: Endpoint,
    model: str,
    seed: int,
    mix: ModelMix | None = None,
) -> RequestSource:
    """Synthetic prompts or sessions, the rows of `source.data` (read and checked here, as
    sessions with `multi_turn`), or the requests of `source.trace`; with a `mix`, each request
    (or session) names the model the mix picks for it."""
    think_time_ns = round(source.think_time_ms * 1_000_000)
    match source_config_of(source, request, endpoint, model, seed, mix):
        case TraceConfig() as trace:
            return load_trace(trace)
        case FileSourceConfig() as file_config:
            rows = FileSource.load(file_config)
            if source.data_cycle:
                rows = rows.cycled()
            return FileSessions.of(rows, think_time_ns) if source.multi_turn else rows
        case SyntheticSource() as synthetic:
            if source.turns > 1:
                return SyntheticSessions(synthetic, source.turns, think_time_ns)
            return build_source(synthetic)


def source_config_of(
    source: Source,
    request: Request,
    endpoint: Endpoint,
    model: str,
    seed: int,
    mix: ModelMix | None = None,
) -> SyntheticSource | FileSourceConfig | TraceConfig:
    """What `source_of` builds, not built yet: checking it costs no file read."""
    common: dict[str, Any] = {
        "endpoint": endpoint,
        "model": model,
        "mix": mix,
        "ignore_eos": request.ignore_eos,
        "stream": request.stream,
        "seed": seed,
        "tokenizer": source.tokenizer,
        "extra_body": request.fields(),
    }
    if source.trace is not None:
        return TraceConfig(path=source.trace, block_tokens=source.trace_block_tokens, **common)
    output_tokens = parse_token_count(source.output_tokens)
    if source.data is not None:
        columns = PromptColumns.model_validate(source.data_columns)
        return FileSourceConfig(
            path=source.data,
            columns=columns,
            output_tokens=output_tokens,
            allowed_media_paths=source.allowed_media_paths,
            **common,
        )
    try:
        images = parse_token_count(source.images)
    except DataError as error:
        raise ConfigError(f"--images {source.images}: {error}") from None
    try:
        image_size = ImageSize.parse(source.image_size)
    except ValueError as error:
        raise ConfigError(f"--image-size: {error}") from None
    return SyntheticSource(
        **common,
        images=images,
        image_size=image_size,
        image_format=source.image_format,
        audio_seconds=source.audio_seconds,
        prompt_tokens=parse_token_count(source.prompt_tokens),
        output_tokens=output_tokens,
        documents=source.documents,
        document_tokens=parse_token_count(source.document_tokens),
        shared_prefix_tokens=source.shared_prefix_tokens,
    )


__all__ = ["SourceConfig", "build_source", "source_config_of", "source_of"]
