"""Validators: is a compiled response usable? Each is `Callable[[R], Result[R, UnusableResponse]]`.

Validators compose with `chain` (a chain is itself a validator); every endpoint has a default
chain, which a library user extends with `chain(default_chain(endpoint), my_validator)`.

>>> from assay.core import Endpoint, GenerationResponse, ResponseTiming, Usage
>>> empty = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=True,
...                            terminal_seen=True, finish_reason="stop",
...                            usage=Usage(completion_tokens=0),
...                            timing=ResponseTiming(send_ns=0, end_ns=1))
>>> default_chain(Endpoint.chat)(empty).failure().code
<DiagnosticCode.empty_response: 'empty_response'>
"""

from assay.validators.chain import (
    Chain,
    Screen,
    Validator,
    chain,
    named_steps,
    reject,
    screened,
    validator_name,
)
from assay.validators.completeness import (
    empty_response,
    missing_finish_reason,
    stream_without_finish_reason,
    truncated_before_finish,
    truncated_stream,
)
from assay.validators.defaults import (
    BUILTIN_VALIDATORS,
    BuiltinValidator,
    builtin_validator,
    default_chain,
)
from assay.validators.embeddings import empty_embedding
from assay.validators.loading import custom_codes_of, load_validator, resolve_validator
from assay.validators.scores import (
    invalid_result_index,
    no_results,
    non_finite_score,
    result_count_mismatch,
)
from assay.validators.structured_output import invalid_json_output, invalid_tool_call
from assay.validators.token_counts import max_tokens_not_honoured, usage_mismatch
from assay.validators.usage import impossible_usage

__all__ = [
    "BUILTIN_VALIDATORS",
    "BuiltinValidator",
    "Chain",
    "Screen",
    "Validator",
    "builtin_validator",
    "chain",
    "custom_codes_of",
    "default_chain",
    "empty_embedding",
    "empty_response",
    "impossible_usage",
    "invalid_json_output",
    "invalid_result_index",
    "invalid_tool_call",
    "load_validator",
    "max_tokens_not_honoured",
    "missing_finish_reason",
    "named_steps",
    "no_results",
    "non_finite_score",
    "reject",
    "resolve_validator",
    "result_count_mismatch",
    "screened",
    "stream_without_finish_reason",
    "truncated_before_finish",
    "truncated_stream",
    "usage_mismatch",
    "validator_name",
]
