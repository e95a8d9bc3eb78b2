"""What the mock serves on each endpoint besides the body itself: the id its answers carry and
the faults it can play there. A new endpoint decides both here, and how its body is answered in
`app.py` (`_one_body` for an answer in one body without output tokens)."""

from __future__ import annotations

from assay.mock.faults import RANKING_FAULTS
from assay.spec.endpoint import Endpoint


def answer_id(api: Endpoint, response_id: str) -> str:
    """The id the mock's answer on `api` carries, prefixed as vLLM prefixes them (a
    transcription's on its stream chunks only).

    >>> answer_id(Endpoint.chat, "1f00000001"), answer_id(Endpoint.responses, "1f00000001")
    ('chatcmpl-1f00000001', 'resp_1f00000001')
    """
    match api:
        case Endpoint.chat:
            return f"chatcmpl-{response_id}"
        case Endpoint.completions:
            return f"cmpl-{response_id}"
        case Endpoint.responses:
            return f"resp_{response_id}"
        case Endpoint.embeddings:
            return f"embd-{response_id}"
        case Endpoint.rerank:
            return f"rerank-{response_id}"
        case Endpoint.score:
            return f"score-{response_id}"
        case Endpoint.transcriptions:
            return f"trsc-{response_id}"


_EVERYWHERE = frozenset(
    {"no_body", "inband_error", "drop", "stall", "http_429", "http_500", "http_503"}
    | {"html_200", "invalid_json", "unexpected_shape"}
)
_GENERATION = _EVERYWHERE | {"empty_stream", "short_output", "invalid_json_output"}
# Faults only a stream has: an SSE frame, an end without terminal event, usage against streamed
# tokens (a whole body has no streamed count to disagree with).
_STREAMED = _GENERATION | {"sse_error_event", "truncated_stream", "wrong_usage"}
_CHOICES = frozenset({"choices_empty", "missing_finish_reason"})
# `[DONE]` ends only a chat/completions stream; a responses stream ends with its terminal event.
_DONE_ENDED = _STREAMED | _CHOICES | {"missing_done"}


def _applicable(api: Endpoint, stream: bool) -> frozenset[str]:
    """The faults that can be produced on `api`, streamed or not (`stream` is ignored by an API
    that never streams)."""
    match api:
        case Endpoint.chat:
            return (_DONE_ENDED if stream else _GENERATION | _CHOICES) | {"invalid_tool_call"}
        case Endpoint.completions:
            return _DONE_ENDED if stream else _GENERATION | _CHOICES
        case Endpoint.responses:
            return _STREAMED if stream else _GENERATION
        case Endpoint.embeddings:
            return _EVERYWHERE | {"empty_embedding"}
        case Endpoint.rerank | Endpoint.score:
            return _EVERYWHERE | RANKING_FAULTS
        case Endpoint.transcriptions if stream:
            # A transcript has no JSON mode, no tool call, no ignore_eos (a short one is not a
            # fault a client can tell) and, in OpenAI's stream, no finish_reason.
            return (_STREAMED - {"invalid_json_output", "short_output"}) | {
                "missing_done",
                "choices_empty",
            }
        case Endpoint.transcriptions:
            return _EVERYWHERE | {"empty_stream"}


def fault_applies(fault: str, api: Endpoint, stream: bool) -> bool:
    """Whether `fault` can be produced on this endpoint and mode (`drop` can; `choices_empty`
    has no meaning for `/v1/responses`, `sse_error_event` none for a whole JSON body).

    >>> fault_applies("empty_embedding", Endpoint.embeddings, False)
    True
    >>> fault_applies("sse_error_event", Endpoint.chat, False)
    False
    """
    return fault in _applicable(api, stream)


__all__ = ["answer_id", "fault_applies"]
