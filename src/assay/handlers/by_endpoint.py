"""The handler of each endpoint."""

from __future__ import annotations

from assay.handlers.base import EndpointHandler
from assay.handlers.chat import ChatHandler
from assay.handlers.completions import CompletionsHandler
from assay.handlers.embeddings import EmbeddingsHandler
from assay.handlers.responses import ResponsesHandler
from assay.handlers.transcriptions import TranscriptionsHandler
from assay.spec.endpoint import Endpoint

_COMPLETIONS = CompletionsHandler()
_CHAT = ChatHandler()
_RESPONSES = ResponsesHandler()
_EMBEDDINGS = EmbeddingsHandler()
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
        case Endpoint.transcriptions:
            return _TRANSCRIPTIONS
