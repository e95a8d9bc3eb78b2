"""`/v1/rerank` and `/v1/score` answers: deterministic relevance scores, with faults.

A score comes from a hash of the query and the document, not a model, so it is stable across
runs and processes and costs microseconds. Rerank sorts the results best first and keeps
`top_n` of them when asked, as vLLM does; score answers one score per pair, in order.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Final

import orjson

from assay.mock.asks import RankingAsk
from assay.mock.faults import FaultSpec
from assay.mock.per_endpoint import answer_id
from assay.mock.script import BodyScript, error_object, faulted_body
from assay.spec.endpoint import Endpoint

# A placeholder written where the `non_finite_score` fault puts a NaN: orjson writes no NaN,
# Python's default JSON encoder (which servers use) writes the bare word.
_NAN_PLACEHOLDER: Final = "__assay_nan__"


def relevance(query: str, document: str) -> float:
    """A score in [0, 1) determined by the pair alone.

    >>> relevance("q", "d") == relevance("q", "d"), 0 <= relevance("q", "d") < 1
    (True, True)
    """
    digest = hashlib.blake2b(f"{query}\x00{document}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def ranking_body(
    api: Endpoint, ask: RankingAsk, response_id: str, fault: FaultSpec | None
) -> BodyScript:
    """The rerank or score answer of one request, with `fault` applied."""
    name = fault.name if fault is not None else None
    match name:
        case "inband_error":
            error = error_object(f"{api} failure (injected by the mock)", "server_error", 500)
            return BodyScript(body=orjson.dumps({"error": error}))
        case "invalid_json":
            return BodyScript(body=b'{"id": "rerank-1", "results": [{"index": 0, "relev')
        case _:
            pass  # scores, below
    payload, listed = _payload(api, ask, response_id, name)
    if name == "unexpected_shape":
        payload["ranking"] = payload.pop(listed)
    body = orjson.dumps(payload)
    if name == "non_finite_score":
        body = body.replace(f'"{_NAN_PLACEHOLDER}"'.encode(), b"NaN")
    return faulted_body(body, fault)


def _payload(
    api: Endpoint, ask: RankingAsk, response_id: str, fault: str | None
) -> tuple[dict[str, Any], str]:
    """The answer's JSON object and the key of its result list."""
    scores = [relevance(q, d) for q, d in zip(ask.queries, ask.documents, strict=True)]
    results: list[tuple[int, float | str]] = list(enumerate(scores))
    match api:
        case Endpoint.rerank:
            results.sort(key=lambda result: -scores[result[0]])
            if 0 < ask.top_n < len(results):
                results = results[: ask.top_n]
            results = _with_fault(results, fault, len(ask.documents))
            last = len(ask.documents) - 1
            rerank = {
                "id": answer_id(api, response_id),
                "model": ask.model,
                "usage": {"prompt_tokens": ask.prompt_tokens, "total_tokens": ask.prompt_tokens},
                "results": [
                    {
                        "index": index,
                        "document": {"text": ask.documents[min(index, last)]},
                        "relevance_score": score,
                    }
                    for index, score in results
                ],
            }
            return rerank, "results"
        case Endpoint.score:
            results = _with_fault(results, fault, len(ask.documents))
            score = {
                "id": answer_id(api, response_id),
                "object": "list",
                "created": int(time.time()),
                "model": ask.model,
                "data": [
                    {"index": index, "object": "score", "score": value} for index, value in results
                ],
                "usage": {
                    "prompt_tokens": ask.prompt_tokens,
                    "total_tokens": ask.prompt_tokens,
                    "completion_tokens": 0,
                },
            }
            return score, "data"
        case _:
            raise AssertionError(f"{api} answers are not rankings")


def _with_fault(
    results: list[tuple[int, float | str]], fault: str | None, documents: int
) -> list[tuple[int, float | str]]:
    """The `(index, score)` results with a ranking fault applied to the last one: dropped,
    pointing past the documents, naming the first one's document again, or NaN."""
    if not results:
        return results
    last_index, last_score = results[-1]
    match fault:
        case "no_results":
            return []
        case "result_count_mismatch":
            return results[:-1]
        case "index_out_of_range":
            return [*results[:-1], (documents, last_score)]
        case "repeated_index" if len(results) > 1:
            return [*results[:-1], (results[0][0], last_score)]
        case "repeated_index":
            return [*results, results[0]]  # one result: repeated, it is one too many
        case "non_finite_score":
            return [*results[:-1], (last_index, _NAN_PLACEHOLDER)]
        case _:
            return results


__all__ = ["ranking_body", "relevance"]
