"""Did the server finish, and did it say anything: truncated streams and empty answers."""

from __future__ import annotations

from returns.result import Result, Success

from assay.core.answer import TextAnswer
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.response import GenerationResponse
from assay.validators.chain import reject, screened


def _ended(response: GenerationResponse) -> bool:
    """Not a stream, or a stream that reached its terminal marker."""
    return not response.streamed or response.terminal_seen


def _ended_or_finished(response: GenerationResponse) -> bool:
    return response.finish_reason is not None or not response.streamed or response.terminal_seen


def _has_content(response: GenerationResponse) -> bool:
    # An answer of another kind passes by its type, as in the validator.
    answer = response.answer
    return type(answer) is not TextAnswer or bool(
        answer.text or answer.tool_calls or answer.reasoning
    )


def _said_why_or_unended(response: GenerationResponse) -> bool:
    return response.finish_reason is not None or not response.streamed or not response.terminal_seen


def _has_finish_reason(response: GenerationResponse) -> bool:
    return response.finish_reason is not None


@screened(_ended)
def truncated_stream(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """A stream that ended without its terminal marker (`[DONE]`, or the terminal event of
    `/v1/responses`) was cut short, even when a `finish_reason` had already arrived.

    A stream ends with its marker on every engine observed (vLLM, SGLang, llama.cpp, TGI since
    2.2); without it the response stopped before the server finished it, and what follows the
    finish chunk (the usage chunk assay asks for) is lost. The message says how far it got.
    Servers that never send `[DONE]` can use `truncated_before_finish` instead.

    >>> from assay.core import Endpoint, ResponseTiming
    >>> cut = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=True,
    ...                          answer=TextAnswer(text="Once upon"), content_chunks=2,
    ...                          streamed_tokens=2, timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(truncated_stream(cut).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    stream ended without [DONE] or a terminal event and without finish_reason,
    after 2 content chunks (2 tokens streamed, 9 characters of text)
    >>> late = cut.model_copy(update={"finish_reason": "stop"})
    >>> print(truncated_stream(late).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    stream ended without [DONE] or a terminal event after finish_reason='stop' (no usage chunk),
    after 2 content chunks (2 tokens streamed, 9 characters of text)
    """
    if not response.streamed or response.terminal_seen:
        return Success(response)
    if response.finish_reason is None:
        how = "without [DONE] or a terminal event and without finish_reason"
    else:
        usage = "usage chunk received" if response.usage is not None else "no usage chunk"
        how = (
            f"without [DONE] or a terminal event after finish_reason="
            f"{response.finish_reason!r} ({usage})"
        )
    return reject(
        response,
        DiagnosticCode.truncated_stream,
        f"stream ended {how}, after {response.content_chunks} content chunks "
        f"({response.streamed_tokens} tokens streamed, {len(response.text)} characters of text)",
    )


@screened(_ended_or_finished)
def truncated_before_finish(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """The lenient `truncated_stream`, for servers that never send `[DONE]` (TGI before 2.2):
    only a stream with neither its terminal marker nor a `finish_reason` was cut short.

    >>> from assay.core import Endpoint, ResponseTiming
    >>> done = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=True,
    ...                           answer=TextAnswer(text="Once upon"), content_chunks=2,
    ...                           streamed_tokens=2, finish_reason="stop",
    ...                           timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> truncated_before_finish(done).unwrap() is done
    True
    """
    if response.finish_reason is not None:
        return Success(response)
    return truncated_stream(response)


@screened(_has_content)
def empty_response(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """No text, no tool calls and no reasoning: nothing was served (PR #615), whatever the usage.

    A server's token count does not make an empty answer usable: vLLM reports 1 completion
    token (the EOS) for a forced-empty answer, and a count with nothing to show for it is not
    output. The message says what the server reported. Embeddings are checked by
    `empty_embedding` instead, rerank and score answers by `validators/scores.py`.

    >>> from assay.core import Endpoint, ResponseTiming, Usage
    >>> empty = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=False,
    ...                            finish_reason="stop", usage=Usage(completion_tokens=1),
    ...                            timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(empty_response(empty).failure().message)  # doctest: +NORMALIZE_WHITESPACE
    empty response payload: no text, no tool calls, no reasoning; server reported 1 completion
    token (finish_reason='stop', 0 content chunks)
    """
    match response.answer:
        case TextAnswer(text=text, tool_calls=tool_calls, reasoning=reasoning):
            if text or tool_calls or reasoning:
                return Success(response)
        case _:
            return Success(response)  # no text to have: their own validators judge them
    return reject(
        response,
        DiagnosticCode.empty_response,
        f"empty response payload: no text, no tool calls, no reasoning; {_reported(response)} "
        f"(finish_reason={response.finish_reason!r}, {response.content_chunks} content chunks)",
    )


def _reported(response: GenerationResponse) -> str:
    """What the server said about the answer's length, in words."""
    usage = response.usage
    if usage is not None and usage.completion_tokens is not None:
        count = usage.completion_tokens
        return f"server reported {count} completion token{'' if count == 1 else 's'}"
    if response.streamed:
        count = response.streamed_tokens
        return f"no usage reported, {count} token{'' if count == 1 else 's'} streamed"
    return "no usage reported"


@screened(_said_why_or_unended)
def stream_without_finish_reason(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """A chat/completions stream that ended with `[DONE]` but never said why it stopped.

    Every server observed (vLLM, llama.cpp, SGLang-style and mock servers) sends a
    `finish_reason` on a finished chat/completions stream; its absence means the server cut the
    answer (llama-cpp-python interrupts concurrent streams after one chunk and still sends
    `[DONE]`). So it is an error by default there. It stays strict-only
    (`missing_finish_reason`) for `/v1/responses`, whose stream has no `finish_reason` on the
    wire (assay derives it from the terminal event's status), and for non-streamed bodies,
    which minimal servers send without one. A stream without `[DONE]` as well is
    truncated_stream, checked first.

    >>> from assay.core import Endpoint, ResponseTiming
    >>> cut = GenerationResponse(request_id="r1", endpoint=Endpoint.completions, streamed=True,
    ...                          answer=TextAnswer(text="Once"), terminal_seen=True,
    ...                          streamed_tokens=1, content_chunks=1,
    ...                          timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(stream_without_finish_reason(cut).failure().message)
    stream ended with [DONE] but no chunk carried a finish_reason, after 1 content chunks
    """
    if (
        not response.streamed
        or not response.terminal_seen
        or response.finish_reason is not None
        or not response.endpoint.traits.streams_finish_reason
    ):
        return Success(response)
    return reject(
        response,
        DiagnosticCode.missing_finish_reason,
        "stream ended with [DONE] but no chunk carried a finish_reason, after "
        f"{response.content_chunks} content chunks",
    )


@screened(_has_finish_reason)
def missing_finish_reason(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """Strict mode: an answer must say why it stopped (`stop`, `length`, `tool_calls`, ...).

    >>> from assay.core import Endpoint, ResponseTiming
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.completions, streamed=True,
    ...                        answer=TextAnswer(text="hi"), terminal_seen=True, streamed_tokens=1,
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(missing_finish_reason(r).failure().message)
    response has no finish_reason (stream terminal marker seen: True, 1 output tokens)
    """
    match response.answer:
        case TextAnswer():
            if response.finish_reason is not None:
                return Success(response)
        case _:
            return Success(response)  # a vector or a score has no reason to stop
    terminal = (
        f"stream terminal marker seen: {response.terminal_seen}, " if response.streamed else ""
    )
    return reject(
        response,
        DiagnosticCode.missing_finish_reason,
        f"response has no finish_reason ({terminal}{response.output_tokens} output tokens)",
    )
