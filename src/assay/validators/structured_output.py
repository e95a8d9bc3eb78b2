"""Is structured output well formed: JSON-mode text and tool-call arguments must parse."""

from __future__ import annotations

import orjson
from returns.result import Result, Success

from assay.core.answer import TextAnswer
from assay.core.diagnostics import DiagnosticCode, UnusableResponse, cap_excerpt
from assay.core.response import GenerationResponse
from assay.validators.chain import reject, screened
from assay.validators.json_schema import describe_json_value, schema_violation

_EXCERPT_LIMIT = 512


def _json_not_asked(response: GenerationResponse) -> bool:
    return not response.echo.json_mode


def _no_tool_calls(response: GenerationResponse) -> bool:
    answer = response.answer
    return type(answer) is not TextAnswer or not answer.tool_calls


@screened(_json_not_asked)
def invalid_json_output(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """With JSON mode asked for, the text must parse as JSON and match the schema, if one was set.

    The schema check covers a practical subset (see `assay.validators.json_schema`).

    >>> from assay.core import Endpoint, RequestEcho, ResponseTiming
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=False,
    ...                        echo=RequestEcho(json_mode=True),
    ...                        answer=TextAnswer(text='{"city": "Par'),
    ...                        finish_reason="length", timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> invalid_json_output(r).failure().message.startswith("JSON mode was requested")
    True
    """
    echo = response.echo
    match response.answer:
        case TextAnswer(text=text, tool_calls=tool_calls):
            # A tool-call-only answer under JSON mode put its structure in the tool call.
            if not echo.json_mode or (not text and tool_calls):
                return Success(response)
        case _:
            return Success(response)
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        return reject(
            response,
            DiagnosticCode.invalid_json_output,
            f"JSON mode was requested but the {len(text)}-character text does not parse"
            f" as JSON ({error}; finish_reason={response.finish_reason!r})",
            excerpt=cap_excerpt(text, _EXCERPT_LIMIT),
        )
    if echo.json_schema:
        problem = schema_violation(document, echo.json_schema)
        if problem is not None:
            return reject(
                response,
                DiagnosticCode.invalid_json_output,
                f"JSON output does not match the requested schema: {problem}",
                excerpt=cap_excerpt(text, _EXCERPT_LIMIT),
            )
    return Success(response)


@screened(_no_tool_calls)
def invalid_tool_call(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """Every tool call's arguments must parse as a JSON object.

    >>> from assay.core import Endpoint, ResponseTiming, ToolCall
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=True,
    ...                        answer=TextAnswer(tool_calls=(
    ...                            ToolCall(name="get_weather", arguments='{"city": '),)),
    ...                        finish_reason="tool_calls",
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> invalid_tool_call(r).failure().message.startswith("tool call 0 (get_weather)")
    True
    """
    match response.answer:
        case TextAnswer(tool_calls=calls):
            pass
        case _:
            return Success(response)
    for call in calls:
        problem = _arguments_problem(call.arguments)
        if problem is not None:
            return reject(
                response,
                DiagnosticCode.invalid_tool_call,
                f"tool call {call.index} ({call.name or 'unnamed'}) has arguments that {problem}",
                excerpt=cap_excerpt(call.arguments, _EXCERPT_LIMIT),
            )
    return Success(response)


def _arguments_problem(arguments: str) -> str | None:
    if not arguments.strip():
        return "are empty (expected a JSON object, at least {})"
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError as error:
        return f"do not parse as JSON ({error}; {len(arguments)} characters)"
    if not isinstance(parsed, dict):
        return f"are JSON but not an object (got {describe_json_value(parsed)})"
    return None
