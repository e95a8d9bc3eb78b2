"""Reading the OpenAI wire format: JSON bodies, in-band errors, usage and tool calls.

Shared by the endpoint handlers; everything here is total over arbitrary JSON (it narrows
with `isinstance` and never raises for what a server sent).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from pydantic import JsonValue
from returns.result import Result, Success

from assay.core.answer import AnyAnswer, ToolCall
from assay.core.diagnostics import DiagnosticCode, Evidence, UnusableResponse, cap_excerpt
from assay.core.request import GenerationRequest
from assay.core.response import ID_LIMIT, ExchangeIds, GenerationResponse, ResponseTiming, Usage
from assay.core.trusted import trusted
from assay.errors import DataError
from assay.handlers.base import Transfer
from assay.spec.endpoint import Endpoint

_MESSAGE_LIMIT = 300


def int_field(obj: dict[str, object], key: str) -> int | None:
    """`obj[key]` when it is an integer (not a bool), else None.

    >>> int_field({"a": 3, "b": True, "c": "4"}, "a"), int_field({"b": True}, "b")
    (3, None)
    """
    value = obj.get(key)
    return value if type(value) is int else None


def str_field(obj: dict[str, object], key: str) -> str | None:
    """`obj[key]` when it is a string, else None."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _nested_int(obj: dict[str, object], outer: str, inner: str) -> int | None:
    details = obj.get(outer)
    return int_field(details, inner) if isinstance(details, dict) else None


def parse_usage(raw: object) -> Usage | None:
    """A `Usage` from a chat/completions (`*_tokens`) or responses (`input/output_tokens`) object.

    Fields of the wrong type read as unreported; anything but an object is no usage at all.

    >>> parse_usage({"prompt_tokens": 21, "completion_tokens": 3, "total_tokens": 24}).total_tokens
    24
    >>> parse_usage({"input_tokens": 5, "output_tokens": 2}).completion_tokens
    2
    >>> [parse_usage({"total_tokens": total}).total_tokens for total in (True, "4", 4.0, 7)]
    [None, None, None, 7]
    """
    if not isinstance(raw, dict):
        return None
    # Read once per answer: the common names first, the others and the details only when the
    # first are missing or present (a usage without details looks none of them up).
    prompt = raw.get("prompt_tokens")
    if type(prompt) is not int:
        prompt = int_field(raw, "input_tokens")
    completion = raw.get("completion_tokens")
    if type(completion) is not int:
        completion = int_field(raw, "output_tokens")
    reasoning = cached = None
    if "completion_tokens_details" in raw or "output_tokens_details" in raw:
        reasoning = _nested_int(raw, "completion_tokens_details", "reasoning_tokens")
        if reasoning is None:
            reasoning = _nested_int(raw, "output_tokens_details", "reasoning_tokens")
    if "prompt_tokens_details" in raw or "input_tokens_details" in raw:
        cached = _nested_int(raw, "prompt_tokens_details", "cached_tokens")
        if cached is None:
            cached = _nested_int(raw, "input_tokens_details", "cached_tokens")
    total = raw.get("total_tokens")  # `int_field` inlined, as for the two names above
    if type(total) is not int:
        total = None
    figures = (prompt, completion, reasoning, cached, total)
    usage = _USAGES.get(figures)
    if usage is None:
        if len(_USAGES) >= USAGES_KEPT:
            _USAGES.clear()
        # Every figure is an int or None (`int_field`'s test): nothing left to validate.
        usage = _USAGES[figures] = trusted(
            Usage,
            {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "reasoning_tokens": reasoning,
                "cached_tokens": cached,
                "total_tokens": total,
            },
        )
    return usage


# The usages read lately, by their five figures. A `Usage` is frozen and its figures are all it
# holds, so answers that report the same figures (a run's requests mostly ask for the same
# prompt and output lengths) share one, instead of a model built per answer. Emptied whenever
# it reaches `USAGES_KEPT`, so it stays small whatever a run's figures.
USAGES_KEPT = 256
_USAGES: dict[tuple[int | None, ...], Usage] = {}


def error_message(error: object) -> str:
    """The server's words from an error object (`{"message": ...}`), a string, or anything else.

    >>> error_message({"message": "The model `nope` does not exist.", "code": 404})
    'The model `nope` does not exist.'
    """
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str) and message:
            return _clip(message)
        detail = error.get("detail")
        if isinstance(detail, str) and detail:
            return _clip(detail)
    if isinstance(error, str) and error:
        return _clip(error)
    return _clip(orjson.dumps(error).decode())


def _clip(message: str) -> str:
    return message if len(message) <= _MESSAGE_LIMIT else f"{message[:_MESSAGE_LIMIT]}…"


def inband_error(obj: dict[str, object]) -> str | None:
    """The message of an in-band error object (`{"error": ...}` with a non-null error), if any.

    >>> inband_error({"error": {"message": "engine died", "type": "InternalServerError"}})
    'engine died'
    >>> inband_error({"error": None, "output": []}) is None
    True
    """
    error = obj.get("error")
    return None if error is None else error_message(error)


def tool_arguments(raw: object) -> str:
    """Tool-call arguments as JSON text; some servers send an object instead of a string."""
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return orjson.dumps(raw).decode()


def parse_tool_call(raw: object, position: int) -> ToolCall | None:
    """One complete (non-streamed) chat tool call, or None when it is not an object."""
    if not isinstance(raw, dict):
        return None
    function = raw.get("function")
    if not isinstance(function, dict):
        function = {}
    index = int_field(raw, "index")
    return ToolCall(
        index=position if index is None else index,
        id=str_field(raw, "id"),
        name=str_field(function, "name"),
        arguments=tool_arguments(function.get("arguments")),
    )


def unusable(
    code: DiagnosticCode,
    message: str,
    transfer: Transfer,
    raw: bytes | str | None = None,
    partial: GenerationResponse | None = None,
) -> UnusableResponse:
    """An `UnusableResponse` with the transfer's status, a capped excerpt and the partial answer.

    The exchange's ids go on the evidence only when no partial answer holds them.
    """
    return UnusableResponse(
        code=code,
        message=message,
        evidence=Evidence(
            http_status=transfer.http_status,
            excerpt=cap_excerpt(raw),
            partial=partial,
            ids=transfer.ids if partial is None else None,
        ),
    )


def decode_body(
    body: bytes, transfer: Transfer, what: str, *, non_finite: bool = False
) -> dict[str, object] | UnusableResponse:
    """The JSON object of a non-streamed body, or why it is not one (`what` names the endpoint).

    Empty is no_terminal_response, unparsable is invalid_json, `{"error": ...}` is inband_error
    and any other non-object is unexpected_shape. With `non_finite`, the `NaN`, `Infinity` and
    out-of-range numbers a Python server's default JSON encoder writes are read as such (an
    endpoint's validators then judge the values) instead of making the body invalid_json.
    """
    if not body.strip():
        return unusable(
            DiagnosticCode.no_terminal_response,
            f"empty {what} body: the server answered with no bytes",
            transfer,
        )
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        lenient = _non_finite_json(body) if non_finite else None
        if lenient is None:
            return unusable(
                DiagnosticCode.invalid_json, f"{what} body is not valid JSON: {exc}", transfer, body
            )
        obj = lenient
    if not isinstance(obj, dict):
        return unusable(
            DiagnosticCode.unexpected_shape,
            f"{what} body is JSON {type(obj).__name__}, not an object",
            transfer,
            body,
        )
    message = inband_error(obj)
    if message is not None:
        return unusable(
            DiagnosticCode.inband_error,
            f"{what} body is an error object: {message}",
            transfer,
            body,
        )
    return obj


def _non_finite_json(body: bytes) -> object | None:
    """`body` read by the standard library's decoder, which takes `NaN`, `Infinity` and numbers
    beyond a double (as infinity), or None when even that fails.

    >>> _non_finite_json(b'{"score": NaN, "top": 1e999}')
    {'score': nan, 'top': inf}
    """
    try:
        obj: object = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return obj


def body_list(
    obj: dict[str, object], key: str, body: bytes, transfer: Transfer, what: str
) -> list[Any] | UnusableResponse:
    """`obj[key]` of a decoded body when it is a list, else unexpected_shape naming `key`."""
    value = obj.get(key)
    if isinstance(value, list):
        return value
    return unusable(
        DiagnosticCode.unexpected_shape, f"{what} body has no `{key}` list", transfer, body
    )


def body_answer(
    request: GenerationRequest,
    endpoint: Endpoint,
    obj: dict[str, object],
    transfer: Transfer,
    answer: AnyAnswer,
    *,
    finish_reason: str | None = None,
) -> Result[GenerationResponse, UnusableResponse]:
    """A non-streamed answer: what the endpoint read, with the body's model, usage and timing."""
    model = obj.get("model")
    return Success(
        GenerationResponse(
            request_id=request.request_id,
            endpoint=endpoint,
            streamed=False,
            echo=request.echo(),
            model=model if isinstance(model, str) else None,
            answer=answer,
            finish_reason=finish_reason,
            usage=parse_usage(obj.get("usage")),
            terminal_seen=True,
            http_status=transfer.http_status or None,
            ids=answer_ids(transfer.ids, obj.get("id")),
            timing=body_timing(transfer),
        )
    )


_NO_IDS: dict[str, str | None] = dict.fromkeys(ExchangeIds.model_fields)


def answer_ids(ids: ExchangeIds | None, answer: object) -> ExchangeIds | None:
    """`ids` with the answer's own id (the body's or first chunk's `id`), capped to `ID_LIMIT`.

    A missing, empty or non-string id leaves `ids` as they are.

    >>> answer_ids(None, "chatcmpl-42").answer
    'chatcmpl-42'
    >>> answer_ids(None, 42) is None
    True
    """
    if type(answer) is not str or not answer:
        return ids
    fields: dict[str, object] = dict(_NO_IDS if ids is None else ids.__dict__)
    fields["answer"] = cap_excerpt(answer, ID_LIMIT)
    # Every value is a string or None, typed above: built without validation (once a request).
    built: ExchangeIds = trusted(ExchangeIds, fields)
    return built


def body_timing(transfer: Transfer) -> ResponseTiming:
    """Timing of a non-streamed answer: every token arrived with the end of the body."""
    return ResponseTiming(
        send_ns=transfer.send_ns,
        first_byte_ns=transfer.first_byte_ns,
        first_token_ns=transfer.end_ns,
        first_content_ns=transfer.end_ns,
        last_token_ns=transfer.end_ns,
        end_ns=transfer.end_ns,
    )


def text_prompt(request: GenerationRequest) -> str | list[JsonValue]:
    """The `prompt`/`input` field of a text request; a request without a prompt is misuse."""
    if isinstance(request.prompt, str):
        return request.prompt
    if isinstance(request.prompt, tuple):
        return list(request.prompt)
    raise DataError(f"{request.endpoint} request {request.request_id!r} has no prompt")


def query_and_documents(request: GenerationRequest) -> tuple[str, list[JsonValue]]:
    """The query and documents of a rerank or score request; a request without them is misuse."""
    if isinstance(request.prompt, str) and request.documents:
        return request.prompt, list(request.documents)
    raise DataError(
        f"{request.endpoint} request {request.request_id!r} has no text query and documents"
    )


def generation_body(
    request: GenerationRequest,
    prompt_key: str,
    prompt: JsonValue,
    *,
    max_tokens_key: str = "max_tokens",
    stream_options: bool = True,
) -> dict[str, JsonValue]:
    """Model, the prompt under `prompt_key`, the token limit, `ignore_eos` when asked, `stream`
    (with `stream_options` asking for usage when streamed), then extras.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.chat, model="m",
    ...     prompt="Hi", max_output_tokens=8)
    >>> generation_body(request, "prompt", "Hi", stream_options=False)
    {'model': 'm', 'prompt': 'Hi', 'max_tokens': 8, 'stream': True}
    """
    body: dict[str, JsonValue] = {"model": request.model, prompt_key: prompt}
    if request.max_output_tokens is not None:
        body[max_tokens_key] = request.max_output_tokens
    if request.ignore_eos:
        body["ignore_eos"] = True
    body["stream"] = request.stream
    if stream_options and request.stream:
        body["stream_options"] = {"include_usage": True}
    return with_extra(body, request)


def ask_continuous_usage(body: dict[str, JsonValue]) -> None:
    """Ask a streamed body for a running usage on every chunk (vLLM's
    `stream_options.continuous_usage_stats`); a body without `stream_options` (not streamed,
    or an endpoint without them) is left alone.

    >>> body = {"stream": True, "stream_options": {"include_usage": True}}
    >>> ask_continuous_usage(body)
    >>> body["stream_options"]
    {'include_usage': True, 'continuous_usage_stats': True}
    """
    options = body.get("stream_options")
    if isinstance(options, dict):
        # A copy: the dict may be the request's own `extra_body` value.
        body["stream_options"] = {**options, "continuous_usage_stats": True}


def with_extra(body: dict[str, JsonValue], request: GenerationRequest) -> dict[str, JsonValue]:
    """`body` with the request's `extra_body` merged last, so the user can override anything."""
    if request.extra_body:
        body.update(request.extra_body)
    return body
