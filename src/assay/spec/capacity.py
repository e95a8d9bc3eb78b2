"""The capacity profile: search the offered load for the highest one every SLO holds at.

A percentile SLO (`ttft_ms=500@p99`) allows a fraction of the attempted requests to miss the
limit (1 % at p99); the search (`assay.load.capacity`) runs steps, judges each by a binomial
bound on its miss fraction (`assay.load.step_verdict`), and narrows to a bracket
[last pass, first fail] no wider than `precision`.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Final, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)

from assay.spec.constraints import Constraints
from assay.spec.limits import MAX_DURATION_S, MAX_RATE, MIN_RATE
from assay.spec.parameter import Asked

SloFigure: TypeAlias = Literal["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]
"""The per-request latencies an SLO may bound (TTFT, TPOT, the worst ITL gap, E2E)."""

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
    # An SLO written without one is p99 (`ttft_ms=500` is `ttft_ms=500@p99`).
    percentile: float = Field(default=99.0, gt=0, lt=100, allow_inf_nan=False)

    @classmethod
    def parse(cls, text: str) -> SloTarget:
        """`FIGURE=MS[@pXX]`; malformed text raises `ValueError` naming what is wrong."""
        return cls.model_validate(text)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: object) -> object:
        """An SLO given as its text (a flag's, a config file's, report.json's form)."""
        if not isinstance(value, str):
            return value
        match = _SLO_TEXT.match(value)
        if match is None:
            raise ValueError(f"{value!r} is not FIGURE=MS[@pXX] (e.g. ttft_ms=500@p99)")
        figure, limit, percentile = match.groups()
        try:
            fields: dict[str, object] = {"figure": figure.lower(), "limit_ms": float(limit)}
            if percentile is not None:
                fields["percentile"] = float(percentile)
        except ValueError:
            raise ValueError(f"{value!r}: the limit and the percentile are numbers") from None
        return fields

    @property
    def allowed_miss_fraction(self) -> float:
        """The fraction of attempted requests that may miss the limit.

        >>> SloTarget(figure="ttft_ms", limit_ms=1, percentile=90).allowed_miss_fraction
        0.1
        """
        return round(1 - self.percentile / 100, 12)

    def __str__(self) -> str:
        return f"{self.figure}={self.limit_ms:g}@p{self.percentile:g}"

    @model_serializer
    def _as_text(self) -> str:
        """Written as it is given (`ttft_ms=500@p99`), so config and report.json read alike."""
        return str(self)


# How an error asks for the SLOs of a capacity search given none.
_ASKED_SLO: Final = Asked("FIGURE=MS[@pXX], e.g. ttft_ms=500@p99", what="an SLO", flag="--slo")

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
    slos: Annotated[tuple[SloTarget, ...], _ASKED_SLO] = Field(
        min_length=1, examples=[["ttft_ms=500@p99"]]
    )
    axis: CapacityAxis = "rate"
    arrivals: Literal["constant", "poisson"] = "constant"
    start: float | None = Field(default=None, gt=0, allow_inf_nan=False, le=MAX_RATE)
    growth: float = Field(default=2.0, gt=1, le=100, allow_inf_nan=False)
    precision: float = Field(default=0.05, gt=0, lt=1, allow_inf_nan=False)
    confidence: float = Field(default=0.95, gt=0.5, lt=1, allow_inf_nan=False)
    max_lengthening: int = Field(default=4, ge=0, le=20)
    step_s: float = Field(default=10.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    budget_s: float | None = Field(default=None, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)

    @field_validator("slos", mode="before")
    @classmethod
    def _slos_from_text(cls, value: object) -> object:
        """SLOs as `ttft_ms=500@p99` text (a flag's form) or mappings (a config file's)."""
        if isinstance(value, str):
            return [part for part in value.split(",") if part.strip()]
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
        """The load of the first step: `start`, else for a rate the least one whose step offers
        enough requests in its measured time (after its default warm-up and cool-down) to pass
        its strictest SLO without a miss (see `requests_to_pass`), else one stream.

        >>> Capacity(slos=("ttft_ms=500@p99",), step_s=10).first_load  # 299 requests in 8 s
        37.375
        """
        if self.start is not None:
            return self.start if self.axis == "rate" else float(max(1, round(self.start)))
        if self.axis == "concurrency":
            return 1.0
        steps = self.step_constraints(Constraints())
        measured_s = self.step_s - steps.warmup_seconds - steps.cooldown_seconds
        return round(max(1.0, self.requests_to_pass / max(measured_s, 1e-3)), 3)

    @property
    def requests_to_pass(self) -> int:
        """The fewest attempted requests that can pass every SLO (none of them missing): n
        with 1 - (1 - allowed)^n >= confidence for the smallest allowance.

        >>> Capacity(slos=("ttft_ms=500@p99",)).requests_to_pass
        299
        """
        allowed = min(slo.allowed_miss_fraction for slo in self.slos)
        return math.ceil(math.log(1 - self.confidence) / math.log1p(-allowed) - 1e-9)

    def in_force(self, constraints: Constraints) -> Capacity:
        """The search as it runs under the run's `constraints`: `--max-seconds` is the whole
        search's budget when `budget_s` is not given.

        >>> Capacity(slos=("e2e_ms=900",)).in_force(Constraints(max_seconds=120)).budget_s
        120.0
        """
        if self.budget_s is not None or constraints.max_seconds is None:
            return self
        return self.model_copy(update={"budget_s": constraints.max_seconds})

    def step_constraints(self, constraints: Constraints) -> Constraints:
        """Each step's constraints: `step_s` long, its first tenth a warm-up and its end a
        cool-down long enough that a request cancelled when the step ends has waited past every
        limit (twice the largest, at most a third of the step), unless given.

        >>> steps = Capacity(slos=("ttft_ms=500",), step_s=12).step_constraints(Constraints())
        >>> steps.max_seconds, steps.warmup_seconds, steps.cooldown_seconds
        (12.0, 1.2, 1.0)
        """
        given = constraints.model_fields_set
        largest_s = max(slo.limit_ms for slo in self.slos) / 1000
        return constraints.model_copy(
            update={
                "max_seconds": self.step_s,
                "warmup_seconds": (
                    constraints.warmup_seconds
                    if "warmup_seconds" in given
                    else round(self.step_s / 10, 3)
                ),
                "cooldown_seconds": (
                    constraints.cooldown_seconds
                    if "cooldown_seconds" in given
                    else round(min(self.step_s / 3, 2 * largest_s), 3)
                ),
            }
        )

    def problem(self, constraints: Constraints) -> str | None:
        """What makes the search unable to decide a single step, in words; None when nothing.

        >>> Capacity(slos=("ttft_ms=500",), step_s=10).problem(Constraints(max_seconds=5))[-22:]
        'decided step), not 5 s'
        """
        budget = self.in_force(constraints).budget_s
        if budget is not None and budget < self.step_s:
            return (
                f"a capacity search of {self.step_s:g} s steps needs --max-seconds of at least "
                f"{self.step_s:g} s (one decided step), not {budget:g} s"
            )
        steps = self.step_constraints(constraints)
        if steps.measures_nothing:
            return (
                f"a capacity step of {self.step_s:g} s leaves no measured time after its "
                f"{steps.warmup_seconds:g} s warm-up and {steps.cooldown_seconds:g} s cool-down"
            )
        return None

    @property
    def lowest_load(self) -> float:
        """The least load the search goes down to when even its first step fails."""
        return MIN_RATE if self.axis == "rate" else 1.0


__all__ = [
    "Capacity",
    "CapacityAxis",
    "SloFigure",
    "SloTarget",
    "slos_fit",
]


def slos_fit(slos: tuple[SloTarget, ...], *, generates_text: bool, streamed: bool) -> str | None:
    """Which SLO bounds a figure the run's answers do not have, in words; None when all fit.

    Token timings (TTFT, TPOT, ITL) exist only where the endpoint generates text, and TPOT and
    ITL only on streamed answers.

    >>> slos_fit((SloTarget.parse("itl_ms=50"),), generates_text=True, streamed=False)[-32:]
    'need streamed answers (--stream)'
    """
    for slo in slos:
        if slo.figure == "e2e_ms":
            continue
        if not generates_text:
            return (
                f"SLO {slo} bounds a figure this run does not produce: the endpoint generates "
                "no tokens (use e2e_ms)"
            )
        if slo.figure in ("tpot_ms", "itl_ms") and not streamed:
            return (
                f"SLO {slo} bounds a figure this run does not produce: inter-token gaps need "
                "streamed answers (--stream)"
            )
    return None
