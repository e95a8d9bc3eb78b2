"""Requests from a data file: its rows, loaded and checked once, served by index.

`FileSource.load` reads the file in its format (`file_formats`) and checks every row
(`prompt_rows`); a bad row stops the load before the run starts. A row's own fields go into its
request's body over the run's request fields.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from assay.core import GenerationRequest
from assay.data.dataset_files import split_hf_spec
from assay.data.file_formats import FileFormat, format_of, read_records
from assay.data.local_media import LocalMedia
from assay.data.prompt_rows import PromptRow, RowCheck
from assay.data.source import NO_AUDIO, RequestSettings, asked_limits, index_rng, request_id
from assay.data.token_count import FixedCount, TokenCount, sample_token_count
from assay.data.tokenizer_spec import load_tokenizer
from assay.errors import DataError
from assay.spec.endpoint import Carries
from assay.spec.source import PromptColumns


class FileSourceConfig(RequestSettings):
    """A prompt file and how to turn its rows into requests.

    `output_tokens` is used for rows without their own output length; `tokenizer`, when set,
    counts each prompt at load time (otherwise the count is left to the server's usage).
    """

    kind: Literal["file"] = "file"
    # A file, or `hf:NAME_OR_PATH[:SPLIT]` for a Hugging Face dataset.
    path: Path
    format: FileFormat | None = None
    columns: PromptColumns = PromptColumns()
    output_tokens: TokenCount = FixedCount(value=128)
    # Folders besides the file's own that the rows' local images may be read from.
    allowed_media_paths: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class FileSource:
    """The rows of one prompt file; request `i` is row `i % len(rows)`.

    A run sends each row once (`size()` is the row count) unless the source is `cycled()`:
    then it has no size and reuses the rows in file order, pass after pass, until the run's
    limits. Build it with `FileSource.load(config)`; the rows travel with it when it is
    pickled, so worker processes do not read the file again.
    """

    config: FileSourceConfig
    rows: tuple[PromptRow, ...]
    notes: tuple[str, ...] = ()
    cycle: bool = False
    # Whether any row has images: then every request's image count is recorded, 0 included.
    carries_images: bool = False
    # Whether any row names its model (the `model` column): its records then carry models.
    names_models: bool = False
    # What a row's number counts in messages: `line`, `item` (a JSON array) or `row`.
    row_unit: str = "line"

    @classmethod
    def load(cls, config: FileSourceConfig) -> FileSource:
        """Read and check the whole file now, so a bad row fails before the run starts."""
        file_format = config.format or format_of(config.path)
        records = read_records(config.path, file_format, config.columns)
        return cls.from_records(config, records, file_format)

    @classmethod
    def from_records(
        cls,
        config: FileSourceConfig,
        records: list[tuple[int, Mapping[str, object]]],
        file_format: FileFormat = "jsonl",
    ) -> FileSource:
        """Check rows already read (numbered by line, item or row) as a prompt file's rows."""
        tokenizer = load_tokenizer(config.tokenizer) if config.tokenizer is not None else None
        check = RowCheck(
            config.path,
            config.columns,
            config.endpoint,
            file_format,
            tokenizer,
            local_media(config.path, file_format, config.allowed_media_paths),
        )
        rows = tuple(
            row for line, values in records if (row := check.row(values, line)) is not None
        )
        if not rows:
            raise DataError(f"{config.path}: no prompts in the file")
        return cls(
            config=config,
            rows=rows,
            notes=check.notes(),
            carries_images=any(row.images for row in rows),
            names_models=any(row.model is not None for row in rows),
            row_unit=check.unit,
        )

    def size(self) -> int | None:
        """The number of rows; None when cycled (the rows come round again without end)."""
        return None if self.cycle else len(self.rows)

    def several_models(self) -> bool:
        """Whether its requests may name different models: a mix, or rows naming theirs."""
        return self.names_models or self.config.mix is not None

    def named_models(self) -> NamedModels | None:
        """The models its rows name, read from the rows already loaded (never the file again);
        None when no row names one (known from the load, no walk)."""
        return NamedModels(self.row_unit, self.rows) if self.names_models else None

    def cycled(self) -> FileSource:
        """The same rows, reused in file order pass after pass (`--data-cycle`)."""
        return replace(self, cycle=True)

    def body_fields(self) -> list[str]:
        """The row fields sent in request bodies, in first-seen order (for the run's notes)."""
        seen: dict[str, None] = {}
        for row in self.rows:
            seen.update(dict.fromkeys(row.extra_body))
        return list(seen)

    def request(self, index: int) -> GenerationRequest:
        """The request at `index`: row `index % size()`, with the index's own request id."""
        row = self.rows[index % len(self.rows)]
        config = self.config
        traits = config.endpoint.traits
        output_tokens: int | None = None
        if traits.generates:
            output_tokens = row.output_tokens
            if output_tokens is None:
                output_tokens = sample_token_count(
                    config.output_tokens, index_rng(config.seed, index)
                )
        messages = row.messages
        prompt = row.prompt
        match traits.carries:
            case Carries.messages:
                if messages is None:
                    messages = ({"role": "user", "content": prompt},)
                    prompt = None
            case Carries.prompt | Carries.inputs | Carries.documents:
                pass  # the row was checked to hold a prompt (and documents) for these
            case Carries.audio:
                raise DataError(NO_AUDIO)
        # The row's own model wins; then the mix's pick; then the run's one model.
        model = config.model_of(index) if row.model is None else row.model
        fields = {**config.extra_body, **row.extra_body} if row.extra_body else config.extra_body
        ignore_eos = config.ignore_eos
        if fields:
            output_tokens, ignore_eos = asked_limits(
                config.endpoint, fields, output_tokens, ignore_eos
            )
        return GenerationRequest(
            request_id=request_id(index),
            endpoint=config.endpoint,
            model=model,
            prompt=prompt,
            messages=messages,
            documents=row.documents,
            max_output_tokens=output_tokens,
            ignore_eos=ignore_eos,
            stream=config.stream and traits.streams,
            prompt_tokens=row.prompt_tokens,
            extra_body=fields,
            images=len(row.images) if self.carries_images else None,
        )


@dataclass(frozen=True, slots=True)
class NamedModels:
    """The models a file's rows name: iterating gives each naming row's model and number (its
    line, item or row: `unit`), in file order, repeats included, walked from the loaded rows
    each time. Nothing is collected here: whoever reads them keeps only what it needs (the
    check against `/v1/models` keeps the names the server does not list), so a file of a
    million rows builds no set of its names.

    >>> rows = (PromptRow(3, "hi", None, None, None, {}, model="a"),
    ...         PromptRow(4, "yo", None, None, None, {}))
    >>> list(NamedModels("line", rows))
    [('a', 3)]
    """

    unit: str
    rows: tuple[PromptRow, ...]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        for row in self.rows:
            if row.model is not None:
                yield row.model, row.line


def local_media(path: Path, file_format: FileFormat, allowed: tuple[Path, ...]) -> LocalMedia:
    """Where a data file's local images are read from: relative to its folder, and only inside
    it and the `allowed` folders. A Hugging Face dataset saved on disk counts as its folder;
    one from the hub has none (only `allowed` folders are read, relative to the current one)."""
    if file_format != "hf":
        return LocalMedia(path.parent, [path.parent, *allowed])
    name, _ = split_hf_spec(str(path))
    saved = Path(name)
    if saved.is_dir():
        return LocalMedia(saved, [saved, *allowed])
    return LocalMedia(Path.cwd(), allowed)


__all__ = ["FileSource", "FileSourceConfig", "NamedModels", "local_media"]
