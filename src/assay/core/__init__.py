"""The types every layer shares: requests, responses, diagnostics, the outcome bridge, clocks."""

from assay.core.clock import Clock, MonotonicClock
from assay.core.diagnostics import (
    CODE_MEANINGS,
    DiagnosticCode,
    Evidence,
    Stage,
    UnusableResponse,
    cap_excerpt,
    stage_of,
)
from assay.core.outcome import outcome
from assay.core.request import Endpoint, GenerationRequest, RequestEcho
from assay.core.response import (
    EmbeddingSummary,
    GenerationResponse,
    ResponseTiming,
    TokenSource,
    ToolCall,
    Usage,
)

__all__ = [
    "CODE_MEANINGS",
    "Clock",
    "DiagnosticCode",
    "EmbeddingSummary",
    "Endpoint",
    "Evidence",
    "GenerationRequest",
    "GenerationResponse",
    "MonotonicClock",
    "RequestEcho",
    "ResponseTiming",
    "Stage",
    "TokenSource",
    "ToolCall",
    "UnusableResponse",
    "Usage",
    "cap_excerpt",
    "outcome",
    "stage_of",
]
