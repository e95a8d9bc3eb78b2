"""Streaming, mergeable aggregation of request records into per-step metrics (bounded memory)."""

from assay.metrics.aggregator import StepAggregator, TimeWindow
from assay.metrics.concurrency import ConcurrencyPeak, ConcurrencyTracker
from assay.metrics.sketch import PERCENTILES, RELATIVE_ERROR, Distribution, QuantileSketch
from assay.metrics.slo import Slo
from assay.metrics.step_metrics import (
    Concurrency,
    ErrorSummary,
    Goodput,
    Latency,
    Outcomes,
    StepMetrics,
    Throughput,
    Tokens,
)
from assay.metrics.timeline import Timeline, TimelineSnapshot

__all__ = [
    "PERCENTILES",
    "RELATIVE_ERROR",
    "Concurrency",
    "ConcurrencyPeak",
    "ConcurrencyTracker",
    "Distribution",
    "ErrorSummary",
    "Goodput",
    "Latency",
    "Outcomes",
    "QuantileSketch",
    "Slo",
    "StepAggregator",
    "StepMetrics",
    "Throughput",
    "TimeWindow",
    "Timeline",
    "TimelineSnapshot",
    "Tokens",
]
