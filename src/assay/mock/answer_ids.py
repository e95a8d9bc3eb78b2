"""The ids the mock's answers carry, prefixed by their API as vLLM prefixes them."""

from __future__ import annotations

from assay.mock.asks import Api


def answer_id(api: Api, response_id: str) -> str:
    """The id the mock's answer on `api` carries, as vLLM names them.

    >>> answer_id(Api.chat, "1f00000001"), answer_id(Api.responses, "1f00000001")
    ('chatcmpl-1f00000001', 'resp_1f00000001')
    """
    return f"{_id_prefix(api)}{response_id}"


def _id_prefix(api: Api) -> str:
    """How vLLM prefixes its answer ids on `api` (a transcription's on its stream chunks only)."""
    match api:
        case Api.chat:
            return "chatcmpl-"
        case Api.completions:
            return "cmpl-"
        case Api.responses:
            return "resp_"
        case Api.embeddings:
            return "embd-"
        case Api.rerank:
            return "rerank-"
        case Api.score:
            return "score-"
        case Api.transcriptions:
            return "trsc-"


__all__ = ["answer_id"]
