"""Did the server finish, and did it say anything: truncated streams and empty answers."""

from __future__ import annotations

from returns.result import Result, Success

from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import Endpoint
from assay.core.response import GenerationResponse
from assay.validators.reject import reject


def truncated_stream(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """A stream that ended with neither a terminal marker nor a `finish_reason` was cut short.

    >>> from assay.core import Endpoint, ResponseTiming
    >>> cut = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=True,
    ...                          text="Once upon", content_chunks=2, streamed_tokens=2,
    ...                          timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(truncated_stream(cut).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    stream ended without [DONE] or a terminal event and without finish_reason,
    after 2 content chunks (2 tokens streamed, 9 characters of text)
    """
    if not response.streamed or response.terminal_seen or response.finish_reason is not None:
        return Success(response)
    return reject(
        response,
        DiagnosticCode.truncated_stream,
        "stream ended without [DONE] or a terminal event and without finish_reason, after "
        f"{response.content_chunks} content chunks ({response.streamed_tokens} tokens streamed, "
        f"{len(response.text)} characters of text)",
    )


def empty_response(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """No text, no tool calls, no reasoning and 0 output tokens: nothing was served (PR #615).

    Output tokens with empty text (e.g. split multi-byte characters) and tool-call-only answers
    are usable; embeddings are checked by `empty_embedding` instead.

    >>> from assay.core import Endpoint, ResponseTiming, Usage
    >>> empty = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=False,
    ...                            finish_reason="stop", usage=Usage(completion_tokens=0),
    ...                            timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(empty_response(empty).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    empty response payload: no text, no tool calls, no reasoning, 0 output tokens
    (finish_reason='stop', 0 content chunks, token count source: usage)
    """
    if (
        response.endpoint is Endpoint.embeddings
        or response.text
        or response.tool_calls
        or response.reasoning
        or response.output_tokens != 0
    ):
        return Success(response)
    return reject(
        response,
        DiagnosticCode.empty_response,
        "empty response payload: no text, no tool calls, no reasoning, 0 output tokens "
        f"(finish_reason={response.finish_reason!r}, {response.content_chunks} content chunks, "
        f"token count source: {response.output_token_source.value})",
    )


def missing_finish_reason(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """Strict mode: an answer must say why it stopped (`stop`, `length`, `tool_calls`, ...).

    >>> from assay.core import Endpoint, ResponseTiming
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.completions, streamed=True,
    ...                        text="hi", terminal_seen=True, streamed_tokens=1,
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(missing_finish_reason(r).failure().message)
    response has no finish_reason (stream terminal marker seen: True, 1 output tokens)
    """
    if response.endpoint is Endpoint.embeddings or response.finish_reason is not None:
        return Success(response)
    terminal = (
        f"stream terminal marker seen: {response.terminal_seen}, " if response.streamed else ""
    )
    return reject(
        response,
        DiagnosticCode.missing_finish_reason,
        f"response has no finish_reason ({terminal}{response.output_tokens} output tokens)",
    )
