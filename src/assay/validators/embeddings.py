"""Is an embeddings answer usable: vectors present, as many as inputs, finite, one dimension."""

from __future__ import annotations

from returns.result import Result, Success

from assay.core.answer import EmbeddingSummary, Vectors
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.response import GenerationResponse
from assay.validators.chain import reject, screened


def _not_vectors(response: GenerationResponse) -> bool:
    return type(response.answer) is not Vectors


@screened(_not_vectors)
def empty_embedding(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """Embeddings only: no vectors, a count other than the inputs, dimension 0, NaN/inf values.

    >>> from assay.core import EmbeddingSummary, Endpoint, RequestEcho, ResponseTiming, Vectors
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.embeddings, streamed=False,
    ...                        echo=RequestEcho(expected_embeddings=4),
    ...                        answer=Vectors(summary=EmbeddingSummary(
    ...                            count=3, dimension=384, all_finite=True)),
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(empty_embedding(r).failure().message)
    embeddings answer has 3 vectors for 4 inputs
    """
    match response.answer:
        case Vectors(summary=summary):
            problem = _embedding_problem(summary, response.echo.expected_embeddings)
            if problem is None:
                return Success(response)
            return reject(response, DiagnosticCode.empty_embedding, f"embeddings answer {problem}")
        case _:
            return Success(response)  # not vectors: the answer's own validators judge it


def _embedding_problem(summary: EmbeddingSummary | None, expected: int | None) -> str | None:
    if summary is None:
        return "carried no embedding data at all"
    if summary.count == 0:
        return "has 0 vectors"
    if expected is not None and summary.count != expected:
        return f"has {summary.count} vectors for {expected} inputs"
    if summary.dimension == 0:
        return f"has {summary.count} vectors of dimension 0"
    if not summary.consistent_dimension:
        return f"has {summary.count} vectors of differing dimensions (first is {summary.dimension})"
    if not summary.all_finite:
        return f"has non-finite values (NaN or infinity) in its {summary.count} vectors"
    return None
