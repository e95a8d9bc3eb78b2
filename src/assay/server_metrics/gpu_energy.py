"""The energy the GPUs used over an interval, from NVIDIA DCGM exporter samples in the scrapes.

`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` is each GPU's energy since boot in millijoules (a
counter; the scrape sums the GPUs): the interval's energy is its increase between the scrapes
that bracket the interval. Without it, `DCGM_FI_DEV_POWER_USAGE` (watts, a gauge, summed over
the GPUs) is integrated over those scrapes by the trapezoid rule. Either way the bracketing
scrapes may lie up to one scrape interval outside the interval, as the per-step counter deltas
do (`StepServerCounts.approximate_by_s`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Final

from assay.server_metrics.observer import TimedSample

DCGM_ENERGY_MJ: Final = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
DCGM_POWER_W: Final = "DCGM_FI_DEV_POWER_USAGE"
# The exposition parser names a sample of a `counter` family with `_total` appended.
_ENERGY_NAMES: Final = (DCGM_ENERGY_MJ, DCGM_ENERGY_MJ + "_total")


def _energy_mj(samples: Mapping[str, float]) -> float | None:
    for name in _ENERGY_NAMES:
        value = samples.get(name)
        if value is not None:
            return value
    return None


def has_gpu_metrics(samples: Sequence[TimedSample]) -> bool:
    """Whether any scrape carried a DCGM energy counter or power gauge."""
    return any(
        _energy_mj(sample.samples) is not None or DCGM_POWER_W in sample.samples
        for sample in samples
    )


def energy_joules(samples: Sequence[TimedSample], start_ns: int, end_ns: int) -> float | None:
    """The GPUs' energy (J) between the scrapes at or before `start_ns` and at or after
    `end_ns`; None without DCGM samples there (or a counter that went back: a GPU reset).

    >>> a, b = TimedSample(0, {DCGM_ENERGY_MJ: 1000.0}), TimedSample(10, {DCGM_ENERGY_MJ: 5000.0})
    >>> energy_joules([a, b], 0, 10)
    4.0
    >>> energy_joules([TimedSample(0, {DCGM_POWER_W: 100.0}),
    ...                TimedSample(2_000_000_000, {DCGM_POWER_W: 300.0})], 0, 2_000_000_000)
    400.0
    """
    if not samples:
        return None
    first = max((i for i, sample in enumerate(samples) if sample.time_ns <= start_ns), default=0)
    last = min(
        (i for i, sample in enumerate(samples) if sample.time_ns >= end_ns),
        default=len(samples) - 1,
    )
    window = samples[first : last + 1]
    if len(window) < 2:
        return None
    before, after = _energy_mj(window[0].samples), _energy_mj(window[-1].samples)
    if before is not None and after is not None:
        return (after - before) / 1000 if after >= before else None
    joules = 0.0
    for one, two in itertools.pairwise(window):
        power_one, power_two = one.samples.get(DCGM_POWER_W), two.samples.get(DCGM_POWER_W)
        if power_one is None or power_two is None:
            return None
        joules += (power_one + power_two) / 2 * (two.time_ns - one.time_ns) / 1e9
    return joules


__all__ = ["DCGM_ENERGY_MJ", "DCGM_POWER_W", "energy_joules", "has_gpu_metrics"]
