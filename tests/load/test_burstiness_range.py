"""The gamma shape of `--burstiness` stays where every gap is a finite number of nanoseconds and
the schedule moves on (issue 37, item 4: 1e-300 stalled a run past --max-seconds, 5e-324 crashed
it converting not-a-number to an integer)."""

from __future__ import annotations

import itertools
import math

import pytest
from pydantic import ValidationError

from assay.load.schedule import gamma_offsets_ns, ramp_offsets_ns
from assay.spec.limits import MAX_BURSTINESS, MIN_BURSTINESS, MIN_RATE
from assay.spec.load import Constant, Poisson, RampUp, RateRamp


@pytest.mark.parametrize("shape", [1e-300, 5e-324, 0.0, -1.0, 1e300, math.inf, math.nan])
def test_a_shape_outside_the_range_is_refused_by_every_profile(shape: float) -> None:
    ramp = RateRamp(curve="linear", start_rate=1, end_rate=5, duration_s=2)
    for build in (
        lambda: Constant(rate=5, burstiness=shape),
        lambda: Poisson(rate=5, burstiness=shape),
        lambda: RampUp(ramp=ramp, burstiness=shape),
    ):
        with pytest.raises(ValidationError):
            build()


@pytest.mark.parametrize("shape", [1e-300, 5e-324, math.nan])
def test_the_schedule_itself_refuses_a_shape_outside_the_range(shape: float) -> None:
    with pytest.raises(ValueError, match="burstiness"):
        next(gamma_offsets_ns(10.0, shape, seed=1))
    ramp = RateRamp(curve="linear", start_rate=1, end_rate=5, duration_s=2)
    with pytest.raises(ValueError, match="burstiness"):
        next(ramp_offsets_ns(ramp, shape, seed=1))


@pytest.mark.parametrize("rate", [MIN_RATE, 1.0, 1_000.0])
@pytest.mark.parametrize("shape", [MIN_BURSTINESS, MAX_BURSTINESS])
def test_at_the_ends_of_the_range_the_schedule_moves_on_with_finite_gaps(
    shape: float, rate: float
) -> None:
    count = 20_000
    offsets = list(itertools.islice(gamma_offsets_ns(rate, shape, seed=7), count))
    assert all(isinstance(offset, int) for offset in offsets)
    assert offsets == sorted(offsets)
    # The mean gap stays within a factor of the asked one: no gap astronomically long.
    mean_gap_s = offsets[-1] / (count - 1) / 1e9
    assert 0.2 / rate < mean_gap_s < 5 / rate
    assert offsets[-1] > 0
