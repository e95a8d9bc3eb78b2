"""The types every layer shares: requests, responses, diagnostics, the outcome bridge, clocks."""

from assay.core.answer import EmbeddingSummary, Scores, ScoreSummary, TextAnswer, ToolCall, Vectors
from assay.core.clock import Clock, MonotonicClock
from assay.core.diagnostics import (
    CODE_MEANINGS,
    AnyCode,
    CustomCode,
    DiagnosticCode,
    Evidence,
    Stage,
    UnusableResponse,
    cap_excerpt,
    parse_code,
    stage_of,
)
from assay.core.outcome import outcome
from assay.core.request import GenerationRequest, RequestEcho
from assay.core.response import (
    ExchangeIds,
    GenerationResponse,
    ResponseTiming,
    SentBody,
    TokenSource,
    Usage,
)
from assay.spec.endpoint import Endpoint

__all__ = [
    "CODE_MEANINGS",
    "AnyCode",
    "Clock",
    "CustomCode",
    "DiagnosticCode",
    "EmbeddingSummary",
    "Endpoint",
    "Evidence",
    "ExchangeIds",
    "GenerationRequest",
    "GenerationResponse",
    "MonotonicClock",
    "RequestEcho",
    "ResponseTiming",
    "ScoreSummary",
    "Scores",
    "SentBody",
    "Stage",
    "TextAnswer",
    "TokenSource",
    "ToolCall",
    "UnusableResponse",
    "Usage",
    "Vectors",
    "cap_excerpt",
    "outcome",
    "parse_code",
    "stage_of",
]
