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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from assay.server_metrics.observer import TimedSample
from assay.server_metrics.scrape import DCGM_ENERGY_MJ, DCGM_POWER_W, series_name
from assay.server_metrics.scrape import DCGM_ENERGY_NAMES as _ENERGY_NAMES


def _energy_mj(samples: Mapping[str, float]) -> float | None:
    for name in _ENERGY_NAMES:
        value = samples.get(name)
        if value is not None:
            return value
    return None


def _energy_series(samples: Mapping[str, float]) -> float | None:
    for name in _ENERGY_NAMES:
        if name in samples:
            return samples.get(series_name(name))
    return None


def energy_doubts(samples: Sequence[TimedSample]) -> tuple[str, ...]:
    """Why the energy of some interval is unknown though DCGM samples are there: a GPU's value
    that is NaN, infinite or negative (`parse_exposition` makes the sum NaN), a counter that
    went back (a GPU reset), GPUs that came or went between scrapes (an exporter restarted)."""
    doubts: list[str] = []
    values = [(_energy_mj(s.samples), s.samples.get(DCGM_POWER_W)) for s in samples]
    if any(v is not None and not math.isfinite(v) for pair in values for v in pair) or any(
        power is not None and power < 0 for _, power in values
    ):
        doubts.append("a GPU's DCGM energy or power was no finite number, or negative")
    energies = [energy for energy, _ in values if energy is not None and math.isfinite(energy)]
    if any(after < before for before, after in itertools.pairwise(energies)):
        doubts.append(f"{DCGM_ENERGY_MJ} went back between scrapes (a GPU reset?)")
    counts = {
        (_energy_series(s.samples), s.samples.get(series_name(DCGM_POWER_W))) for s in samples
    }
    if len(counts) > 1:
        doubts.append("the number of GPUs reporting changed between scrapes")
    return tuple(f"energy unknown over the intervals it touches: {doubt}" for doubt in doubts)


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
        if not has_gpu_metrics(self.samples):
            return (*self.problems, f"GPU metrics at {self.url}: {NO_DCGM}")
        doubts = (f"GPU metrics at {self.url}: {doubt}" for doubt in energy_doubts(self.samples))
        return (*self.problems, *doubts)


NO_DCGM: Final = (
    f"no {DCGM_ENERGY_MJ} or {DCGM_POWER_W} samples (a DCGM exporter's metrics page has them)"
)


def dcgm_only(samples: Sequence[TimedSample]) -> tuple[TimedSample, ...]:
    """`samples` with only their DCGM energy and power series: nothing else of an exporter's
    page is read.

    >>> dcgm_only([TimedSample(1, {DCGM_POWER_W: 80.0, "vllm:num_requests_running": 3.0})])
    (TimedSample(time_ns=1, samples={'DCGM_FI_DEV_POWER_USAGE': 80.0}),)
    """
    named = (*_ENERGY_NAMES, DCGM_POWER_W)
    kept = (*named, *map(series_name, named))
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
    `end_ns`; None without DCGM samples there, or when they cannot be trusted: a counter that
    went back (a GPU reset), a value that is no finite number, a negative power, or GPUs that
    came or went between the scrapes (`series_name`: the sum jumps by a GPU's whole counter).
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
    joules = _counted(window[0].samples, window[-1].samples)
    if joules is None:
        joules = _integrated(window)
    return joules if joules is not None and math.isfinite(joules) and joules >= 0 else None


def _counted(before: Mapping[str, float], after: Mapping[str, float]) -> float | None:
    """The energy counter's increase (J) between two scrapes of the same GPUs, else None."""
    start, end = _energy_mj(before), _energy_mj(after)
    if start is None or end is None or _energy_series(before) != _energy_series(after):
        return None
    return (end - start) / 1000 if math.isfinite(start) and end >= start else None


def _integrated(window: Sequence[TimedSample]) -> float | None:
    """The power gauge integrated over `window` (J), when every scrape has it from the same
    GPUs, finite and not negative."""
    counted = series_name(DCGM_POWER_W)
    gpus = {sample.samples.get(counted) for sample in window}
    if len(gpus) > 1:
        return None
    joules = 0.0
    for one, two in itertools.pairwise(window):
        power_one, power_two = one.samples.get(DCGM_POWER_W), two.samples.get(DCGM_POWER_W)
        if power_one is None or power_two is None or min(power_one, power_two) < 0:
            return None
        joules += (power_one + power_two) / 2 * (two.time_ns - one.time_ns) / 1e9
    return joules


__all__ = [
    "DCGM_ENERGY_MJ",
    "DCGM_POWER_W",
    "NO_DCGM",
    "GpuScrapes",
    "dcgm_only",
    "energy_doubts",
    "energy_joules",
    "has_gpu_metrics",
]
