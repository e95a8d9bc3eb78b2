"""`/v1/score` (vLLM): a query (`text_1`) against documents (`text_2`) in, one score per pair."""

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


class ScoreHandler:
    """Score: never streamed; `data` of `{index, score}`, one per document, checked and
    summarised.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.score, model="m",
    ...     prompt="q", documents=("a", "b"))
    >>> ScoreHandler().build_body(request)
    {'model': 'm', 'text_1': 'q', 'text_2': ['a', 'b']}
    """

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.score

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """Model, `text_1` (the query, one text) and `text_2` (the documents), then extras."""
        query, documents = query_and_documents(request)
        body: dict[str, JsonValue] = {"model": request.model, "text_1": query, "text_2": documents}
        return with_extra(body, request)

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A `data` list of `{index, score}` objects."""
        return compile_scores(
            request, body, transfer, what="score", list_key="data", score_key="score"
        )

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> ScoresAccumulator:
        """An accumulator that reports any SSE answer as unexpected: score does not stream."""
        return ScoresAccumulator(request, "score")
