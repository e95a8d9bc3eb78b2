"""Load profiles: how requests are offered to the server, one step or a sweep of steps.

A profile is frozen config, a union tagged by `kind` and matched with `match`. The step loads
(`synchronous`, `concurrent`, `throughput`, `constant`, `poisson`, `ramp_up`, `replay`) each
describe one step; `sweep` expands into several steps: the later ones placed between the rates
the first two measured (see `sweep_rates`), or one closed loop per concurrency level it lists.

What is decided per profile lives here, on the models: each step load's words (`words()`),
and the functions below whose `match` mypy checks is exhaustive (`pacing`, `requested_rate`,
...). What needs no code per profile is read from the fields: the step figure each parameter
is kept as (`Figure`, read back by `stored_load`), the words that ask for a missing one
(`Asked`), and the example each required one declares (`Field(examples=[...])`, which the
tests build each profile's config from).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Final, Literal, TypeAlias, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from assay.spec.capacity import Capacity
from assay.spec.limits import MAX_BURSTINESS, MAX_RATE, MIN_BURSTINESS, MIN_RATE
from assay.spec.load_words import LoadWords, rate_text, rate_words, seconds_text, short_rate
from assay.spec.parameter import Asked, Figure, StepFigure, figure_of

ProfileKind: TypeAlias = Literal[
    "synchronous",
    "concurrent",
    "throughput",
    "constant",
    "poisson",
    "ramp_up",
    "sweep",
    "replay",
    "capacity",
]
"""The `kind` of every profile below (one missing is a type error in `_kind_of`)."""

DEFAULT_CONCURRENCY: Final = 64
"""What `throughput` and `sweep` keep in flight at most, and `concurrent` runs, unless told."""


def _sane_rate(rate: float) -> float:
    if not MIN_RATE <= rate <= MAX_RATE:
        raise ValueError(
            f"{rate:g} requests/s is outside {MIN_RATE:g} to {MAX_RATE:,.0f} requests/s"
        )
    return rate


Rate: TypeAlias = Annotated[float, Field(gt=0, allow_inf_nan=False), AfterValidator(_sane_rate)]
"""Requests per second, from `MIN_RATE` to `MAX_RATE`."""

# A profile's rate: its step's `requested_rate`, asked for as "a rate (--rate R requests/s)".
_StepRate: TypeAlias = Annotated[
    Rate, Figure("requested_rate"), Asked("R requests/s", what="a rate")
]
_Burstiness: TypeAlias = Annotated[
    float | None,
    Figure("burstiness"),
    Field(ge=MIN_BURSTINESS, le=MAX_BURSTINESS, allow_inf_nan=False),
]


class Synchronous(BaseModel):
    """One request at a time: the next is sent when the previous one has finished."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["synchronous"] = "synchronous"

    def words(self) -> LoadWords:
        return LoadWords("synchronous, one request at a time", "sync", "")


class Concurrent(BaseModel):
    """`streams` independent closed loops, each sending its next request when one finishes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["concurrent"] = "concurrent"
    streams: Annotated[int, Figure("requested_concurrency")] = Field(gt=0, examples=[4])

    def words(self) -> LoadWords:
        streams = f"{self.streams} stream{'s' if self.streams != 1 else ''}"
        return LoadWords(f"concurrent, {streams}", streams, f" x{self.streams}")


class Throughput(BaseModel):
    """As fast as the server answers, with at most `max_concurrency` requests in flight."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["throughput"] = "throughput"
    max_concurrency: Annotated[int, Figure("requested_concurrency")] = Field(
        default=DEFAULT_CONCURRENCY, gt=0
    )

    def words(self) -> LoadWords:
        limit = self.max_concurrency
        return LoadWords(f"throughput, up to {limit} in flight", f"max <={limit}", f" x{limit}")


class Constant(BaseModel):
    """An open loop at `rate` requests per second, evenly spaced, whatever the server does.

    With `burstiness` F the gaps are instead drawn from a gamma distribution of mean 1/rate and
    shape F, seeded by the plan's seed (see `Poisson`: the same arrivals for the same seed).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["constant"] = "constant"
    rate: _StepRate = Field(examples=[100.0])
    burstiness: _Burstiness = None

    def words(self) -> LoadWords:
        return rate_words(self.kind, self.rate)


class Poisson(BaseModel):
    """An open loop of Poisson arrivals at `rate` per second; `seed` None uses the plan's seed.

    `burstiness` F draws the gaps from a gamma distribution of mean 1/rate and shape F instead
    of the exponential: 1 is Poisson (the same arrivals as None), below 1 burstier (more short
    gaps and a few long ones), above 1 more even.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["poisson"] = "poisson"
    rate: _StepRate = Field(examples=[100.0])
    seed: int | None = None
    burstiness: _Burstiness = None

    def words(self) -> LoadWords:
        rate = self.rate
        return LoadWords(
            f"poisson at {rate_text(rate)} req/s (mean)", f"{rate:.3g}/s", f" {short_rate(rate)}/s"
        )


RampCurve: TypeAlias = Literal["linear", "exponential"]
"""How a ramp's rate moves from its start rate to its end rate."""


class RateRamp(BaseModel):
    """A rate that moves from `start_rate` to `end_rate` over `duration_s`, then holds.

    `linear`: r(t) = R0 + (R1 - R0) t / D. `exponential`: r(t) = R0 (R1 / R0)^(t / D), the same
    ratio every second. Arrivals follow the curve through its integral, the expected count of
    requests by time t (`expected_by`), and its inverse (`time_of`).

    >>> ramp = RateRamp(curve="linear", start_rate=1, end_rate=9, duration_s=10)
    >>> ramp.rate_at(5.0), ramp.expected_by(10.0), ramp.time_of(50.0)
    (5.0, 50.0, 10.0)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    curve: RampCurve
    start_rate: Rate
    end_rate: Rate
    duration_s: float = Field(gt=0, allow_inf_nan=False)

    @classmethod
    def offering(
        cls, curve: RampCurve, start_rate: float, end_rate: float, requests: int
    ) -> RateRamp:
        """The ramp whose integral reaches `requests` at its end: a step bounded by a request
        count rather than a time ramps over the time the curve takes to offer them.

        >>> RateRamp.offering("linear", 1, 9, requests=50).duration_s
        10.0
        """
        unit = cls(curve=curve, start_rate=start_rate, end_rate=end_rate, duration_s=1.0)
        return unit.model_copy(update={"duration_s": requests / unit.expected_by(1.0)})

    def rate_at(self, elapsed_s: float) -> float:
        """The offered rate `elapsed_s` into the step."""
        if elapsed_s >= self.duration_s:
            return self.end_rate
        progress = max(0.0, elapsed_s) / self.duration_s
        match self.curve:
            case "linear":
                return self.start_rate + (self.end_rate - self.start_rate) * progress
            case "exponential":
                return self.start_rate * math.pow(self.end_rate / self.start_rate, progress)

    def expected_by(self, elapsed_s: float) -> float:
        """How many requests the curve offers in its first `elapsed_s` (its integral)."""
        length = self.duration_s
        t = min(max(0.0, elapsed_s), length)
        return self._within(t) + max(0.0, elapsed_s - length) * self.end_rate

    def _within(self, t: float) -> float:
        r0, r1, length = self.start_rate, self.end_rate, self.duration_s
        match self.curve:
            case "linear":
                return r0 * t + (r1 - r0) * t * t / (2 * length)
            case "exponential":
                log_ratio = math.log(r1 / r0)
                if log_ratio == 0:
                    return r0 * t
                return r0 * length * math.expm1(log_ratio * t / length) / log_ratio

    def time_of(self, expected: float) -> float:
        """When the curve has offered `expected` requests (the inverse of `expected_by`)."""
        r0, r1, length = self.start_rate, self.end_rate, self.duration_s
        total = self.expected_by(length)
        if expected >= total:
            return length + (expected - total) / r1
        s = max(0.0, expected)
        match self.curve:
            case "linear":
                # The root of r0 t + a t^2 = s with a = (r1 - r0) / 2D, in the form that needs no
                # division by a (a ramp down, or a flat one, included).
                a = (r1 - r0) / (2 * length)
                return 2 * s / (r0 + math.sqrt(r0 * r0 + 4 * a * s))
            case "exponential":
                log_ratio = math.log(r1 / r0)
                if log_ratio == 0:
                    return s / r0
                return length * math.log1p(s * log_ratio / (r0 * length)) / log_ratio


class RampUp(BaseModel):
    """An open loop whose rate follows `ramp`: evenly spaced along the curve, or with
    `burstiness` F gamma-distributed (1 is Poisson) and seeded (`seed` None: the plan's).

    Arrival i is due when the curve's integral reaches the i-th arrival of a unit-rate stream
    (i itself, or a sum of seeded gamma gaps of mean 1), so the arrivals follow the rate
    exactly, whatever the curve, and the i-th time is the same in every process.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["ramp_up"] = "ramp_up"
    ramp: Annotated[RateRamp, Figure("ramp"), Asked("|".join(get_args(RampCurve)))] = Field(
        examples=[{"curve": "linear", "start_rate": 1.0, "end_rate": 20.0, "duration_s": 1.0}]
    )
    burstiness: _Burstiness = None
    seed: int | None = None

    def words(self) -> LoadWords:
        start, end = self.ramp.start_rate, self.ramp.end_rate
        return LoadWords(
            f"ramp_up, {self.ramp.curve} from {rate_text(start)} to {rate_text(end)} req/s "
            f"over {seconds_text(self.ramp.duration_s)} s",
            f"{start:.3g}->{end:.3g}/s",
            f" {start:g}->{end:g}/s",
        )


class Replay(BaseModel):
    """An open loop at the trace's own times (the source's offsets), `speed` times as fast."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["replay"] = "replay"
    speed: float = Field(default=1.0, gt=0, allow_inf_nan=False)

    def words(self) -> LoadWords:
        return LoadWords(self.kind, self.kind, "")  # its speed is not kept in report.json


class Sweep(BaseModel):
    """Synchronous, then throughput, then `rates` constant rates evenly spaced between the two.

    The constant rates lie strictly between the usable rates the first two steps measured.
    With `concurrencies` the sweep is over concurrency instead: one concurrent step per level,
    in the order given (`rates` and `max_concurrency` then play no part).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["sweep"] = "sweep"
    rates: int = Field(default=5, gt=0)
    max_concurrency: int = Field(default=DEFAULT_CONCURRENCY, gt=0)
    concurrencies: tuple[Annotated[int, Field(gt=0)], ...] = ()

    @field_validator("concurrencies", mode="before")
    @classmethod
    def _levels_from_text(cls, value: object) -> object:
        """Levels as `1,4,16,64` (the flag's form) or a list (a config file's)."""
        if not isinstance(value, str):
            return value
        levels = [part.strip() for part in value.split(",")]
        for level in levels:
            if not level.isdigit() or int(level) == 0:
                raise ValueError(
                    f"{level!r} is not a concurrency level: give whole numbers above 0, "
                    "comma-separated (e.g. 1,4,16,64)"
                )
        return tuple(map(int, levels))

    @field_validator("concurrencies")
    @classmethod
    def _levels_differ(cls, levels: tuple[int, ...]) -> tuple[int, ...]:
        if len(set(levels)) != len(levels):
            raise ValueError(f"concurrency levels repeat: {list(levels)}")
        return levels

    @model_validator(mode="after")
    def _levels_are_the_steps(self) -> Sweep:
        if self.concurrencies:
            given = [flag for name, flag in _LEVEL_FLAGS.items() if name in self.model_fields_set]
            if given:
                raise ValueError(
                    f"{', '.join(given)} does not apply with --sweep-concurrency "
                    "(its levels are the steps)"
                )
        return self


# What a concurrency sweep's levels replace, by the flag that sets it.
_LEVEL_FLAGS: Final = {"rates": "--sweep-rates", "max_concurrency": "--concurrency"}


StepLoad: TypeAlias = Synchronous | Concurrent | Throughput | Constant | Poisson | RampUp | Replay
"""The load of one step."""

Profile: TypeAlias = Annotated[
    Synchronous | Concurrent | Throughput | Constant | Poisson | RampUp | Replay | Sweep | Capacity,
    Field(discriminator="kind"),
]
"""Any profile, as it appears in config and JSON."""


def _kind_of(profile: Sweep | Capacity | StepLoad) -> ProfileKind:
    # Never called: mypy refuses it when a member's `kind` is missing from `ProfileKind`.
    return profile.kind


def load_words(load: StepLoad) -> LoadWords:
    """How reports word a step that offered `load` (a new step load without `words()` is a
    type error here).

    >>> load_words(Concurrent(streams=1))
    LoadWords(sentence='concurrent, 1 stream', cell='1 stream', label=' x1')
    """
    return load.words()


_STEP_LOADS: Final[dict[str, type[StepLoad]]] = {
    member.model_fields["kind"].default: member for member in get_args(StepLoad)
}


def stored_load(kind: str, figures: Mapping[StepFigure, object]) -> StepLoad | None:
    """The step load of profile `kind` read back from the figures report.json keeps of its
    step: each parameter from the figure it declares (`Figure`), the others at their defaults.
    None when `kind` is no step load (a sweep, a name from another version) or a parameter
    without a default of None was not kept. Validated when it can be, else read as stored.

    >>> stored_load("poisson", {"requested_rate": 5.0, "burstiness": None})
    Poisson(kind='poisson', rate=5.0, seed=None, burstiness=None)
    >>> stored_load("throughput", {"requested_concurrency": None}) is None
    True
    """
    member = _STEP_LOADS.get(kind)
    if member is None:
        return None
    given: dict[str, Any] = {}  # as stored: `model_construct` takes it unchecked
    for name, field in member.model_fields.items():
        figure = figure_of(field)
        value = None if figure is None else figures.get(figure)
        if value is not None:
            given[name] = value
        elif field.is_required() or (figure is not None and field.default is not None):
            return None
    try:
        return member.model_validate(given)
    except ValidationError:
        return member.model_construct(**given)


def sweep_rates(synchronous_rate: float, throughput_rate: float, count: int) -> list[float]:
    """`count` rates evenly spaced strictly between two measured rates, rising.

    >>> sweep_rates(2.0, 10.0, 3)
    [4.0, 6.0, 8.0]
    """
    low, high = sorted((synchronous_rate, throughput_rate))
    gap = (high - low) / (count + 1)
    return [low + gap * (position + 1) for position in range(count)]


def requested_rate(load: StepLoad) -> float | None:
    """The rate a step asks for, None for closed-loop loads.

    >>> requested_rate(Constant(rate=5))
    5.0
    """
    match load:
        case Constant(rate=rate) | Poisson(rate=rate):
            return rate
        case Synchronous() | Concurrent() | Throughput() | RampUp() | Replay():
            # A ramp asks for a rate that moves; its curve is `rate_ramp`.
            return None


def burstiness_of(load: StepLoad) -> float | None:
    """The gamma shape of a step's arrival gaps, None when it was not given (evenly spaced, or
    plain Poisson, or not an open loop at a rate).

    >>> burstiness_of(Poisson(rate=5, burstiness=0.5)), burstiness_of(Constant(rate=5))
    (0.5, None)
    """
    match load:
        case Constant(burstiness=shape) | Poisson(burstiness=shape) | RampUp(burstiness=shape):
            return shape
        case Synchronous() | Concurrent() | Throughput() | Replay():
            return None


def rate_ramp(load: StepLoad) -> RateRamp | None:
    """The rate curve a step follows, None unless it ramps.

    >>> rate_ramp(Constant(rate=5)) is None
    True
    """
    match load:
        case RampUp(ramp=ramp):
            return ramp
        case Synchronous() | Concurrent() | Throughput() | Constant() | Poisson() | Replay():
            return None


class Pacing(StrEnum):
    """How a step's requests are offered, which decides what the step owes the accounting.

    `closed_loop`: the next request leaves when one finishes; nothing is owed to a clock, so a
    slow server slows the load and no request is late. `open_loop`: requests are due at times
    fixed in advance (a rate or a trace); a step reports how many were `scheduled` and how many
    it could `not_sent` in time, the figure that shows the client fell behind.
    """

    closed_loop = "closed_loop"
    open_loop = "open_loop"


def pacing(load: StepLoad) -> Pacing:
    """How `load` offers its requests (see `Pacing`).

    >>> pacing(Replay()), pacing(Throughput())
    (<Pacing.open_loop: 'open_loop'>, <Pacing.closed_loop: 'closed_loop'>)
    """
    match load:
        case Constant() | Poisson() | RampUp() | Replay():
            return Pacing.open_loop
        case Synchronous() | Concurrent() | Throughput():
            return Pacing.closed_loop


def requested_concurrency(load: StepLoad) -> int | None:
    """The concurrency a step asks for, None for open-loop (rate) loads.

    >>> requested_concurrency(Concurrent(streams=4))
    4
    """
    match load:
        case Synchronous():
            return 1
        case Concurrent(streams=streams):
            return streams
        case Throughput(max_concurrency=limit):
            return limit
        case Constant() | Poisson() | RampUp() | Replay():
            return None


def most_in_flight(profile: Sweep | Capacity | StepLoad) -> int | None:
    """The most requests a closed-loop profile keeps in flight (a sweep: its largest level),
    None for one request at a time and for the open loops.

    >>> most_in_flight(Sweep(concurrencies=(1, 8, 4))), most_in_flight(Synchronous())
    (8, None)
    """
    match profile:
        case Sweep(concurrencies=levels, max_concurrency=limit):
            return max(levels) if levels else limit
        case Concurrent(streams=limit) | Throughput(max_concurrency=limit):
            return limit
        case Synchronous() | Constant() | Poisson() | RampUp() | Replay() | Capacity():
            return None  # a capacity search's levels are found as it runs


__all__ = [
    "DEFAULT_CONCURRENCY",
    "Concurrent",
    "Constant",
    "Pacing",
    "Poisson",
    "Profile",
    "ProfileKind",
    "RampCurve",
    "RampUp",
    "Rate",
    "RateRamp",
    "Replay",
    "StepLoad",
    "Sweep",
    "Synchronous",
    "Throughput",
    "burstiness_of",
    "load_words",
    "most_in_flight",
    "pacing",
    "rate_ramp",
    "requested_concurrency",
    "requested_rate",
    "stored_load",
    "sweep_rates",
]
