"""empty_embedding: every way an embeddings answer can be unusable, and the usable one."""

from __future__ import annotations

import pytest
from returns.result import Success

from assay.core import (
    DiagnosticCode,
    EmbeddingSummary,
    Endpoint,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    TextAnswer,
    Usage,
    Vectors,
)
from assay.validators import empty_embedding


def _embeddings(summary: EmbeddingSummary | None, expected: int = 2) -> GenerationResponse:
    return GenerationResponse(
        request_id="emb-1",
        endpoint=Endpoint.embeddings,
        streamed=False,
        model="bge-small",
        echo=RequestEcho(expected_embeddings=expected),
        answer=Vectors(summary=summary),
        usage=Usage(prompt_tokens=14, total_tokens=14),
        timing=ResponseTiming(send_ns=0, end_ns=2_000_000),
    )


def test_two_finite_vectors_for_two_inputs_are_usable() -> None:
    response = _embeddings(EmbeddingSummary(count=2, dimension=384, all_finite=True))
    assert empty_embedding(response) == Success(response)


@pytest.mark.parametrize(
    ("summary", "message"),
    [
        (None, "embeddings answer carried no embedding data at all"),
        (
            EmbeddingSummary(count=0, dimension=0, all_finite=True),
            "embeddings answer has 0 vectors",
        ),
        (
            EmbeddingSummary(count=1, dimension=384, all_finite=True),
            "embeddings answer has 1 vectors for 2 inputs",
        ),
        (
            EmbeddingSummary(count=2, dimension=0, all_finite=True),
            "embeddings answer has 2 vectors of dimension 0",
        ),
        (
            EmbeddingSummary(count=2, dimension=384, all_finite=False),
            "embeddings answer has non-finite values (NaN or infinity) in its 2 vectors",
        ),
        (
            EmbeddingSummary(count=2, dimension=384, all_finite=True, consistent_dimension=False),
            "embeddings answer has 2 vectors of differing dimensions (first is 384)",
        ),
    ],
)
def test_unusable_embeddings_are_empty_embedding(
    summary: EmbeddingSummary | None, message: str
) -> None:
    response = _embeddings(summary)
    diagnostic = empty_embedding(response).failure()
    assert diagnostic.code is DiagnosticCode.empty_embedding
    assert diagnostic.message == message
    assert diagnostic.evidence.partial is response


def test_generation_answers_are_not_judged_by_empty_embedding() -> None:
    response = GenerationResponse(
        request_id="c1",
        endpoint=Endpoint.chat,
        streamed=False,
        answer=TextAnswer(text="hello"),
        finish_reason="stop",
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    assert empty_embedding(response) == Success(response)
