"""Nothing a server sends makes a handler raise: arbitrary JSON and bytes always give a Result."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue
from returns.result import Failure, Success

from assay.core import Endpoint, GenerationRequest
from assay.handlers import SseEvent, SseParser, Transfer, handler_for
from assay.spec.endpoint import Carries

REQUESTS = {
    endpoint: GenerationRequest(
        request_id=f"h-{endpoint}",
        endpoint=endpoint,
        model="m",
        prompt="p",
        messages=({"role": "user", "content": "p"},) if endpoint is Endpoint.chat else None,
        documents=("d", "e") if endpoint.traits.carries is Carries.documents else None,
        audio_file=b"RIFF" if endpoint is Endpoint.transcriptions else None,
    )
    for endpoint in Endpoint
}
TRANSFER = Transfer(send_ns=0, end_ns=1_000)

# Keys the handlers read, so generated objects reach deep into the parsing code.
_KEYS = st.sampled_from(
    [
        "choices", "delta", "message", "content", "text", "reasoning", "reasoning_content",
        "tool_calls", "function", "name", "arguments", "index", "id", "finish_reason", "usage",
        "completion_tokens", "prompt_tokens", "error", "type", "response", "output", "status",
        "item", "output_index", "incomplete_details", "reason", "data", "embedding", "role",
        "model", "summary", "completion_tokens_details", "call_id", "results",
        "relevance_score", "score", "transcript.text.delta",
        "transcript.text.done",
    ]
)  # fmt: skip
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(
        ["response.output_text.delta", "response.completed", "response.failed", "error",
         "function_call", "message", "completed", "incomplete", "[DONE]", "AAAAPw=="]
    )
)  # fmt: skip
JSON_VALUES: st.SearchStrategy[JsonValue] = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(_KEYS | st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=25,
)
_EVENT_NAMES = st.sampled_from(
    ["message", "error", "ping", "response.output_text.delta", "response.completed"]
)


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES)
def test_any_json_body_gives_a_result_for_every_endpoint(value: JsonValue) -> None:
    body = json.dumps(value).encode()
    for endpoint, request in REQUESTS.items():
        result = handler_for(endpoint).compile_body(request, body, TRANSFER)
        assert isinstance(result, Success | Failure)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_as_a_body_give_a_result_for_every_endpoint(body: bytes) -> None:
    for endpoint, request in REQUESTS.items():
        result = handler_for(endpoint).compile_body(request, body, TRANSFER)
        assert isinstance(result, Success | Failure)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_EVENT_NAMES, JSON_VALUES), max_size=6))
def test_any_json_as_sse_data_gives_a_result_for_every_endpoint(
    frames: list[tuple[str, JsonValue]],
) -> None:
    for endpoint, request in REQUESTS.items():
        accumulator = handler_for(endpoint).open_accumulator(request, send_ns=0)
        for position, (name, value) in enumerate(frames):
            accumulator.feed(SseEvent(json.dumps(value).encode(), event=name), position)
        accumulator.partial(TRANSFER)
        assert isinstance(accumulator.finish(TRANSFER), Success | Failure)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 64))
def test_any_byte_stream_through_the_parser_gives_a_result_for_every_endpoint(
    raw: bytes, piece: int
) -> None:
    for endpoint, request in REQUESTS.items():
        parser = SseParser()
        accumulator = handler_for(endpoint).open_accumulator(request, send_ns=0)
        for start in range(0, len(raw), piece):
            for event in parser.feed(raw[start : start + piece]):
                accumulator.feed(event, start)
        for event in parser.close():
            accumulator.feed(event, len(raw))
        assert isinstance(accumulator.finish(TRANSFER), Success | Failure)
