"""What a run holds its answers and its figures to: the latency SLOs of goodput, and the
thresholds past which a run is INVALID."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, get_args

from assay.spec.capacity import SloFigure

SLO_KEYS: Final[tuple[SloFigure, ...]] = get_args(SloFigure)
"""The latency SLOs `--slo` takes, each named after the metric (in ms) it bounds."""

DEFAULT_MAX_ERROR_RATE: Final = 0.05
"""The share of finished requests a valid run may have errored (5 %)."""

DEFAULT_MAX_NOT_SENT_RATE: Final = 0.05
"""The share of scheduled requests a valid run may have left unsent (5 %): a loaded machine
can leave a request or two due just before a deadline unsent; a client that cannot keep its
rate leaves far more."""


def slo_problem(slo: Mapping[str, float]) -> str | None:
    """What is wrong with a set of SLOs, or None when nothing is.

    >>> slo_problem({"ttft_ms": 500.0}) is None
    True
    >>> slo_problem({"ttft": 500.0})
    'unknown SLO ttft (known: ttft_ms, tpot_ms, itl_ms, e2e_ms)'
    """
    unknown = sorted(set(slo) - set(SLO_KEYS))
    if unknown:
        return f"unknown SLO {', '.join(unknown)} (known: {', '.join(SLO_KEYS)})"
    if any(value <= 0 for value in slo.values()):
        return "SLO thresholds must be positive milliseconds"
    return None


__all__ = ["DEFAULT_MAX_ERROR_RATE", "DEFAULT_MAX_NOT_SENT_RATE", "SLO_KEYS", "slo_problem"]
