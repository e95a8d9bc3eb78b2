"""The server's own metrics (Prometheus `/metrics`): a second observer of a run, beside the client.

assay scrapes the target's metrics before, during and after the load, reports the server's
counts beside its own, and flags where they disagree (see `summary.cross_check`).
"""

from assay.server_metrics.accounting import PLAIN as PLAIN_ACCOUNTING
from assay.server_metrics.accounting import Accounting, accounting_notes, accounting_of
from assay.server_metrics.checks import AssayCounts, CrossCheck, ServerCounts, cross_check
from assay.server_metrics.families import Quantity, ServerKind, detect_kind, quantities_of
from assay.server_metrics.observer import ServerMetricsObserver, TimedSample
from assay.server_metrics.scrape import Scraped, parse_exposition, scrape
from assay.server_metrics.summary import (
    ServerMetricsReport,
    ServerSeries,
    StepBounds,
    StepServerCounts,
    counter_delta,
    summarize,
)

__all__ = [
    "PLAIN_ACCOUNTING",
    "Accounting",
    "AssayCounts",
    "CrossCheck",
    "Quantity",
    "Scraped",
    "ServerCounts",
    "ServerKind",
    "ServerMetricsObserver",
    "ServerMetricsReport",
    "ServerSeries",
    "StepBounds",
    "StepServerCounts",
    "TimedSample",
    "accounting_notes",
    "accounting_of",
    "counter_delta",
    "cross_check",
    "detect_kind",
    "parse_exposition",
    "quantities_of",
    "scrape",
    "summarize",
]
