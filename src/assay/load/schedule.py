"""Pure schedules: when each request is due, and which process owns which request.

Every time is an offset in nanoseconds from the step's start and is computed from the index
alone (constant) or from a seeded stream every process replays in full (poisson, gamma, a ramp),
so the i-th time is the same in whatever process computes it and never drifts. Slicing gives
each of P processes a disjoint share; the shares together cover the same indices whatever P is.

A replay's times come from its trace (`TimedSource.offset_ns`) scaled by the replay speed, and
are sliced the same way. They are what a replay step owes the accounting, as a rate's schedule
is: `scheduled` counts the trace requests due before the step stopped dispatching, the trace's
size bounding them as a budget (see `assay.load.step_runner.open_loop_slice`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from assay.data.source import RequestSource
from assay.data.trace import TimedSource
from assay.errors import ConfigError
from assay.spec.constraints import NS_PER_S
from assay.spec.limits import MAX_BURSTINESS, MIN_BURSTINESS
from assay.spec.load import Constant, Poisson, RampUp, RateRamp


def constant_offset_ns(index: int, rate: float) -> int:
    """When request `index` is due at `rate` per second, from the index alone (no drift).

    >>> [constant_offset_ns(i, 4.0) for i in range(3)]
    [0, 250000000, 500000000]
    """
    return round(index * NS_PER_S / rate)


def poisson_offsets_ns(rate: float, seed: int) -> Iterator[int]:
    """Poisson arrival offsets at `rate` per second: 0, then seeded exponential gaps.

    Gaps are rounded to whole nanoseconds before they are summed, so the sum is exact integer
    arithmetic and every process replaying `(rate, seed)` gets the same times.

    >>> offsets = poisson_offsets_ns(10.0, seed=1)
    >>> first = [next(offsets) for _ in range(3)]
    >>> first == list(itertools.islice(poisson_offsets_ns(10.0, seed=1), 3))
    True
    """
    rng = random.Random(f"assay:poisson:{seed}")
    offset = 0
    while True:
        yield offset
        offset += round(rng.expovariate(rate) * NS_PER_S)


def gamma_offsets_ns(rate: float, shape: float, seed: int) -> Iterator[int]:
    """Arrival offsets at `rate` per second with gamma gaps of mean 1/rate and shape `shape`.

    Shape 1 is Poisson and gives exactly the arrivals of `poisson_offsets_ns` for the same
    seed; below 1 the arrivals come in bursts (the gaps' coefficient of variation is
    1/sqrt(shape)), above 1 they are more even than Poisson. Gaps are rounded to whole
    nanoseconds before they are summed, as Poisson's are.

    >>> poisson, gamma = poisson_offsets_ns(10.0, seed=3), gamma_offsets_ns(10.0, 1.0, seed=3)
    >>> [next(poisson) for _ in range(4)] == [next(gamma) for _ in range(4)]
    True
    """
    _check_shape(shape)
    if shape == 1:
        yield from poisson_offsets_ns(rate, seed)
        return
    rng = random.Random(f"assay:gamma:{seed}")
    scale = 1 / (shape * rate)
    offset = 0
    while True:
        yield offset
        offset += round(rng.gammavariate(shape, scale) * NS_PER_S)


def ramp_offsets_ns(ramp: RateRamp, burstiness: float | None, seed: int) -> Iterator[int]:
    """Arrival offsets whose rate follows `ramp`: arrival i is due when the curve's integral
    reaches the i-th arrival of a unit-rate stream (i itself when `burstiness` is None, else a
    sum of seeded gamma gaps of mean 1 and shape `burstiness`).

    Mapping a unit-rate stream through the inverse integral is how a varying-rate arrival
    process is drawn exactly (a time change): the gaps keep their shape at every rate.

    >>> from assay.spec.load import RateRamp
    >>> ramp = RateRamp(curve="linear", start_rate=1, end_rate=3, duration_s=2)
    >>> list(itertools.islice(ramp_offsets_ns(ramp, None, seed=0), 5))
    [0, 732050808, 1236067977, 1645751311, 2000000000]
    """
    for expected in _unit_arrivals(burstiness, seed):
        yield round(ramp.time_of(expected) * NS_PER_S)


def _check_shape(shape: float) -> None:
    # Outside this range a gamma draw is 0, astronomically large or not a number: a schedule
    # that stalls for ever or crashes (the spec refuses such a shape before any load).
    if not MIN_BURSTINESS <= shape <= MAX_BURSTINESS:
        raise ValueError(
            f"burstiness {shape} is outside {MIN_BURSTINESS}..{MAX_BURSTINESS:g}, where the "
            "gamma gaps are finite"
        )


def _unit_arrivals(burstiness: float | None, seed: int) -> Iterator[float]:
    if burstiness is None:
        yield from itertools.count()
        return
    _check_shape(burstiness)
    rng = random.Random(f"assay:ramp:{seed}")
    expected = 0.0
    while True:
        yield expected
        if burstiness == 1:
            expected += rng.expovariate(1.0)
        else:
            expected += rng.gammavariate(burstiness, 1 / burstiness)


def rate_slice(
    load: Constant | Poisson | RampUp,
    seed: int,
    process: int,
    processes: int,
    budget: int | None,
) -> Iterator[tuple[int, int]]:
    """`(index, offset_ns)` of the requests process `process` sends for a rate load.

    Process p owns the indices i with i % P == p. Poisson times are replayed in full so the
    owned ones are exactly the times a single process would use.

    >>> list(rate_slice(Constant(rate=2), seed=0, process=1, processes=2, budget=5))
    [(1, 500000000), (3, 1500000000)]
    """
    numbered = zip(
        itertools.count() if budget is None else range(budget),
        _offsets_ns(load, seed),
        strict=False,
    )
    return itertools.islice(numbered, process, None, processes)


def _offsets_ns(load: Constant | Poisson | RampUp, seed: int) -> Iterator[int]:
    match load:
        case Constant(rate=rate, burstiness=shape):
            if shape is None:
                return (constant_offset_ns(index, rate) for index in itertools.count())
            return gamma_offsets_ns(rate, shape, seed)
        case Poisson(rate=rate, seed=own_seed, burstiness=shape):
            seed = seed if own_seed is None else own_seed
            if shape is None:
                return poisson_offsets_ns(rate, seed)
            return gamma_offsets_ns(rate, shape, seed)
        case RampUp(ramp=ramp, burstiness=burstiness, seed=own_seed):
            return ramp_offsets_ns(ramp, burstiness, seed if own_seed is None else own_seed)


def timed(source: RequestSource) -> TimedSource:
    """`source` as a timed source; a replay of a source without times is a usage error."""
    if not isinstance(source, TimedSource):
        raise ConfigError("the replay profile needs a trace (--trace FILE) to take its times from")
    return source


def replay_slice(
    source: TimedSource, speed: float, process: int, processes: int, budget: int | None
) -> Iterator[tuple[int, int]]:
    """`(index, offset_ns)` of the trace requests process `process` sends, at `speed`.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Times:
    ...     offsets: tuple[int, ...]
    ...     def request(self, index): ...
    ...     def size(self): return len(self.offsets)
    ...     def offset_ns(self, index): return self.offsets[index]
    >>> list(replay_slice(Times((0, 10, 30, 40)), 2.0, 0, 2, budget=None))
    [(0, 0), (2, 15)]
    """
    size = source.size()
    count = size if budget is None else min(budget, size if size is not None else budget)
    indices = itertools.count() if count is None else range(count)
    numbered = ((index, round(source.offset_ns(index) / speed)) for index in indices)
    return itertools.islice(numbered, process, None, processes)


def owned_streams(streams: int, process: int, processes: int) -> range:
    """The streams process `process` runs: the k with k % P == p.

    >>> list(owned_streams(5, 0, 2))
    [0, 2, 4]
    """
    return range(process, streams, processes)


def stream_indices(stream: int, streams: int, budget: int | None) -> Iterator[int]:
    """The request indices stream `stream` of a concurrent load sends, in order.

    Each stream has a fixed arithmetic slice of the index space, so which requests a stream
    sends does not depend on how fast the other streams (in other processes) go.

    >>> list(stream_indices(1, 3, budget=8))
    [1, 4, 7]
    """
    if budget is None:
        return itertools.count(stream, streams)
    return iter(range(stream, budget, streams))


def throughput_share(max_concurrency: int, process: int, processes: int) -> int:
    """The part of `max_concurrency` process `process` may have in flight.

    >>> [throughput_share(5, p, 2) for p in range(2)]
    [3, 2]
    """
    base, extra = divmod(max_concurrency, processes)
    return base + (1 if process < extra else 0)


def throughput_indices(
    max_concurrency: int, process: int, processes: int, budget: int | None
) -> Iterator[int]:
    """The indices process `process` sends under a throughput load.

    Only processes with a share of the concurrency take part (at most `max_concurrency` of
    them), and they split the index space round-robin among themselves.

    >>> list(throughput_indices(1, 1, 2, budget=4))
    []
    """
    active = min(processes, max_concurrency)
    if process >= active:
        return iter(())
    if budget is None:
        return itertools.count(process, active)
    return iter(range(process, budget, active))


__all__ = [
    "constant_offset_ns",
    "gamma_offsets_ns",
    "owned_streams",
    "poisson_offsets_ns",
    "ramp_offsets_ns",
    "rate_slice",
    "replay_slice",
    "stream_indices",
    "throughput_indices",
    "throughput_share",
    "timed",
]
