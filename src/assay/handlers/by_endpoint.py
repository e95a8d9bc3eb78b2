"""The handler of each endpoint."""

from __future__ import annotations

import orjson
from pydantic import JsonValue

from assay.core.request import GenerationRequest
from assay.handlers.base import EndpointHandler
from assay.handlers.chat import ChatHandler
from assay.handlers.completions import CompletionsHandler
from assay.handlers.embeddings import EmbeddingsHandler
from assay.handlers.responses import ResponsesHandler
from assay.handlers.scores import RerankHandler, ScoreHandler
from assay.handlers.transcriptions import TranscriptionsHandler, form_body
from assay.spec.endpoint import Carries, Endpoint

_COMPLETIONS = CompletionsHandler()
_CHAT = ChatHandler()
_RESPONSES = ResponsesHandler()
_EMBEDDINGS = EmbeddingsHandler()
_RERANK = RerankHandler()
_SCORE = ScoreHandler()
_TRANSCRIPTIONS = TranscriptionsHandler()


def handler_for(endpoint: Endpoint) -> EndpointHandler:
    """The handler of `endpoint` (handlers are stateless, so one instance serves every request).

    >>> handler_for(Endpoint.chat).endpoint
    <Endpoint.chat: 'chat'>
    """
    match endpoint:
        case Endpoint.completions:
            return _COMPLETIONS
        case Endpoint.chat:
            return _CHAT
        case Endpoint.responses:
            return _RESPONSES
        case Endpoint.embeddings:
            return _EMBEDDINGS
        case Endpoint.rerank:
            return _RERANK
        case Endpoint.score:
            return _SCORE
        case Endpoint.transcriptions:
            return _TRANSCRIPTIONS


def encoded_body(
    request: GenerationRequest, payload: dict[str, JsonValue]
) -> tuple[bytes, str | None]:
    """The bytes of a request body built by its handler, and its Content-Type when that is not
    JSON (a multipart upload carries its boundary there).

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.chat, model="m",
    ...                             prompt="Hi")
    >>> encoded_body(request, {"model": "m"})
    (b'{"model":"m"}', None)
    """
    match request.endpoint.traits.carries:
        case Carries.audio:
            return form_body(request, payload)
        case Carries.messages | Carries.prompt | Carries.inputs | Carries.documents:
            return orjson.dumps(payload), None
