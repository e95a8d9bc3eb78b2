"""Do the token counts add up: server usage against the stream, and `ignore_eos` lengths."""

from __future__ import annotations

import math
from typing import Final

from returns.result import Result, Success

from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.response import GenerationResponse, TokenSource
from assay.errors import ConfigError
from assay.validators.chain import Validator, reject, screened

# Read once: looking a member up on its enum class costs more than the rest of a screen's test.
_NO_TOKEN_COUNT: Final = TokenSource.none


def usage_mismatch(
    tolerance_tokens: int = 1, tolerance_ratio: float = 0.02, two_sided: bool = False
) -> Validator[GenerationResponse]:
    """A validator comparing the server's completion tokens with the tokens the stream carried.

    Silent when the server reported no completion tokens or nothing was counted from a stream.
    Only what the stream proves is reconciled. A running usage on every chunk (continuous usage,
    e.g. vLLM's `stream_options.continuous_usage_stats`) proves the count, so it must agree with
    the final usage exactly. A chunk count proves only a lower bound (one chunk may carry
    several tokens: vLLM's `/v1/responses` sends 14 text events for 16 tokens, word-streaming
    servers one event per word), so a stream carrying *more* tokens than reported is flagged,
    beyond `max(tolerance_tokens, tolerance_ratio * reported)`, plus tokens streamed against a
    usage of 0, but never one carrying fewer. `two_sided` asks for both directions, which only a
    running usage can prove: on a chunk count it checks the proven direction alone.

    >>> from assay.core import Endpoint, ResponseTiming, TextAnswer, TokenSource, Usage
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=True,
    ...                        answer=TextAnswer(text="x" * 40), usage=Usage(completion_tokens=12),
    ...                        streamed_tokens=20, streamed_token_source=TokenSource.stream,
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(usage_mismatch()(r).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    server usage reports 12 completion tokens but the stream carried 20 (8 more),
    beyond the tolerance of 1 token
    """
    if tolerance_tokens < 0 or tolerance_ratio < 0:
        raise ConfigError(
            f"usage_mismatch tolerances must not be negative, got tolerance_tokens="
            f"{tolerance_tokens} and tolerance_ratio={tolerance_ratio}"
        )

    def usage_mismatch(
        response: GenerationResponse,
    ) -> Result[GenerationResponse, UnusableResponse]:
        usage = response.usage
        if usage is None or usage.completion_tokens is None:
            return Success(response)
        source = response.streamed_token_source
        if not response.streamed or source is TokenSource.none:
            return Success(response)
        reported = usage.completion_tokens
        streamed = response.streamed_tokens
        excess = streamed - reported
        if source is TokenSource.continuous_usage:
            if excess == 0:
                return Success(response)
            limit = "the running usage on the stream must match the final usage exactly"
        elif streamed > 0 and reported == 0:
            limit = "tokens were streamed but usage says none were generated"
        else:
            allowed = max(tolerance_tokens, math.ceil(tolerance_ratio * reported))
            if excess <= allowed:
                return Success(response)
            limit = f"beyond the tolerance of {allowed} token{'' if allowed == 1 else 's'}"
        direction = f"{excess} more" if excess > 0 else f"{-excess} fewer"
        return reject(
            response,
            DiagnosticCode.usage_mismatch,
            f"server usage reports {reported} completion tokens but the stream carried "
            f"{streamed} ({direction}), {limit}",
        )

    if two_sided:
        usage_mismatch.__name__ = "usage_mismatch_two_sided"
    return screened(_counts_agree)(usage_mismatch)


def _counts_agree(response: GenerationResponse) -> bool:
    """Nothing to reconcile, or the stream carried exactly the completion tokens reported: within
    every tolerance, both ways, whatever proves the count."""
    usage = response.usage
    return (
        usage is None
        or usage.completion_tokens is None
        or not response.streamed
        or response.streamed_token_source is _NO_TOKEN_COUNT
        or response.streamed_tokens == usage.completion_tokens
    )


def _length_not_asked(response: GenerationResponse) -> bool:
    return not response.echo.ignore_eos


@screened(_length_not_asked)
def max_tokens_not_honoured(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """With `ignore_eos` and a max token count the answer must be exactly that long.

    Skipped when no token count is known at all (no usage, nothing streamed).

    >>> from assay.core import Endpoint, RequestEcho, ResponseTiming, TextAnswer, Usage
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.completions, streamed=False,
    ...                        echo=RequestEcho(max_output_tokens=128, ignore_eos=True),
    ...                        answer=TextAnswer(text="..."), finish_reason="stop",
    ...                        usage=Usage(completion_tokens=97),
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(max_tokens_not_honoured(r).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    ignore_eos asked for exactly 128 output tokens but the server returned 97
    (31 fewer; count from usage, finish_reason='stop')
    """
    echo = response.echo
    wanted = echo.max_output_tokens
    if (
        not echo.ignore_eos
        or wanted is None
        or not response.endpoint.traits.generates
        or response.output_token_source is TokenSource.none
    ):
        return Success(response)
    got = response.output_tokens
    if got == wanted:
        return Success(response)
    difference = f"{got - wanted} more" if got > wanted else f"{wanted - got} fewer"
    return reject(
        response,
        DiagnosticCode.max_tokens_not_honoured,
        f"ignore_eos asked for exactly {wanted} output tokens but the server returned {got} "
        f"({difference}; count from {response.output_token_source.value}, "
        f"finish_reason={response.finish_reason!r})",
    )
