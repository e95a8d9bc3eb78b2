"""The mock's /v1/rerank and /v1/score answers, read with a raw aiohttp client."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from assay.data.tokenizer import BuiltinTokenizer
from assay.mock.ranking import relevance

TOKENIZER = BuiltinTokenizer()
QUERY = "where do rivers go"
DOCUMENTS = ["to the sea", "uphill against the wind", "nowhere at all", "into lakes"]


async def post(url: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + path, json=body) as response,
    ):
        return response.status, orjson.loads(await response.read())


def pair_tokens(queries: list[str], documents: list[str]) -> int:
    return sum(
        TOKENIZER.count(q) + TOKENIZER.count(d) for q, d in zip(queries, documents, strict=True)
    )


async def test_rerank_answers_every_document_best_first(mock_url: str) -> None:
    status, answer = await post(
        mock_url, "/v1/rerank", {"model": "m", "query": QUERY, "documents": DOCUMENTS}
    )
    assert status == 200
    results = answer["results"]
    assert sorted(result["index"] for result in results) == [0, 1, 2, 3]
    scores = [result["relevance_score"] for result in results]
    assert scores == sorted(scores, reverse=True)
    for result in results:
        assert result["relevance_score"] == relevance(QUERY, DOCUMENTS[result["index"]])
        assert result["document"] == {"text": DOCUMENTS[result["index"]]}
    # A cross-encoder reads the query once per document.
    expected = pair_tokens([QUERY] * 4, DOCUMENTS)
    assert answer["usage"] == {"prompt_tokens": expected, "total_tokens": expected}
    assert answer["model"] == "m"


@pytest.mark.parametrize(("top_n", "count"), [(2, 2), (0, 4), (9, 4)])
async def test_rerank_top_n_keeps_the_best_n(mock_url: str, top_n: int, count: int) -> None:
    body = {"query": QUERY, "documents": DOCUMENTS}
    _, every = await post(mock_url, "/v1/rerank", body)
    _, best = await post(mock_url, "/v1/rerank", {**body, "top_n": top_n})
    assert best["results"] == every["results"][:count]


async def test_score_answers_one_score_per_pair_in_order(mock_url: str) -> None:
    status, answer = await post(mock_url, "/v1/score", {"text_1": QUERY, "text_2": DOCUMENTS})
    assert status == 200
    assert answer["object"] == "list"
    assert [item["index"] for item in answer["data"]] == [0, 1, 2, 3]
    assert [item["score"] for item in answer["data"]] == [relevance(QUERY, d) for d in DOCUMENTS]
    assert {item["object"] for item in answer["data"]} == {"score"}
    assert answer["usage"]["completion_tokens"] == 0
    assert answer["usage"]["prompt_tokens"] == pair_tokens([QUERY] * 4, DOCUMENTS)


async def test_score_takes_two_lists_pair_by_pair(mock_url: str) -> None:
    queries = ["a question", "another question"]
    _, answer = await post(mock_url, "/v1/score", {"text_1": queries, "text_2": DOCUMENTS[:2]})
    assert [item["score"] for item in answer["data"]] == [
        relevance(q, d) for q, d in zip(queries, DOCUMENTS[:2], strict=True)
    ]


@pytest.mark.parametrize(
    ("path", "body", "words"),
    [
        ("/v1/rerank", {"documents": DOCUMENTS}, "without a text `query`"),
        ("/v1/rerank", {"query": QUERY, "documents": []}, "`documents` must be a text"),
        ("/v1/rerank", {"query": QUERY, "documents": DOCUMENTS, "top_n": -1}, "`top_n`"),
        ("/v1/score", {"text_1": ["a", "b"], "text_2": ["x", "y", "z"]}, "as many as `text_2`"),
        ("/v1/score", {"text_1": QUERY, "text_2": [1, 2]}, "`text_2` must be a text"),
    ],
)
async def test_a_bad_ranking_body_is_a_400_naming_the_field(
    mock_url: str, path: str, body: dict[str, Any], words: str
) -> None:
    status, answer = await post(mock_url, path, body)
    assert status == 400
    assert words in answer["error"]["message"]
