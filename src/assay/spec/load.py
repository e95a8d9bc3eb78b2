"""Load profiles: how requests are offered to the server, one step or a sweep of steps.

A profile is frozen config, a union tagged by `kind` and matched with `match`. The step loads
(`synchronous`, `concurrent`, `throughput`, `constant`, `poisson`) each describe one step;
`sweep` expands into several steps, the later ones placed between the rates the first two
measured (see `sweep_rates`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

ProfileKind: TypeAlias = Literal[
    "synchronous", "concurrent", "throughput", "constant", "poisson", "sweep", "replay"
]
"""The `kind` of every profile below (a test holds it equal to the `Profile` union)."""

DEFAULT_CONCURRENCY: Final = 64
"""What `throughput` and `sweep` keep in flight at most, and `concurrent` runs, unless told."""

RATE_KINDS: Final[tuple[ProfileKind, ...]] = ("constant", "poisson")
"""The profiles that take a rate."""

CONCURRENCY_KINDS: Final[tuple[ProfileKind, ...]] = ("concurrent", "throughput", "sweep")
"""The profiles that take a concurrency."""


class Synchronous(BaseModel):
    """One request at a time: the next is sent when the previous one has finished."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["synchronous"] = "synchronous"


class Concurrent(BaseModel):
    """`streams` independent closed loops, each sending its next request when one finishes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["concurrent"] = "concurrent"
    streams: int = Field(gt=0)


class Throughput(BaseModel):
    """As fast as the server answers, with at most `max_concurrency` requests in flight."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["throughput"] = "throughput"
    max_concurrency: int = Field(default=DEFAULT_CONCURRENCY, gt=0)


class Constant(BaseModel):
    """An open loop at `rate` requests per second, evenly spaced, whatever the server does."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["constant"] = "constant"
    rate: float = Field(gt=0)


class Poisson(BaseModel):
    """An open loop of Poisson arrivals at `rate` per second; `seed` None uses the plan's seed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["poisson"] = "poisson"
    rate: float = Field(gt=0)
    seed: int | None = None


class Replay(BaseModel):
    """An open loop at the trace's own times (the source's offsets), `speed` times as fast."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["replay"] = "replay"
    speed: float = Field(default=1.0, gt=0)


class Sweep(BaseModel):
    """Synchronous, then throughput, then `rates` constant rates evenly spaced between the two.

    The constant rates lie strictly between the usable rates the first two steps measured.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["sweep"] = "sweep"
    rates: int = Field(default=5, gt=0)
    max_concurrency: int = Field(default=DEFAULT_CONCURRENCY, gt=0)


StepLoad: TypeAlias = Synchronous | Concurrent | Throughput | Constant | Poisson | Replay
"""The load of one step."""

Profile: TypeAlias = Annotated[
    Synchronous | Concurrent | Throughput | Constant | Poisson | Replay | Sweep,
    Field(discriminator="kind"),
]
"""Any profile, as it appears in config and JSON."""


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
        case Synchronous() | Concurrent() | Throughput() | Replay():
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
        case Constant() | Poisson() | Replay():
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
        case Constant() | Poisson() | Replay():
            return None


__all__ = [
    "CONCURRENCY_KINDS",
    "DEFAULT_CONCURRENCY",
    "RATE_KINDS",
    "Concurrent",
    "Constant",
    "Pacing",
    "Poisson",
    "Profile",
    "ProfileKind",
    "Replay",
    "StepLoad",
    "Sweep",
    "Synchronous",
    "Throughput",
    "pacing",
    "requested_concurrency",
    "requested_rate",
    "sweep_rates",
]
