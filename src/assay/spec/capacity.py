"""The capacity profile: search the offered load for the highest one every SLO holds at.

A percentile SLO (`ttft_ms=500@p99`) allows a fraction of the attempted requests to miss the
limit (1 % at p99); the search (`assay.load.capacity`) runs steps, judges each by a binomial
bound on its miss fraction (`assay.load.step_verdict`), and narrows to a bracket
[last pass, first fail] no wider than `precision`.
"""

from __future__ import annotations

import math
import re
from typing import Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.spec.limits import MAX_DURATION_S, MAX_RATE, MIN_RATE

SloFigure: TypeAlias = Literal["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]
"""The per-request latencies an SLO may bound (TTFT, TPOT, the worst ITL gap, E2E)."""

DEFAULT_PERCENTILE: Final = 99.0
"""The percentile of an SLO written without one (`ttft_ms=500` is `ttft_ms=500@p99`)."""

_SLO_TEXT = re.compile(r"^\s*(\w+)\s*=\s*([^@\s]+)\s*(?:@\s*p?([^\s]+))?\s*$", re.IGNORECASE)


class SloTarget(BaseModel):
    """`figure` within `limit_ms` for `percentile` % of the attempted requests.

    >>> SloTarget.parse("ttft_ms=500@p99").allowed_miss_fraction
    0.01
    >>> SloTarget.parse("e2e_ms=2000").percentile
    99.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    figure: SloFigure
    limit_ms: float = Field(gt=0, allow_inf_nan=False)
    percentile: float = Field(default=DEFAULT_PERCENTILE, gt=0, lt=100, allow_inf_nan=False)

    @classmethod
    def parse(cls, text: str) -> SloTarget:
        """`FIGURE=MS[@pXX]`; malformed text raises `ValueError` naming what is wrong."""
        match = _SLO_TEXT.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not FIGURE=MS[@pXX] (e.g. ttft_ms=500@p99)")
        figure, limit, percentile = match.groups()
        try:
            limit_ms = float(limit)
            fields: dict[str, object] = {"figure": figure.lower(), "limit_ms": limit_ms}
            if percentile is not None:
                fields["percentile"] = float(percentile)
        except ValueError:
            raise ValueError(f"{text!r}: the limit and the percentile are numbers") from None
        return cls.model_validate(fields)

    @property
    def allowed_miss_fraction(self) -> float:
        """The fraction of attempted requests that may miss the limit.

        >>> SloTarget(figure="ttft_ms", limit_ms=1, percentile=90).allowed_miss_fraction
        0.1
        """
        return round(1 - self.percentile / 100, 12)

    def __str__(self) -> str:
        return f"{self.figure}={self.limit_ms:g}@p{self.percentile:g}"


CapacityAxis: TypeAlias = Literal["rate", "concurrency"]
"""What the search varies: an open loop's rate (requests/s) or a closed loop's concurrency."""


class Capacity(BaseModel):
    """Search `axis` for the highest load where every SLO in `slos` holds (see the module doc).

    `start` is the first load tried (1 request/s, or 1 stream); the bracket grows by `growth`
    until a step fails (or shrinks until one passes), then bisects until
    (first fail - last pass) <= `precision` x last pass. A step is judged at `confidence`; one
    left undecided is run again at the same load (its requests pooled), at most
    `max_lengthening` times, and then counts as not passing. `budget_s` bounds the whole
    search: no step starts that would end past it (each step runs `step_s`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["capacity"] = "capacity"
    slos: tuple[SloTarget, ...] = Field(min_length=1)
    axis: CapacityAxis = "rate"
    arrivals: Literal["constant", "poisson"] = "constant"
    start: float | None = Field(default=None, gt=0, allow_inf_nan=False, le=MAX_RATE)
    growth: float = Field(default=2.0, gt=1, le=100, allow_inf_nan=False)
    precision: float = Field(default=0.05, gt=0, lt=1, allow_inf_nan=False)
    confidence: float = Field(default=0.95, gt=0.5, lt=1, allow_inf_nan=False)
    max_lengthening: int = Field(default=3, ge=0, le=20)
    step_s: float = Field(default=10.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    budget_s: float | None = Field(default=None, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)

    @field_validator("slos", mode="before")
    @classmethod
    def _slos_from_text(cls, value: object) -> object:
        """SLOs as `ttft_ms=500@p99` text (a flag's form) or mappings (a config file's)."""
        if isinstance(value, str):
            value = [part for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple):
            return tuple(SloTarget.parse(v) if isinstance(v, str) else v for v in value)
        return value

    @field_validator("slos")
    @classmethod
    def _one_slo_per_figure(cls, slos: tuple[SloTarget, ...]) -> tuple[SloTarget, ...]:
        figures = [slo.figure for slo in slos]
        if len(set(figures)) != len(figures):
            raise ValueError(f"one SLO per figure: {', '.join(map(str, slos))}")
        return slos

    @property
    def first_load(self) -> float:
        """The load of the first step: `start`, else for a rate the least one whose step of
        `step_s` offers enough requests to pass its strictest SLO without a miss (see
        `requests_to_pass`), else one stream.

        >>> Capacity(slos=("ttft_ms=500@p99",), step_s=10).first_load  # 299 requests in 10 s
        29.9
        """
        if self.start is not None:
            return self.start if self.axis == "rate" else float(max(1, round(self.start)))
        if self.axis == "concurrency":
            return 1.0
        return round(max(1.0, self.requests_to_pass / self.step_s), 3)

    @property
    def requests_to_pass(self) -> int:
        """The fewest attempted requests that can pass every SLO (none of them missing): n
        with 1 - (1 - allowed)^n >= confidence for the smallest allowance.

        >>> Capacity(slos=("ttft_ms=500@p99",)).requests_to_pass
        299
        """
        allowed = min(slo.allowed_miss_fraction for slo in self.slos)
        return math.ceil(math.log(1 - self.confidence) / math.log1p(-allowed) - 1e-9)

    @property
    def lowest_load(self) -> float:
        """The least load the search goes down to when even its first step fails."""
        return MIN_RATE if self.axis == "rate" else 1.0


__all__ = [
    "DEFAULT_PERCENTILE",
    "Capacity",
    "CapacityAxis",
    "SloFigure",
    "SloTarget",
]
