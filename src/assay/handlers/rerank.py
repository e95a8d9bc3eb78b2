"""`/v1/rerank` (vLLM, the Jina/Cohere shape): a query and documents in, ranked results out."""

from __future__ import annotations

from pydantic import JsonValue
from returns.result import Result

from assay.core.diagnostics import UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.handlers.base import Transfer
from assay.handlers.scores import ScoresAccumulator, compile_scores
from assay.handlers.wire import query_and_documents, with_extra
from assay.spec.endpoint import Endpoint


class RerankHandler:
    """Rerank: never streamed; `results` of `{index, relevance_score}`, best first, checked and
    summarised. `top_n` (in the request fields) asks for the best N only.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.rerank, model="m",
    ...     prompt="q", documents=("a", "b"))
    >>> RerankHandler().build_body(request)
    {'model': 'm', 'query': 'q', 'documents': ['a', 'b']}
    """

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.rerank

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """Model, query and documents, then extras (`top_n`, ...); `stream` is never sent."""
        query, documents = query_and_documents(request)
        body: dict[str, JsonValue] = {
            "model": request.model,
            "query": query,
            "documents": documents,
        }
        return with_extra(body, request)

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A `results` list of `{index, relevance_score}` (`document` is not read)."""
        return compile_scores(
            request,
            body,
            transfer,
            what="rerank",
            list_key="results",
            score_key="relevance_score",
        )

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> ScoresAccumulator:
        """An accumulator that reports any SSE answer as unexpected: rerank does not stream."""
        return ScoresAccumulator(request, "rerank")
