"""Does every request a source can build fit the model's context window? Checked before any load.

A server refuses a request whose prompt and output limit together pass its model's context
window (vLLM and SGLang answer 400): a run whose requests cannot fit would measure nothing but
refusals. Where the window is known (the server names it, or `--context-window`), each request
the run can send is checked up front, and the first that cannot fit is refused with one
`DataError` naming it: the data row (file and line), or the flags of a synthetic load.

What is counted is what assay asks for: the prompt's tokens as assay counts them (a synthetic
prompt's sampled length at its largest, a trace row's `input_length`, a data row's text under
`--tokenizer`; without a tokenizer a row's prompt counts one token, the least it can hold), plus
the output limit the body carries (`--output-tokens` at its largest, a row's own, or
`--extra-body max_tokens`). A session's later turn holds the user turns before it too (the
answers it carries are the server's, and not counted). Chat templates, images and audio add
tokens assay cannot count, so a request that passes may still be refused by the server; one
that fails is refused by any server that keeps to its window.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import JsonValue

from assay.core import Endpoint
from assay.data.file_formats import format_of, row_reading
from assay.data.file_source import FileSource, FileSourceConfig
from assay.data.session import FileSessions, SyntheticSessions
from assay.data.source import RequestSource, asked_limits
from assay.data.synthetic import SyntheticSource
from assay.data.token_count import TokenCount, largest_count
from assay.data.tokenizer_spec import load_tokenizer
from assay.data.trace import MooncakeTrace, PlainTrace
from assay.errors import DataError
from assay.spec.endpoint import Carries


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """The most tokens one request may hold, prompt and output together, and who said so."""

    tokens: int
    origin: str


@dataclass(frozen=True, slots=True)
class _Need:
    """What one request (or the largest a flag allows) asks of the window."""

    where: str
    prompt_tokens: int
    output_tokens: int
    prompt_words: str
    output_words: str


def check_fits_context(source: RequestSource, window: ContextWindow) -> None:
    """Raise `DataError` for the first request of `source` that cannot fit in `window`.

    >>> from assay.data.token_count import FixedCount
    >>> source = SyntheticSource(model="m", prompt_tokens=FixedCount(value=4000))
    >>> check_fits_context(source, ContextWindow(4096, "the server"))
    Traceback (most recent call last):
    ...
    assay.errors.DataError: --prompt-tokens 4000 + --output-tokens 128 = 4,128 tokens, ...
    """
    for need in _needs(source):
        total = need.prompt_tokens + need.output_tokens
        if total > window.tokens:
            raise DataError(
                f"{need.where}{need.prompt_words} + {need.output_words} = {total:,} tokens, "
                f"above the model's context window of {window.tokens:,} tokens "
                f"({window.origin}); the server would refuse it, so nothing was sent "
                "(--context-window N states the window, 0 skips this check)"
            )


def _needs(source: RequestSource) -> Iterator[_Need]:
    match source:
        case SyntheticSource():
            yield from _synthetic_needs(source, turns=1)
        case SyntheticSessions():
            yield from _synthetic_needs(source.source, turns=source.turns)
        case FileSource():
            yield from _row_needs(source)
        case FileSessions():
            yield from _session_needs(source.rows)
        case PlainTrace():
            yield from _row_needs(source.rows)
        case MooncakeTrace():
            yield from _mooncake_needs(source)
        case _:
            return  # a library user's own source: its requests are its own to size


def _output(
    endpoint: Endpoint,
    fields: dict[str, JsonValue],
    planned: int,
    planned_words: str,
    ignore_eos: bool,
) -> tuple[int, str]:
    """The output limit the body carries (0 for an endpoint that does not generate), in words."""
    if not endpoint.traits.generates:
        return 0, "no output"
    limit, _ = asked_limits(endpoint, fields, planned, ignore_eos)
    if limit is None or limit == planned:
        return planned, planned_words
    return limit, f"the body's output limit {limit:,} (--extra-body)"


def _row_output(
    config: FileSourceConfig, fields: dict[str, JsonValue], own: int | None, whose: str
) -> tuple[int, str]:
    """The output limit of a data row (or turn `whose`): its own, else `--output-tokens` at its
    largest, unless the body's `fields` set one."""
    if own is not None:
        planned, words = own, f"the {whose}'s output tokens {own:,}"
    else:
        planned = largest_count(config.output_tokens)
        words = _spelled("--output-tokens", config.output_tokens)
    return _output(config.endpoint, fields, planned, words, config.ignore_eos)


def _spelled(flag: str, count: TokenCount) -> str:
    largest = largest_count(count)
    match count.kind:
        case "fixed":
            return f"{flag} {largest}"
        case "uniform" | "normal":
            return f"{flag} at most {largest:,}"


def _synthetic_needs(source: SyntheticSource, *, turns: int) -> Iterator[_Need]:
    traits = source.endpoint.traits
    prompt_words = _spelled("--prompt-tokens", source.prompt_tokens)
    prompt = largest_count(source.prompt_tokens)
    match traits.carries:
        case Carries.audio:
            return  # the upload is audio; its tokens are the server's to count
        case Carries.documents:
            # Each document is judged with the query, one pair at a time.
            prompt += largest_count(source.document_tokens)
            prompt_words += f" + {_spelled('--document-tokens', source.document_tokens)}"
        case Carries.messages | Carries.prompt | Carries.inputs:
            pass
    if turns > 1:
        prompt *= turns
        prompt_words = f"a session's last turn: {turns} user turns (--turns) of {prompt_words}"
    output, output_words = _output(
        source.endpoint,
        source.extra_body,
        largest_count(source.output_tokens),
        _spelled("--output-tokens", source.output_tokens),
        source.ignore_eos,
    )
    yield _Need("", prompt, output, prompt_words, output_words)


def _unit(source: FileSource) -> str:
    config = source.config
    try:
        return row_reading(config.format or format_of(config.path)).unit
    except DataError:
        return "line"


def _row_needs(source: FileSource) -> Iterator[_Need]:
    config = source.config
    traits = config.endpoint.traits
    unit = _unit(source)
    for row in source.rows:
        counted = row.prompt_tokens is not None and traits.carries is not Carries.documents
        prompt = row.prompt_tokens if counted and row.prompt_tokens is not None else 1
        fields = {**config.extra_body, **row.extra_body}
        output, output_words = _row_output(config, fields, row.output_tokens, "row")
        yield _Need(
            f"{config.path}, {unit} {row.line}: ",
            prompt,
            output,
            f"a prompt of {prompt:,} tokens" if counted else "a prompt (at least 1 token)",
            output_words,
        )


def _session_needs(source: FileSource) -> Iterator[_Need]:
    """Each turn of each row: the user turns so far (counted under `--tokenizer`) and its
    output limit."""
    config = source.config
    tokenizer = load_tokenizer(config.tokenizer) if config.tokenizer is not None else None
    unit = _unit(source)
    for row in source.rows:
        fields = {**config.extra_body, **row.extra_body}
        held = 0
        if tokenizer is not None and row.system is not None:
            held = tokenizer.count(row.system)
        for number, turn in enumerate(row.turns, start=1):
            held += tokenizer.count(turn.text) if tokenizer is not None else 1
            output, output_words = _row_output(config, fields, turn.output_tokens, "turn")
            counted = "" if tokenizer is not None else " (at least 1 token each)"
            yield _Need(
                f"{config.path}, {unit} {row.line}, turn {number}: ",
                held,
                output,
                f"{number} user turn{'' if number == 1 else 's'} of {held:,} tokens{counted}",
                output_words,
            )


def _mooncake_needs(trace: MooncakeTrace) -> Iterator[_Need]:
    config = trace.config
    for row in trace.rows:
        output, output_words = _output(
            config.endpoint,
            config.extra_body,
            row.output_length,
            f"'output_length' {row.output_length:,}",
            config.ignore_eos,
        )
        yield _Need(
            f"{config.path}, line {row.line}: ",
            row.input_length,
            output,
            f"'input_length' {row.input_length:,}",
            output_words,
        )


__all__ = ["ContextWindow", "check_fits_context"]
