"""`/v1/rerank` and `/v1/score`: a query and documents in, a list of results out, each a
document index and a score.

The scores are checked and summarised (count, the indices named, repeats, non-finite values),
not kept; the validators of `validators/scores.py` judge the summary against the request.
"""

from __future__ import annotations

import math
from typing import ClassVar

from pydantic import JsonValue
from returns.result import Failure, Result

from assay.core.answer import Scores, ScoreSummary
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.handlers.base import Transfer
from assay.handlers.stream import NotStreamed
from assay.handlers.wire import (
    body_answer,
    body_list,
    decode_body,
    query_and_documents,
    unusable,
    with_extra,
)
from assay.spec.endpoint import Endpoint


def summarise_scores(items: list[object], score_key: str, what: str) -> ScoreSummary | str:
    """The summary of a results list, or what is wrong with its shape.

    >>> summarise_scores([{"index": 2, "relevance_score": 0.9},
    ...                   {"index": 0, "relevance_score": 0.1}], "relevance_score", "rerank")
    ScoreSummary(count=2, lowest_index=0, highest_index=2, repeated_index=None, non_finite=0)
    >>> summarise_scores([{"index": 0, "score": "high"}], "score", "score")
    'score body item 0 has no number `score`'
    """
    seen: set[int] = set()
    lowest: int | None = None
    highest: int | None = None
    repeated: int | None = None
    non_finite = 0
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            return f"{what} body item {position} is not an object"
        index = item.get("index")
        if type(index) is not int:
            return f"{what} body item {position} has no integer `index`"
        score = item.get(score_key)
        if type(score) is not float and type(score) is not int:
            return f"{what} body item {position} has no number `{score_key}`"
        if not math.isfinite(score):
            non_finite += 1
        if index in seen:
            repeated = index if repeated is None else repeated
        else:
            seen.add(index)
        lowest = index if lowest is None else min(lowest, index)
        highest = index if highest is None else max(highest, index)
    return ScoreSummary(
        count=len(items),
        lowest_index=lowest,
        highest_index=highest,
        repeated_index=repeated,
        non_finite=non_finite,
    )


class ScoresAccumulator(NotStreamed):
    """Rerank and score answers are never streamed (see `NotStreamed`)."""

    __slots__ = ()


class _ScoresHandler:
    """Rerank and score, which differ only in their keys: the query and documents sent, the
    results list and each result's score read. Never streamed."""

    _ENDPOINT: ClassVar[Endpoint]
    _QUERY_KEY: ClassVar[str]
    _DOCUMENTS_KEY: ClassVar[str]
    _LIST_KEY: ClassVar[str]
    _SCORE_KEY: ClassVar[str]

    @property
    def endpoint(self) -> Endpoint:
        return self._ENDPOINT

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """Model, query and documents, then extras (`top_n`, ...); `stream` is never sent."""
        query, documents = query_and_documents(request)
        body: dict[str, JsonValue] = {
            "model": request.model,
            self._QUERY_KEY: query,
            self._DOCUMENTS_KEY: documents,
        }
        return with_extra(body, request)

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """The answer of a body holding a list of `{index, score}` results.

        A `NaN` or `Infinity` score is read as such (a Python server's encoder writes them), so
        the `non_finite_score` validator names it instead of the body reading as invalid_json.
        """
        what = self._ENDPOINT.value
        obj = decode_body(body, transfer, what, non_finite=True)
        if isinstance(obj, UnusableResponse):
            return Failure(obj)
        items = body_list(obj, self._LIST_KEY, body, transfer, what)
        if isinstance(items, UnusableResponse):
            return Failure(items)
        summary = summarise_scores(items, self._SCORE_KEY, what)
        if isinstance(summary, str):
            return Failure(unusable(DiagnosticCode.unexpected_shape, summary, transfer, body))
        return body_answer(request, request.endpoint, obj, transfer, Scores(summary=summary))

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> ScoresAccumulator:
        """An accumulator that reports any SSE answer as unexpected: the endpoint never streams."""
        return ScoresAccumulator(request, self._ENDPOINT.value)


class RerankHandler(_ScoresHandler):
    """`/v1/rerank` (vLLM, the Jina/Cohere shape): `query` and `documents` in, `results` of
    `{index, relevance_score}` out, best first (`document` is not read). `top_n` (in the
    request fields) asks for the best N only.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.rerank, model="m",
    ...     prompt="q", documents=("a", "b"))
    >>> RerankHandler().build_body(request)
    {'model': 'm', 'query': 'q', 'documents': ['a', 'b']}
    """

    _ENDPOINT = Endpoint.rerank
    _QUERY_KEY = "query"
    _DOCUMENTS_KEY = "documents"
    _LIST_KEY = "results"
    _SCORE_KEY = "relevance_score"


class ScoreHandler(_ScoresHandler):
    """`/v1/score` (vLLM): a query (`text_1`) against documents (`text_2`) in, `data` of
    `{index, score}` out, one per document.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.score, model="m",
    ...     prompt="q", documents=("a", "b"))
    >>> ScoreHandler().build_body(request)
    {'model': 'm', 'text_1': 'q', 'text_2': ['a', 'b']}
    """

    _ENDPOINT = Endpoint.score
    _QUERY_KEY = "text_1"
    _DOCUMENTS_KEY = "text_2"
    _LIST_KEY = "data"
    _SCORE_KEY = "score"


__all__ = ["RerankHandler", "ScoreHandler", "ScoresAccumulator", "summarise_scores"]
