"""Rerank and score: the bodies sent, vLLM-shaped answers summarised, and shape faults."""

from __future__ import annotations

import orjson
import pytest
from pydantic import JsonValue

from assay.core import DiagnosticCode, Endpoint, GenerationRequest, Scores, ScoreSummary
from assay.handlers import EndpointHandler, RerankHandler, ScoreHandler, SseParser, Transfer
from tests.handlers.handler_results import fault as _fault
from tests.handlers.handler_results import ok as _ok

DOCUMENTS = ("to the sea", "uphill", "nowhere")
RERANK = GenerationRequest(
    request_id="k1", endpoint=Endpoint.rerank, model="bge-reranker", prompt="q", documents=DOCUMENTS
)
SCORE = GenerationRequest(
    request_id="s1", endpoint=Endpoint.score, model="bge-reranker", prompt="q", documents=DOCUMENTS
)
TRANSFER = Transfer(send_ns=0, end_ns=2_000)


def _rerank_body(results: list[JsonValue]) -> bytes:
    # vLLM's RerankResponse: id, model, usage (prompt_tokens, total_tokens), results best first.
    return orjson.dumps(
        {
            "id": "rerank-1",
            "model": "bge-reranker",
            "usage": {"prompt_tokens": 21, "total_tokens": 21},
            "results": results,
        }
    )


def _score_body(data: list[JsonValue]) -> bytes:
    # vLLM's ScoreResponse: a list object of `{index, object: "score", score}` with usage.
    return orjson.dumps(
        {
            "id": "score-1",
            "object": "list",
            "created": 1796201699,
            "model": "bge-reranker",
            "data": data,
            "usage": {"prompt_tokens": 21, "total_tokens": 21, "completion_tokens": 0},
        }
    )


def _ranked(*pairs: tuple[int, float]) -> list[JsonValue]:
    return [{"index": i, "document": {"text": "d"}, "relevance_score": score} for i, score in pairs]


def test_rerank_body_is_query_documents_and_extras() -> None:
    request = RERANK.model_copy(update={"extra_body": {"top_n": 2}})
    assert RerankHandler().build_body(request) == {
        "model": "bge-reranker",
        "query": "q",
        "documents": list(DOCUMENTS),
        "top_n": 2,
    }


def test_score_body_is_text_1_against_text_2() -> None:
    assert ScoreHandler().build_body(SCORE) == {
        "model": "bge-reranker",
        "text_1": "q",
        "text_2": list(DOCUMENTS),
    }


def test_vllm_rerank_body_is_summarised() -> None:
    body = _rerank_body(_ranked((1, 0.98), (0, 0.5), (2, 0.01)))
    response = _ok(RerankHandler().compile_body(RERANK, body, TRANSFER))
    assert response.answer == Scores(summary=ScoreSummary(count=3, lowest_index=0, highest_index=2))
    assert response.echo.documents == 3
    assert response.echo.expected_results == 3
    assert response.usage is not None
    assert response.usage.prompt_tokens == 21
    assert response.output_tokens == 0
    assert response.text == ""
    assert not response.streamed


def test_rerank_top_n_sets_the_results_expected() -> None:
    request = RERANK.model_copy(update={"extra_body": {"top_n": 2}})
    response = _ok(RerankHandler().compile_body(request, _rerank_body(_ranked((1, 0.9))), TRANSFER))
    assert (response.echo.documents, response.echo.expected_results) == (3, 2)


def test_vllm_score_body_is_summarised() -> None:
    body = _score_body([{"index": i, "object": "score", "score": 0.25 * i} for i in range(3)])
    response = _ok(ScoreHandler().compile_body(SCORE, body, TRANSFER))
    assert response.answer == Scores(summary=ScoreSummary(count=3, lowest_index=0, highest_index=2))


def test_repeats_and_out_of_range_indices_are_summarised_not_refused() -> None:
    body = _rerank_body(_ranked((5, 0.9), (5, 0.5), (-1, 0.1)))
    answer = _ok(RerankHandler().compile_body(RERANK, body, TRANSFER)).answer
    assert answer == Scores(
        summary=ScoreSummary(count=3, lowest_index=-1, highest_index=5, repeated_index=5)
    )


@pytest.mark.parametrize("word", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_a_non_finite_score_is_read_and_counted(word: bytes) -> None:
    # Python's default JSON encoder writes NaN and Infinity; strict parsers refuse them.
    body = _score_body([{"index": 0, "score": 0.5}, {"index": 1, "score": 0.7}]).replace(
        b"0.7", word
    )
    response = _ok(ScoreHandler().compile_body(SCORE, body, TRANSFER))
    assert isinstance(response.answer, Scores)
    assert response.answer.summary is not None
    assert response.answer.summary.non_finite == 1


@pytest.mark.parametrize(
    ("handler", "request_", "body", "words"),
    [
        (RerankHandler(), RERANK, b'{"id": "r", "data": []}', "no `results` list"),
        (ScoreHandler(), SCORE, b'{"id": "s", "results": []}', "no `data` list"),
        (RerankHandler(), RERANK, _rerank_body([{"relevance_score": 0.5}]), "integer `index`"),
        (
            RerankHandler(),
            RERANK,
            _rerank_body([{"index": 0, "relevance_score": "0.5"}]),
            "number `relevance_score`",
        ),
        (ScoreHandler(), SCORE, _score_body([{"index": 0, "score": None}]), "number `score`"),
        (ScoreHandler(), SCORE, _score_body(["0.5"]), "is not an object"),
    ],
)
def test_a_body_without_results_of_the_shape_is_unexpected_shape(
    handler: EndpointHandler, request_: GenerationRequest, body: bytes, words: str
) -> None:
    problem = _fault(handler.compile_body(request_, body, TRANSFER))
    assert problem.code is DiagnosticCode.unexpected_shape
    assert words in problem.message


def test_a_body_that_is_not_json_even_leniently_is_invalid_json() -> None:
    problem = _fault(RerankHandler().compile_body(RERANK, b'{"results": [{"ind', TRANSFER))
    assert problem.code is DiagnosticCode.invalid_json


def test_an_error_object_is_inband_error() -> None:
    body = b'{"error": {"message": "model is not a reranker", "code": 400}}'
    problem = _fault(ScoreHandler().compile_body(SCORE, body, TRANSFER))
    assert problem.code is DiagnosticCode.inband_error
    assert "model is not a reranker" in problem.message


@pytest.mark.parametrize(
    ("handler", "request_"), [(RerankHandler(), RERANK), (ScoreHandler(), SCORE)]
)
def test_a_streamed_ranking_is_unexpected_shape(
    handler: EndpointHandler, request_: GenerationRequest
) -> None:
    accumulator = handler.open_accumulator(request_, 0)
    for event in SseParser().feed(b'data: {"results": []}\n\n'):
        accumulator.feed(event, 1)
    problem = _fault(accumulator.finish(TRANSFER))
    assert problem.code is DiagnosticCode.unexpected_shape
    assert "SSE stream" in problem.message


def test_a_request_without_documents_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="rerank request 'k2' has no documents"):
        GenerationRequest(request_id="k2", endpoint=Endpoint.rerank, model="m", prompt="q")
    with pytest.raises(ValueError, match="score request 's2' has no text query"):
        GenerationRequest(request_id="s2", endpoint=Endpoint.score, model="m", documents=("d",))
