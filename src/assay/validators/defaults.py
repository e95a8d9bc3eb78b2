"""The default chain per endpoint and the catalogue of built-in validators by name."""

from __future__ import annotations

from dataclasses import dataclass

from assay.core.diagnostics import DiagnosticCode
from assay.core.response import GenerationResponse
from assay.spec.endpoint import Answer, Endpoint
from assay.validators.chain import Validator, chain, validator_name
from assay.validators.completeness import (
    empty_response,
    missing_finish_reason,
    stream_without_finish_reason,
    truncated_before_finish,
    truncated_stream,
)
from assay.validators.embeddings import empty_embedding
from assay.validators.scores import (
    invalid_result_index,
    no_results,
    non_finite_score,
    result_count_mismatch,
)
from assay.validators.structured_output import invalid_json_output, invalid_tool_call
from assay.validators.token_counts import max_tokens_not_honoured, usage_mismatch
from assay.validators.usage import impossible_usage


@dataclass(frozen=True, slots=True)
class BuiltinValidator:
    """One built-in validator: the code it reports, what it checks, and the validator."""

    code: DiagnosticCode
    description: str
    validator: Validator[GenerationResponse]

    @property
    def name(self) -> str:
        """The name the CLI accepts (`--validator NAME`): the validator's own."""
        return validator_name(self.validator)


BUILTIN_VALIDATORS: tuple[BuiltinValidator, ...] = (
    BuiltinValidator(
        DiagnosticCode.truncated_stream,
        "a stream that ended without [DONE]/terminal event, even after a finish_reason",
        truncated_stream,
    ),
    BuiltinValidator(
        DiagnosticCode.truncated_stream,
        "lenient truncated_stream for servers that never send [DONE] (TGI before 2.2): only a "
        "stream with neither [DONE]/terminal event nor finish_reason",
        truncated_before_finish,
    ),
    BuiltinValidator(
        DiagnosticCode.missing_finish_reason,
        "a chat/completions stream that ended with [DONE] and no finish_reason",
        stream_without_finish_reason,
    ),
    BuiltinValidator(
        DiagnosticCode.impossible_usage,
        "server usage below zero, or more completion tokens than max_tokens allowed",
        impossible_usage,
    ),
    BuiltinValidator(
        DiagnosticCode.empty_response,
        "no text, no tool calls and no reasoning, whatever usage says: nothing was served",
        empty_response,
    ),
    BuiltinValidator(
        DiagnosticCode.missing_finish_reason,
        "strict: any answer without finish_reason (also responses and non-streamed bodies)",
        missing_finish_reason,
    ),
    BuiltinValidator(
        DiagnosticCode.usage_mismatch,
        "the stream carried more tokens than usage reports, beyond max(1 token, 2 %)",
        usage_mismatch(),
    ),
    BuiltinValidator(
        DiagnosticCode.usage_mismatch,
        "strict: both directions where the stream proves its count (running usage); on a "
        "chunk count only the proven direction",
        usage_mismatch(two_sided=True),
    ),
    BuiltinValidator(
        DiagnosticCode.max_tokens_not_honoured,
        "ignore_eos asked for N output tokens and the answer has a different count",
        max_tokens_not_honoured,
    ),
    BuiltinValidator(
        DiagnosticCode.invalid_json_output,
        "JSON mode was asked for and the text does not parse or match the schema",
        invalid_json_output,
    ),
    BuiltinValidator(
        DiagnosticCode.invalid_tool_call,
        "a tool call whose arguments are not a JSON object",
        invalid_tool_call,
    ),
    BuiltinValidator(
        DiagnosticCode.empty_embedding,
        "embeddings: no vectors, wrong count, dimension 0, differing dimensions or NaN/inf",
        empty_embedding,
    ),
    BuiltinValidator(
        DiagnosticCode.no_results,
        "rerank/score: an answer with no results",
        no_results,
    ),
    BuiltinValidator(
        DiagnosticCode.result_count_mismatch,
        "rerank/score: more or fewer results than documents sent (or rerank's top_n)",
        result_count_mismatch,
    ),
    BuiltinValidator(
        DiagnosticCode.invalid_result_index,
        "rerank/score: a result index outside the documents sent, or named twice",
        invalid_result_index,
    ),
    BuiltinValidator(
        DiagnosticCode.non_finite_score,
        "rerank/score: a score that is NaN or infinite",
        non_finite_score,
    ),
)
"""Every built-in validator, in default-chain order; each is a no-op where it does not apply."""

_BY_NAME = {builtin.name: builtin.validator for builtin in BUILTIN_VALIDATORS}


# The checks of an answer's content, last in every generation chain.
_CONTENT_CHECKS = (max_tokens_not_honoured, invalid_json_output, invalid_tool_call)


def _generation_chain(*, strict: bool, allow_missing_done: bool) -> Validator[GenerationResponse]:
    """The chain of a text answer for one combination of the two switches."""
    ended = truncated_before_finish if allow_missing_done else truncated_stream
    if strict:
        checks = (missing_finish_reason, impossible_usage, empty_response)
        return chain(ended, *checks, _BY_NAME["usage_mismatch_two_sided"], *_CONTENT_CHECKS)
    checks = (impossible_usage, empty_response, stream_without_finish_reason)
    return chain(ended, *checks, _BY_NAME["usage_mismatch"], *_CONTENT_CHECKS)


_GENERATION_CHAINS = {
    (strict, lenient): _generation_chain(strict=strict, allow_missing_done=lenient)
    for strict in (False, True)
    for lenient in (False, True)
}
_EMBEDDING_CHAIN = chain(empty_embedding)
_SCORES_CHAIN = chain(no_results, result_count_mismatch, invalid_result_index, non_finite_score)


def default_chain(
    endpoint: Endpoint, strict: bool = False, *, allow_missing_done: bool = False
) -> Validator[GenerationResponse]:
    """The validators every answer from `endpoint` passes unless the user changes the chain.

    The chain is decided by the kind of answer (`Endpoint.traits.answer`): generated text,
    vectors, or scores (rerank and score).
    Strict mode widens the finish_reason check to every answer (`missing_finish_reason`) and
    checks usage both ways where the stream proves its count. `allow_missing_done` is for
    servers that never end a stream with `[DONE]`: a stream that carried a `finish_reason` then
    passes without it (`truncated_before_finish` in place of `truncated_stream`).

    >>> print(default_chain(Endpoint.chat))  # doctest: +NORMALIZE_WHITESPACE
    chain(truncated_stream, impossible_usage, empty_response, stream_without_finish_reason,
          usage_mismatch, max_tokens_not_honoured, invalid_json_output, invalid_tool_call)
    >>> print(default_chain(Endpoint.chat, allow_missing_done=True))  # doctest: +ELLIPSIS
    chain(truncated_before_finish, impossible_usage, ...)
    >>> default_chain(Endpoint.embeddings, strict=True)
    chain(empty_embedding)
    >>> default_chain(Endpoint.rerank)
    chain(no_results, result_count_mismatch, invalid_result_index, non_finite_score)
    """
    match endpoint.traits.answer:
        case Answer.text:
            return _GENERATION_CHAINS[(strict, allow_missing_done)]
        case Answer.vectors:
            return _EMBEDDING_CHAIN
        case Answer.scores:
            return _SCORES_CHAIN


def builtin_validator(name: str) -> Validator[GenerationResponse] | None:
    """The built-in validator called `name`, or `None` when there is none by that name.

    >>> builtin_validator("empty_response") is not None, builtin_validator("nope")
    (True, None)
    """
    return _BY_NAME.get(name)
