"""Server usage is evidence, not truth: figures that cannot be true are rejected."""

from __future__ import annotations

from returns.result import Result, Success

from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.response import GenerationResponse
from assay.validators.chain import reject, screened

# How far past `max_tokens` a count may go before it is impossible: servers stop a token or two
# late (llama-cpp-python generates on while an answer ends inside a UTF-8 character: 17 or 18 for
# 16 asked is common; docs/servers.md). Beyond this, the answer is longer than the request allowed.
OVERSHOOT_TOKENS = 2
OVERSHOOT_FRACTION = 0.1


def overshoot_allowed(limit: int) -> int:
    """The completion tokens above `limit` a server may report: 2, or 10 % of a larger limit.

    >>> overshoot_allowed(16), overshoot_allowed(512)
    (2, 51)
    """
    return max(OVERSHOOT_TOKENS, int(limit * OVERSHOOT_FRACTION))


def _plausible_usage(response: GenerationResponse) -> bool:
    """No usage, or no negative figure and completion tokens within `max_tokens` plus the
    overshoot every limit allows (a larger overshoot is left to `impossible_usage` to allow)."""
    usage = response.usage
    if usage is None:
        return True
    completion = usage.completion_tokens
    if (
        (usage.prompt_tokens or 0) < 0
        or (completion or 0) < 0
        or (usage.reasoning_tokens or 0) < 0
        or (usage.cached_tokens or 0) < 0
        or (usage.total_tokens or 0) < 0
    ):
        return False
    echo = response.echo
    limit = echo.max_output_tokens
    return (
        limit is None or completion is None or completion <= limit * echo.choices + OVERSHOOT_TOKENS
    )


@screened(_plausible_usage)
def impossible_usage(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """A usage figure below zero, or more completion tokens than `max_tokens` allowed, beyond
    the late stop servers make (`overshoot_allowed`: 18 for 16 asked is a late stop, not an
    impossible count; the streamed answer of the same server, with no usage, completes too).

    Such a figure would go straight into throughput (a negative count made a negative tok/s);
    an answer carrying one is errored and its count is never used. A count above zero for an
    answer with no content is `empty_response`'s to report.

    >>> from assay.core import Endpoint, RequestEcho, ResponseTiming, TextAnswer, Usage
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=False,
    ...                        echo=RequestEcho(max_output_tokens=16), answer=TextAnswer(text="Hi"),
    ...                        usage=Usage(completion_tokens=10**12),
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(impossible_usage(r).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    server usage reports 1000000000000 completion tokens but max_tokens allowed at most 16
    (and 2 more for a late stop)
    """
    usage = response.usage
    if usage is None:
        return Success(response)
    for name, value in usage:  # every figure, by its field's name
        if value is not None and value < 0:
            return reject(
                response,
                DiagnosticCode.impossible_usage,
                f"server usage reports a negative count: {name}={value}",
            )
    limit = response.echo.max_output_tokens
    reported = usage.completion_tokens
    if limit is None or reported is None:
        return Success(response)
    allowed = limit * response.echo.choices
    if reported <= allowed + overshoot_allowed(allowed):
        return Success(response)
    per = f" ({response.echo.choices} choices of {limit})" if response.echo.choices > 1 else ""
    return reject(
        response,
        DiagnosticCode.impossible_usage,
        f"server usage reports {reported} completion tokens but max_tokens allowed at most "
        f"{allowed}{per} (and {overshoot_allowed(allowed)} more for a late stop)",
    )
