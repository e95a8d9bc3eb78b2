"""invalid_json_output (parse and schema subset) and invalid_tool_call."""

from __future__ import annotations

import pytest
from pydantic import JsonValue
from returns.result import Success

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    TextAnswer,
    ToolCall,
    Usage,
)
from assay.validators import invalid_json_output, invalid_tool_call

PERSON_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "role": {"enum": ["admin", "user"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def _json_answer(
    text: str, schema: dict[str, JsonValue] | None = None, json_mode: bool = True
) -> GenerationResponse:
    return GenerationResponse(
        request_id="json-1",
        endpoint=Endpoint.chat,
        streamed=False,
        echo=RequestEcho(json_mode=json_mode, json_schema=schema),
        answer=TextAnswer(text=text),
        finish_reason="stop",
        usage=Usage(prompt_tokens=40, completion_tokens=18),
        timing=ResponseTiming(send_ns=0, end_ns=5_000_000),
    )


def test_valid_json_matching_the_schema_passes() -> None:
    response = _json_answer(
        '{"name": "Ada", "age": 36, "role": "admin", "tags": ["math"]}', PERSON_SCHEMA
    )
    assert invalid_json_output(response) == Success(response)


def test_text_that_is_not_json_is_invalid_json_output() -> None:
    response = _json_answer('Sure! Here is the JSON: {"name": "Ada"')
    diagnostic = invalid_json_output(response).failure()
    assert diagnostic.code is DiagnosticCode.invalid_json_output
    assert diagnostic.message.startswith(
        "JSON mode was requested but the 38-character text does not parse as JSON ("
    )
    assert diagnostic.evidence.excerpt == response.text


def test_without_json_mode_any_text_passes() -> None:
    response = _json_answer("plain prose", json_mode=False)
    assert invalid_json_output(response) == Success(response)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"name": "Ada"}', "$: missing required property 'age'"),
        ('{"name": "Ada", "age": "36"}', "$.age: expected integer, got string '36'"),
        ('{"name": "Ada", "age": true}', "$.age: expected integer, got boolean true"),
        ('{"name": "Ada", "age": 36, "role": "root"}', "$.role: string 'root' is not one of"),
        ('{"name": "Ada", "age": 36, "tags": ["a", 2]}', "$.tags[1]: expected string, got"),
        (
            '{"name": "Ada", "age": 36, "email": "a@b.c"}',
            "$: unexpected property 'email' (additionalProperties is false)",
        ),
        ('["Ada", 36]', "$: expected object, got array"),
    ],
)
def test_json_that_breaks_the_schema_is_invalid_json_output(text: str, problem: str) -> None:
    diagnostic = invalid_json_output(_json_answer(text, PERSON_SCHEMA)).failure()
    assert diagnostic.code is DiagnosticCode.invalid_json_output
    assert diagnostic.message.startswith(
        f"JSON output does not match the requested schema: {problem}"
    )


def test_integral_float_counts_as_integer_and_unknown_keywords_are_ignored() -> None:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 100}},
    }
    response = _json_answer('{"n": 2.0}', schema)
    assert invalid_json_output(response) == Success(response)


def _tool_answer(*arguments: str) -> GenerationResponse:
    calls = tuple(
        ToolCall(index=i, id=f"call_{i}", name="get_weather", arguments=a)
        for i, a in enumerate(arguments)
    )
    return GenerationResponse(
        request_id="tool-1",
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(tool_calls=calls),
        finish_reason="tool_calls",
        terminal_seen=True,
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )


def test_tool_calls_with_object_arguments_pass() -> None:
    response = _tool_answer('{"city": "Paris"}', "{}")
    assert invalid_tool_call(response) == Success(response)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"city": "Par', "tool call 1 (get_weather) has arguments that do not parse as JSON"),
        ("", "tool call 1 (get_weather) has arguments that are empty"),
        ('["Paris"]', "tool call 1 (get_weather) has arguments that are JSON but not an object"),
    ],
)
def test_tool_call_with_bad_arguments_is_invalid_tool_call(arguments: str, problem: str) -> None:
    diagnostic = invalid_tool_call(_tool_answer('{"city": "Oslo"}', arguments)).failure()
    assert diagnostic.code is DiagnosticCode.invalid_tool_call
    assert diagnostic.message.startswith(problem)


def test_tool_call_only_answer_under_json_mode_is_not_judged_as_text() -> None:
    response = _tool_answer('{"city": "Paris"}').model_copy(
        update={"echo": RequestEcho(json_mode=True)}
    )
    assert invalid_json_output(response) == Success(response)
