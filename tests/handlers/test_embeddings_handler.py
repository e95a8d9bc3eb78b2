"""Embeddings: vLLM float vectors, base64 float32 vectors, summaries and shape faults."""

from __future__ import annotations

import base64
import struct

import orjson
from pydantic import JsonValue

from assay.core import (
    DiagnosticCode,
    EmbeddingSummary,
    Endpoint,
    GenerationRequest,
    Vectors,
)
from assay.handlers import EmbeddingsHandler, EndpointHandler, SseParser, Transfer
from tests.handlers.handler_results import fault as _fault
from tests.handlers.handler_results import ok as _ok

REQUEST = GenerationRequest(
    request_id="e1", endpoint=Endpoint.embeddings, model="bge-small", prompt=("first", "second")
)
HANDLER: EndpointHandler = EmbeddingsHandler()
TRANSFER = Transfer(send_ns=0, end_ns=2_000)


def _vector(seed: int, dimension: int = 384) -> list[JsonValue]:
    return [((seed * 31 + i * 17) % 200 - 100) / 1000 for i in range(dimension)]


def _body(data: list[JsonValue]) -> bytes:
    return orjson.dumps(
        {
            "id": "embd-1",
            "object": "list",
            "created": 1796201699,
            "model": "bge-small",
            "data": data,
            "usage": {"prompt_tokens": 7, "total_tokens": 7, "completion_tokens": 0},
        }
    )


def test_vllm_embeddings_body_is_summarised() -> None:
    body = _body(
        [
            {"object": "embedding", "embedding": _vector(1), "index": 0},
            {"object": "embedding", "embedding": _vector(2), "index": 1},
        ]
    )
    response = _ok(HANDLER.compile_body(REQUEST, body, TRANSFER))

    assert response.answer == Vectors(
        summary=EmbeddingSummary(count=2, dimension=384, all_finite=True, consistent_dimension=True)
    )
    assert response.echo.expected_embeddings == 2
    assert response.usage is not None
    assert response.usage.prompt_tokens == 7
    assert not response.streamed


def test_base64_float32_vectors_are_decoded() -> None:
    packed = base64.b64encode(struct.pack("<4f", 0.25, -1.0, 3.5, 0.0)).decode()
    nan = base64.b64encode(struct.pack("<4f", 0.25, float("nan"), 3.5, 0.0)).decode()
    body = _body([{"embedding": packed, "index": 0}, {"embedding": nan, "index": 1}])
    answer = _ok(HANDLER.compile_body(REQUEST, body, TRANSFER)).answer
    assert answer == Vectors(summary=EmbeddingSummary(count=2, dimension=4, all_finite=False))


def test_inconsistent_dimensions_are_reported_in_the_summary() -> None:
    body = _body([{"embedding": _vector(1)}, {"embedding": _vector(2, dimension=383)}])
    answer = _ok(HANDLER.compile_body(REQUEST, body, TRANSFER)).answer
    assert isinstance(answer, Vectors)
    summary = answer.summary
    assert summary is not None
    assert not summary.consistent_dimension


def test_empty_data_list_compiles_to_zero_vectors_for_the_validators() -> None:
    answer = _ok(HANDLER.compile_body(REQUEST, _body([]), TRANSFER)).answer
    assert answer == Vectors(summary=EmbeddingSummary(count=0, dimension=0, all_finite=True))


def test_vector_that_is_not_a_list_or_base64_is_unexpected_shape() -> None:
    problem = _fault(HANDLER.compile_body(REQUEST, _body([{"embedding": 0.5}]), TRANSFER))
    assert problem.code is DiagnosticCode.unexpected_shape
    assert "item 0" in problem.message


def test_vector_holding_a_string_is_unexpected_shape() -> None:
    body = _body([{"embedding": [0.1, "0.2"]}])
    assert _fault(HANDLER.compile_body(REQUEST, body, TRANSFER)).code is (
        DiagnosticCode.unexpected_shape
    )


def test_body_without_data_is_unexpected_shape() -> None:
    body = b'{"object": "list", "embeddings": []}'
    assert _fault(HANDLER.compile_body(REQUEST, body, TRANSFER)).code is (
        DiagnosticCode.unexpected_shape
    )


def test_embeddings_error_body_is_inband_error() -> None:
    body = b'{"error": {"message": "input is too long", "type": "BadRequestError"}}'
    problem = _fault(HANDLER.compile_body(REQUEST, body, TRANSFER))
    assert problem.code is DiagnosticCode.inband_error
    assert "input is too long" in problem.message


def test_embeddings_answered_as_sse_is_unexpected_shape() -> None:
    accumulator = HANDLER.open_accumulator(REQUEST, send_ns=0)
    for event in SseParser().feed(b'data: {"data": []}\n\n'):
        accumulator.feed(event, 10)
    assert accumulator.failed
    problem = _fault(accumulator.finish(TRANSFER))
    assert problem.code is DiagnosticCode.unexpected_shape


def test_embeddings_request_body_is_never_streamed() -> None:
    body = HANDLER.build_body(REQUEST.model_copy(update={"extra_body": {"dimensions": 64}}))
    assert body == {"model": "bge-small", "input": ["first", "second"], "dimensions": 64}
