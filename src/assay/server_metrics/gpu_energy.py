"""The energy the GPUs used over an interval, from NVIDIA DCGM exporter samples in the scrapes.

The samples come from the server's own metrics page, or from a DCGM exporter scraped beside it
(`--gpu-metrics`, see `GpuScrapes`): of that page only the DCGM energy and power series are read.

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
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class GpuScrapes:
    """The scrapes of a DCGM exporter taken beside the server's (`--gpu-metrics URL`): its URL
    as reports show it, its DCGM samples (`dcgm_only`), and why scrapes of it failed."""

    url: str
    samples: tuple[TimedSample, ...]
    problems: tuple[str, ...] = ()

    def notes(self) -> tuple[str, ...]:
        """What the report says about these scrapes: their failures, and a page without DCGM
        energy or power samples.

        >>> print(*GpuScrapes("http://g:9400/metrics", ()).notes())  # doctest: +ELLIPSIS
        GPU metrics at http://g:9400/metrics: no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION or ...
        """
        missing = (
            () if has_gpu_metrics(self.samples) else (f"GPU metrics at {self.url}: {NO_DCGM}",)
        )
        return (*self.problems, *missing)


NO_DCGM: Final = (
    f"no {DCGM_ENERGY_MJ} or {DCGM_POWER_W} samples (a DCGM exporter's metrics page has them)"
)


def dcgm_only(samples: Sequence[TimedSample]) -> tuple[TimedSample, ...]:
    """`samples` with only their DCGM energy and power series: nothing else of an exporter's
    page is read.

    >>> dcgm_only([TimedSample(1, {DCGM_POWER_W: 80.0, "vllm:num_requests_running": 3.0})])
    (TimedSample(time_ns=1, samples={'DCGM_FI_DEV_POWER_USAGE': 80.0}),)
    """
    kept = (*_ENERGY_NAMES, DCGM_POWER_W)
    return tuple(
        TimedSample(
            sample.time_ns, {name: sample.samples[name] for name in kept if name in sample.samples}
        )
        for sample in samples
    )


def has_gpu_metrics(samples: Sequence[TimedSample]) -> bool:
    """Whether any scrape carried a DCGM energy counter or power gauge."""
    return any(
        _energy_mj(sample.samples) is not None or DCGM_POWER_W in sample.samples
        for sample in samples
    )


def energy_joules(
    samples: Sequence[TimedSample], start_ns: int, end_ns: int, *, bracketed: bool = False
) -> float | None:
    """The GPUs' energy (J) between the scrapes at or before `start_ns` and at or after
    `end_ns`; None without DCGM samples there (or a counter that went back: a GPU reset).
    `bracketed`: None too when no scrape lies at or before `start_ns` or none at or after
    `end_ns` (an exporter that stopped answering), instead of the nearest scrapes inside.

    >>> a, b = TimedSample(0, {DCGM_ENERGY_MJ: 1000.0}), TimedSample(10, {DCGM_ENERGY_MJ: 5000.0})
    >>> energy_joules([a, b], 0, 10)
    4.0
    >>> energy_joules([TimedSample(0, {DCGM_POWER_W: 100.0}),
    ...                TimedSample(2_000_000_000, {DCGM_POWER_W: 300.0})], 0, 2_000_000_000)
    400.0
    >>> energy_joules([a, b], 0, 11, bracketed=True) is None
    True
    """
    if not samples:
        return None
    if bracketed and (samples[0].time_ns > start_ns or samples[-1].time_ns < end_ns):
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


__all__ = [
    "DCGM_ENERGY_MJ",
    "DCGM_POWER_W",
    "NO_DCGM",
    "GpuScrapes",
    "dcgm_only",
    "energy_joules",
    "has_gpu_metrics",
]
