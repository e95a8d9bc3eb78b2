"""Timestamped traces for replay: each request has its own send time, taken from the trace.

Two JSONL formats, told apart by their first row:
- Mooncake (`timestamp` in ms, `input_length`, `output_length`, `hash_ids`): a prompt is built of
  blocks of `block_tokens` tokens (512, as Mooncake hashes them), one block of deterministic text
  per hash id, so requests that share a hash id really share that block of their prompt prefix.
  A last block shorter than `block_tokens` is the request's own text.
- Plain: `timestamp` (ms) and a prompt row as in a prompt file (`prompt` or `messages`,
  optionally `output_tokens`; other keys go into the request body).

Two CSV formats, told apart by their header (a file whose first line is a CSV header, not JSON):
- Azure LLM inference traces (`TIMESTAMP`, `ContextTokens`, `GeneratedTokens`; the 2023 and
  2024 releases): `TIMESTAMP` an ISO date and time, as the files write it.
- BurstGPT (`Timestamp` in seconds from the trace's start, `Model`, `Request tokens`,
  `Response tokens`, `Total tokens`, `Log Type`).
A CSV row is replayed as a Mooncake row without hash blocks: a prompt of its context (request)
tokens of its own deterministic text, asking for its generated (response) tokens. A row asking
for no output (a request that failed in the original service: BurstGPT keeps them with 0
response tokens) cannot be replayed; it is left out and counted in the trace's `notes`.

Rows are replayed in timestamp order (a stable sort); offsets count from the first timestamp.
"""

from __future__ import annotations

import csv
import functools
import io
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal, Protocol, runtime_checkable

from pydantic import Field, JsonValue

from assay.core import GenerationRequest
from assay.data.file_formats import jsonl_records, read_regular_file
from assay.data.file_source import FileSource, FileSourceConfig, NamedModels
from assay.data.row_values import within_request_limit
from assay.data.source import NO_AUDIO, RequestSettings, asked_limits, request_id
from assay.data.tokenizer import Tokenizer
from assay.data.tokenizer_spec import load_tokenizer
from assay.errors import DataError
from assay.spec.endpoint import Carries
from assay.spec.limits import MAX_HASH_IDS

MOONCAKE_BLOCK_TOKENS: Final = 512
_NS_PER_MS: Final = 1_000_000


@runtime_checkable
class TimedSource(Protocol):
    """A source whose requests carry their own send times (offsets from the first, in ns)."""

    def request(self, index: int) -> GenerationRequest:
        """The request at `index`."""
        ...

    def size(self) -> int | None:
        """How many requests the trace holds."""
        ...

    def offset_ns(self, index: int) -> int:
        """When request `index` is due, from the trace's first request, at speed 1."""
        ...


class TraceConfig(RequestSettings):
    """A trace file and how its rows become requests."""

    kind: Literal["trace"] = "trace"
    path: Path
    block_tokens: int = Field(default=MOONCAKE_BLOCK_TOKENS, gt=0)


@dataclass(frozen=True, slots=True)
class MooncakeRow:
    """One checked Mooncake row."""

    line: int
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


TraceFormat = Literal["mooncake", "azure", "burstgpt"]
"""The formats replayed as token counts (Mooncake rows, and CSV rows read as Mooncake rows)."""


@dataclass(frozen=True, slots=True)
class MooncakeTrace:
    """Mooncake rows with their offsets; prompts are built from hash blocks on demand.

    `format` names the file's format (an Azure or BurstGPT row is a row without hash blocks);
    `notes` says what of the file was not replayed, and why.
    """

    config: TraceConfig
    rows: tuple[MooncakeRow, ...]
    offsets: tuple[int, ...]
    format: TraceFormat = "mooncake"
    notes: tuple[str, ...] = ()

    def size(self) -> int | None:
        return len(self.rows)

    def several_models(self) -> bool:
        return self.config.mix is not None

    def named_models(self) -> NamedModels | None:
        """None: a Mooncake, Azure or BurstGPT row names no model."""
        return None

    def offset_ns(self, index: int) -> int:
        return self.offsets[index]

    def request(self, index: int) -> GenerationRequest:
        row = self.rows[index]
        config = self.config
        text = build_prompt(row, config.block_tokens, config.seed, _tokenizer(config.tokenizer))
        traits = config.endpoint.traits
        prompt: str | None = None
        messages: tuple[dict[str, JsonValue], ...] | None = None
        match traits.carries:
            case Carries.messages:
                messages = ({"role": "user", "content": text},)
            case Carries.prompt | Carries.inputs:
                prompt = text
            case Carries.documents:
                _mooncake_fits(config)  # refused when the trace was loaded
            case Carries.audio:
                raise DataError(NO_AUDIO)
        limit, ignore_eos = asked_limits(
            config.endpoint, config.extra_body, row.output_length, config.ignore_eos
        )
        return GenerationRequest(
            request_id=request_id(index),
            endpoint=config.endpoint,
            model=config.model_of(index),
            prompt=prompt,
            messages=messages,
            max_output_tokens=limit if traits.generates else None,
            ignore_eos=ignore_eos,
            stream=config.stream and traits.streams,
            prompt_tokens=row.input_length,
            extra_body=config.extra_body,
        )


@dataclass(frozen=True, slots=True)
class PlainTrace:
    """A prompt file whose rows carry timestamps."""

    rows: FileSource
    offsets: tuple[int, ...]

    def size(self) -> int | None:
        return len(self.offsets)

    def several_models(self) -> bool:
        return self.rows.several_models()

    def named_models(self) -> NamedModels | None:
        """The models its rows name (see `FileSource.named_models`)."""
        return self.rows.named_models()

    def offset_ns(self, index: int) -> int:
        return self.offsets[index]

    def request(self, index: int) -> GenerationRequest:
        return self.rows.request(index)


def load_trace(config: TraceConfig) -> MooncakeTrace | PlainTrace:
    """Read and check the whole trace now, so a bad row fails before the run starts."""
    text = _text(config.path)
    if _is_csv(text):
        return _csv_trace(text, config)
    rows = jsonl_records(text, config.path)
    if not rows:
        raise DataError(f"{config.path}: no requests in the trace")
    timed = sorted(
        ((_timestamp(values, config.path, line), line, values) for line, values in rows),
        key=lambda item: item[0],
    )
    first_ms = timed[0][0]
    offsets = tuple(round((ms - first_ms) * _NS_PER_MS) for ms, _, _ in timed)
    if "input_length" in rows[0][1]:
        _mooncake_fits(config)
        mooncake = tuple(_mooncake_row(values, line, config) for _, line, values in timed)
        _tokenizer(config.tokenizer)  # a bad tokenizer fails here, not in a load process
        return MooncakeTrace(config=config, rows=mooncake, offsets=offsets)
    prompts = FileSource.from_records(
        FileSourceConfig(format="jsonl", **config.model_dump(exclude={"kind", "block_tokens"})),
        [
            (line, {k: v for k, v in values.items() if k != "timestamp"})
            for _, line, values in timed
        ],
    )
    return PlainTrace(rows=prompts, offsets=offsets)


def build_prompt(row: MooncakeRow, block_tokens: int, seed: int, tokenizer: Tokenizer) -> str:
    """The prompt of a Mooncake row: one block of text per hash id, `block_tokens` tokens each
    (the last one holds what is left of `input_length`)."""
    texts: list[str] = []
    remaining = row.input_length
    for position, hash_id in enumerate(row.hash_ids):
        if remaining <= 0:
            break
        tokens = min(block_tokens, remaining)
        if tokens == block_tokens:
            rng = random.Random(f"assay:block:{seed}:{block_tokens}:{hash_id}")
        else:
            rng = random.Random(f"assay:tail:{seed}:{hash_id}:{tokens}")
        text = tokenizer.sample_text(tokens, rng)
        # A space between blocks keeps each block's words whole, so every block counts alone.
        texts.append(text if position == 0 else f" {text}")
        remaining -= tokens
    if remaining > 0:
        # More input than hash blocks: the rest is this request's own, after its blocks.
        rng = random.Random(f"assay:rest:{seed}:{row.line}")
        rest = tokenizer.sample_text(remaining, rng)
        texts.append(rest if not texts else f" {rest}")
    return "".join(texts)


def _text(path: Path) -> str:
    try:
        return read_regular_file(path, "--trace", "trace file").decode("utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"{path}: no such trace file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: cannot read the trace file: {error}") from None


def _is_csv(text: str) -> bool:
    """Whether the trace is a CSV file: its first non-blank line is not a JSON object."""
    for raw in text.split("\n"):
        if raw.strip():
            return not raw.lstrip().startswith("{")
    return False


# The columns of each CSV format: (timestamp, context tokens, generated tokens), as written.
_AZURE_COLUMNS: Final = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_BURSTGPT_COLUMNS: Final = ("Timestamp", "Request tokens", "Response tokens")
_EPOCH: Final = datetime(1970, 1, 1)


def _csv_trace(text: str, config: TraceConfig) -> MooncakeTrace:
    """An Azure or BurstGPT trace, told apart by its header, as Mooncake rows without blocks."""
    reader = csv.reader(io.StringIO(text))
    header = [name.strip() for name in next(reader, [])]
    trace_format: TraceFormat
    if all(name in header for name in _AZURE_COLUMNS):
        trace_format, columns = "azure", _AZURE_COLUMNS
    elif all(name in header for name in _BURSTGPT_COLUMNS):
        trace_format, columns = "burstgpt", _BURSTGPT_COLUMNS
    else:
        raise DataError(
            f"{config.path}: a CSV trace needs the columns of an Azure LLM inference trace "
            f"({', '.join(_AZURE_COLUMNS)}) or of BurstGPT ({', '.join(_BURSTGPT_COLUMNS)}); "
            f"its header is {', '.join(header) or 'empty'}"
        )
    _mooncake_fits(config)
    at, context, generated = (header.index(name) for name in columns)
    timed: list[tuple[int, MooncakeRow]] = []
    failed = 0
    for line, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        where = f"{config.path}, line {line}"
        if len(cells) != len(header):
            raise DataError(f"{where}: {len(cells)} cells, the header names {len(header)}")
        output_tokens = _csv_count(cells[generated], where, columns[2], allow_zero=True)
        if output_tokens == 0:
            failed += 1  # a request that failed where the trace was taken: nothing to ask for
            continue
        ns = _csv_ns(cells[at], where, columns[0], trace_format)
        row = MooncakeRow(line, _csv_count(cells[context], where, columns[1]), output_tokens, ())
        timed.append((ns, row))
    if not timed:
        raise DataError(f"{config.path}: no requests in the trace")
    timed.sort(key=lambda item: item[0])
    first_ns = timed[0][0]
    notes: tuple[str, ...] = ()
    if failed:
        notes = (
            f"data: {failed:,} row(s) of {config.path} ask for 0 {columns[2]} (requests that "
            "failed where the trace was taken) and are not replayed",
        )
    _tokenizer(config.tokenizer)  # a bad tokenizer fails here, not in a load process
    return MooncakeTrace(
        config=config,
        rows=tuple(row for _, row in timed),
        offsets=tuple(ns - first_ns for ns, _ in timed),
        format=trace_format,
        notes=notes,
    )


def _csv_ns(cell: str, where: str, column: str, trace_format: TraceFormat) -> int:
    """A row's time in whole ns: Azure's ISO date and time (from the epoch, a naive time read
    as UTC), BurstGPT's seconds from the trace's start."""
    value = cell.strip()
    if trace_format == "azure":
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise DataError(
                f"{where}: {column!r} must be a date and time such as "
                f"2023-11-16 18:15:46.6805900, got {value!r}"
            ) from None
        epoch = _EPOCH if when.tzinfo is None else _EPOCH.replace(tzinfo=UTC)
        return (when - epoch) // timedelta(microseconds=1) * 1000
    seconds = _float(value)
    if seconds is None or not 0 <= seconds < float("inf"):
        raise DataError(f"{where}: {column!r} must be a number of seconds >= 0, got {value!r}")
    return round(seconds * 1e9)


def _float(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _csv_count(cell: str, where: str, column: str, *, allow_zero: bool = False) -> int:
    value = cell.strip()
    try:
        count = int(value)
    except ValueError:
        # Some exports write counts as floats ("12.0"): an integral float is the same count.
        number = _float(value)
        if number is None or not number.is_integer():
            raise DataError(f"{where}: {column!r} must be a whole number, got {value!r}") from None
        count = int(number)
    if count < (0 if allow_zero else 1):
        least = 0 if allow_zero else 1
        raise DataError(f"{where}: {column!r} must be an integer >= {least}, got {value!r}")
    return within_request_limit(count, where, column)


def _timestamp(values: Mapping[str, object], path: Path, line: int) -> float:
    value = values.get("timestamp")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise DataError(
            f"{path}, line {line}: 'timestamp' must be a number of milliseconds >= 0, got {value!r}"
        )
    return float(value)


def _mooncake_fits(config: TraceConfig) -> None:
    """Refuse a Mooncake trace for an endpoint whose body it cannot fill."""
    match config.endpoint.traits.carries:
        case Carries.messages | Carries.prompt | Carries.inputs:
            return
        case Carries.audio:
            raise DataError(
                f"{config.path}: the transcriptions endpoint uploads synthetic audio "
                "(--audio-seconds); a trace has no audio to send"
            )
        case Carries.documents:
            raise DataError(
                f"{config.path}: a Mooncake trace row holds one prompt length, not the query "
                f"and documents of a {config.endpoint} request (use prompt rows with 'query' "
                f"and 'documents' and a 'timestamp')"
            )


def _mooncake_row(values: Mapping[str, object], line: int, config: TraceConfig) -> MooncakeRow:
    where = f"{config.path}, line {line}"
    known = {"timestamp", "input_length", "output_length", "hash_ids"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise DataError(
            f"{where}: unknown Mooncake field {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known))})"
        )
    input_length = _count(values.get("input_length"), where, "input_length")
    output_length = _count(values.get("output_length"), where, "output_length")
    raw_ids = values.get("hash_ids", [])
    if not isinstance(raw_ids, list):
        raise DataError(f"{where}: 'hash_ids' must be a list of integers >= 0")
    if len(raw_ids) > MAX_HASH_IDS:
        raise DataError(
            f"{where}: 'hash_ids' names {len(raw_ids):,} blocks, above the {MAX_HASH_IDS:,} "
            "one row may name (see docs/security.md)"
        )
    if not all(type(item) is int and item >= 0 for item in raw_ids):
        raise DataError(f"{where}: 'hash_ids' must be a list of integers >= 0")
    return MooncakeRow(line, input_length, output_length, tuple(raw_ids))


def _count(value: object, where: str, key: str) -> int:
    if type(value) is not int or value < 1:
        raise DataError(f"{where}: {key!r} must be an integer >= 1, got {value!r}")
    return within_request_limit(value, where, key)


@functools.cache
def _tokenizer(spec: str | None) -> Tokenizer:
    # One per process and spec: loading a tokenizer file is not free, prompts are built often.
    return load_tokenizer(spec)


__all__ = [
    "MOONCAKE_BLOCK_TOKENS",
    "MooncakeRow",
    "MooncakeTrace",
    "PlainTrace",
    "TimedSource",
    "TraceConfig",
    "TraceFormat",
    "build_prompt",
    "load_trace",
]
