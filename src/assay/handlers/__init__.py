"""Per-endpoint wire formats: request bodies out, `Result`s in, and the SSE parser between.

A handler never raises for anything a server sends: every fault is a
`Failure(UnusableResponse)` with a protocol-stage code (or no_terminal_response).

>>> from assay.core import Endpoint
>>> handler_for(Endpoint.chat).endpoint
<Endpoint.chat: 'chat'>
"""

from assay.core.request import Endpoint
from assay.handlers.base import EndpointHandler, SseEvent, StreamAccumulator, Transfer
from assay.handlers.chat import ChatAccumulator, ChatHandler
from assay.handlers.completions import CompletionsAccumulator, CompletionsHandler
from assay.handlers.embeddings import EmbeddingsAccumulator, EmbeddingsHandler
from assay.handlers.responses import ResponsesAccumulator, ResponsesHandler
from assay.handlers.sse import SseParser

_COMPLETIONS = CompletionsHandler()
_CHAT = ChatHandler()
_RESPONSES = ResponsesHandler()
_EMBEDDINGS = EmbeddingsHandler()


def handler_for(endpoint: Endpoint) -> EndpointHandler:
    """The handler of `endpoint` (handlers are stateless, so one instance serves every request)."""
    match endpoint:
        case Endpoint.completions:
            return _COMPLETIONS
        case Endpoint.chat:
            return _CHAT
        case Endpoint.responses:
            return _RESPONSES
        case Endpoint.embeddings:
            return _EMBEDDINGS


__all__ = [
    "ChatAccumulator",
    "ChatHandler",
    "CompletionsAccumulator",
    "CompletionsHandler",
    "EmbeddingsAccumulator",
    "EmbeddingsHandler",
    "EndpointHandler",
    "ResponsesAccumulator",
    "ResponsesHandler",
    "SseEvent",
    "SseParser",
    "StreamAccumulator",
    "Transfer",
    "handler_for",
]
