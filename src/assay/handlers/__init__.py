"""Per-endpoint wire formats: request bodies out, `Result`s in, and the SSE parser between.

A handler never raises for anything a server sends: every fault is a
`Failure(UnusableResponse)` with a protocol-stage code (or no_terminal_response).

>>> from assay.core import Endpoint
>>> handler_for(Endpoint.chat).endpoint
<Endpoint.chat: 'chat'>
"""

from assay.handlers.base import (
    EndpointHandler,
    SseEvent,
    SseFrame,
    StreamAccumulator,
    Transfer,
)
from assay.handlers.by_endpoint import handler_for
from assay.handlers.chat import ChatAccumulator, ChatHandler
from assay.handlers.completions import CompletionsAccumulator, CompletionsHandler
from assay.handlers.embeddings import EmbeddingsAccumulator, EmbeddingsHandler
from assay.handlers.responses import ResponsesAccumulator, ResponsesHandler
from assay.handlers.scores import RerankHandler, ScoreHandler, ScoresAccumulator
from assay.handlers.sse import SseParser

__all__ = [
    "ChatAccumulator",
    "ChatHandler",
    "CompletionsAccumulator",
    "CompletionsHandler",
    "EmbeddingsAccumulator",
    "EmbeddingsHandler",
    "EndpointHandler",
    "RerankHandler",
    "ResponsesAccumulator",
    "ResponsesHandler",
    "ScoreHandler",
    "ScoresAccumulator",
    "SseEvent",
    "SseFrame",
    "SseParser",
    "StreamAccumulator",
    "Transfer",
    "handler_for",
]
