"""Bursty and ramped arrivals, a sweep over concurrency levels, and data that runs out (issue 19):
exact schedules on the fake clock, and distributions checked with a fixed seed and a stated
tolerance.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import cast

import pytest

from assay.load.benchmark_plan import StepResult, next_load
from assay.load.schedule import (
    gamma_offsets_ns,
    poisson_offsets_ns,
    ramp_offsets_ns,
    rate_slice,
)
from assay.spec.constraints import NS_PER_S, Constraints, StopReason
from assay.spec.load import (
    Concurrent,
    Constant,
    Poisson,
    RampUp,
    RateRamp,
    StepLoad,
    Sweep,
    Synchronous,
    Throughput,
    rate_ramp,
    requested_rate,
)
from assay.testing import FakeClock
from tests.load.test_step_runner import (
    MS,
    FakeServer,
    NumberedSource,
    assert_accounted,
    run_on_fake_clock,
)

SEED = 7
GAPS = 40_000


def _gaps_s(offsets: list[int]) -> list[float]:
    return [(later - earlier) / NS_PER_S for earlier, later in itertools.pairwise(offsets)]


def test_burstiness_one_is_exactly_the_poisson_schedule() -> None:
    gamma = list(itertools.islice(gamma_offsets_ns(20.0, 1.0, SEED), 500))
    poisson = list(itertools.islice(poisson_offsets_ns(20.0, SEED), 500))
    assert gamma == poisson


@pytest.mark.parametrize("shape", [0.25, 0.5, 2.0, 4.0])
def test_gamma_gaps_have_mean_one_over_rate_and_the_shape_asked_for(shape: float) -> None:
    # 40,000 gaps: the sample mean is within 3 % of 1/rate and the coefficient of variation
    # within 5 % of 1/sqrt(shape) (for shape 0.25 the CV of the CV is largest; seed fixed).
    rate = 50.0
    gaps = _gaps_s(list(itertools.islice(gamma_offsets_ns(rate, shape, SEED), GAPS + 1)))
    mean = statistics.fmean(gaps)
    cv = statistics.pstdev(gaps) / mean
    assert mean == pytest.approx(1 / rate, rel=0.03)
    assert cv == pytest.approx(1 / math.sqrt(shape), rel=0.05)


def test_burstier_arrivals_bunch_more_than_poisson_ones() -> None:
    # Below 1 more gaps are short: over 40,000 gaps, the share under a tenth of the mean gap
    # is about 0.095 for Poisson and 0.35 for shape 0.25 (the gamma CDF at 0.1 of the mean).
    rate = 10.0

    def short_share(shape: float) -> float:
        gaps = _gaps_s(list(itertools.islice(gamma_offsets_ns(rate, shape, SEED), GAPS + 1)))
        return sum(gap < 0.1 / rate for gap in gaps) / len(gaps)

    assert short_share(1.0) == pytest.approx(1 - math.exp(-0.1), abs=0.01)
    assert short_share(0.25) > 0.3


def test_gamma_arrivals_are_the_same_for_a_seed_and_differ_between_seeds() -> None:
    first = list(itertools.islice(gamma_offsets_ns(5.0, 0.5, SEED), 100))
    again = list(itertools.islice(gamma_offsets_ns(5.0, 0.5, SEED), 100))
    other = list(itertools.islice(gamma_offsets_ns(5.0, 0.5, SEED + 1), 100))
    assert first == again
    assert first != other
    assert first == sorted(first)


def test_constant_with_burstiness_draws_the_gamma_schedule_with_the_plans_seed() -> None:
    loads = (Constant(rate=8, burstiness=0.5), Poisson(rate=8, burstiness=0.5))
    for load in loads:
        offsets = [offset for _, offset in rate_slice(load, SEED, 0, 1, budget=50)]
        assert offsets == list(itertools.islice(gamma_offsets_ns(8.0, 0.5, SEED), 50))
    even = [offset for _, offset in rate_slice(Constant(rate=8), SEED, 0, 1, budget=3)]
    assert even == [0, 125 * MS, 250 * MS]


@pytest.mark.parametrize(
    "load",
    [
        Poisson(rate=30, burstiness=0.3),
        RampUp(ramp=RateRamp(curve="exponential", start_rate=2, end_rate=40, duration_s=3)),
        RampUp(
            ramp=RateRamp(curve="linear", start_rate=2, end_rate=40, duration_s=3), burstiness=2
        ),
    ],
)
def test_processes_share_a_bursty_or_ramped_schedule_without_gaps_or_overlap(
    load: Poisson | RampUp,
) -> None:
    alone = list(rate_slice(load, SEED, 0, 1, budget=90))
    shared = sorted(
        itertools.chain.from_iterable(rate_slice(load, SEED, p, 3, budget=90) for p in range(3))
    )
    assert shared == alone


def test_a_linear_ramp_due_times_are_its_integral_inverted() -> None:
    # r(t) = 1 + t over 4 s: request i is due when t + t^2/2 = i, t = sqrt(1 + 2i) - 1.
    ramp = RateRamp(curve="linear", start_rate=1, end_rate=5, duration_s=4)
    offsets = list(itertools.islice(ramp_offsets_ns(ramp, None, SEED), 12))
    assert offsets == [round((math.sqrt(1 + 2 * i) - 1) * NS_PER_S) for i in range(12)]
    # The curve offers 12 requests by its end (1*4 + 4*4/2), then holds 5 req/s.
    assert offsets[-1] == round(ramp.time_of(11) * NS_PER_S)
    assert ramp.expected_by(4.0) == 12.0
    beyond = list(itertools.islice(ramp_offsets_ns(ramp, None, SEED), 14))[12:]
    assert beyond == [4 * NS_PER_S, 4 * NS_PER_S + 200 * MS]


def test_an_exponential_ramp_multiplies_its_rate_by_the_same_ratio_every_second() -> None:
    # 1 -> 16 req/s over 4 s doubles every second; Λ(t) = (2^t - 1) / ln 2.
    ramp = RateRamp(curve="exponential", start_rate=1, end_rate=16, duration_s=4)
    assert [ramp.rate_at(t) for t in (0.0, 1.0, 2.0, 4.0, 9.0)] == pytest.approx([1, 2, 4, 16, 16])
    offsets = list(itertools.islice(ramp_offsets_ns(ramp, None, SEED), 20))
    expected = [round(math.log2(1 + i * math.log(2)) * NS_PER_S) for i in range(20)]
    assert offsets == expected


@pytest.mark.parametrize("curve", ["linear", "exponential"])
def test_a_ramp_bounded_by_requests_offers_exactly_them_by_its_end(curve: str) -> None:
    ramp = RateRamp.offering("linear" if curve == "linear" else "exponential", 2, 50, 300)
    assert ramp.expected_by(ramp.duration_s) == pytest.approx(300)
    offsets = list(itertools.islice(ramp_offsets_ns(ramp, None, SEED), 301))
    end_ns = round(ramp.duration_s * NS_PER_S)
    assert offsets[299] < end_ns <= offsets[300]


@pytest.mark.parametrize("curve", ["linear", "exponential"])
def test_ramped_poisson_arrivals_follow_the_curve_second_by_second(curve: str) -> None:
    # 50 -> 500 req/s over 10 s, Poisson (shape 1) and bursty (shape 0.5) arrivals. A renewal
    # process with gaps of shape F counts about n = Λ(t+1) - Λ(t) in a second, with a variance
    # of about n / F: each second's count, and the ten seconds' total, is within 4 standard
    # deviations of what the curve offers (seed fixed; over 20 seeds the totals average 2,744
    # and 2,769 for the 2,750 offered by the linear ramp).
    ramp = RateRamp(
        curve="linear" if curve == "linear" else "exponential",
        start_rate=50,
        end_rate=500,
        duration_s=10,
    )
    for shape in (1.0, 0.5):
        counts = [0] * 10
        for offset in ramp_offsets_ns(ramp, shape, SEED):
            if offset >= 10 * NS_PER_S:
                break
            counts[offset // NS_PER_S] += 1
        for second, count in enumerate(counts):
            offered = ramp.expected_by(second + 1) - ramp.expected_by(second)
            assert abs(count - offered) <= 4 * math.sqrt(offered / shape), (shape, second)
        total = ramp.expected_by(10)
        assert abs(sum(counts) - total) <= 4 * math.sqrt(total / shape), shape


def test_time_of_inverts_expected_by_for_ramps_up_down_and_flat() -> None:
    for curve in ("linear", "exponential"):
        for start, end in ((1.0, 30.0), (30.0, 1.0), (5.0, 5.0)):
            ramp = RateRamp(
                curve="linear" if curve == "linear" else "exponential",
                start_rate=start,
                end_rate=end,
                duration_s=6,
            )
            for t in (0.0, 0.5, 2.0, 5.999, 6.0, 9.0):
                assert ramp.time_of(ramp.expected_by(t)) == pytest.approx(t, abs=1e-9)


async def test_a_ramp_step_dispatches_at_its_curves_times_on_the_fake_clock() -> None:
    ramp = RateRamp(curve="linear", start_rate=1, end_rate=5, duration_s=4)
    server = FakeServer(FakeClock(start_ns=3_000))
    result = await run_on_fake_clock(
        RampUp(ramp=ramp), Constraints(max_seconds=4), server, source=NumberedSource()
    )
    assert_accounted(result)
    # The curve offers 12 in 4 s; the 12th (index 11) is due at 3.9 s and every one is sent.
    assert result.scheduled == result.totals.dispatched == 12
    assert result.not_sent == 0
    expected = list(itertools.islice(ramp_offsets_ns(ramp, None, 1), 12))
    for record in result.summary:
        index = int(record.request_id.removeprefix("req-"))
        assert record.targeted_start_ns == 3_000 + expected[index]
        assert record.dispatched_ns == record.targeted_start_ns


async def test_a_bursty_step_dispatches_at_its_gamma_times_on_the_fake_clock() -> None:
    server = FakeServer(FakeClock())
    result = await run_on_fake_clock(
        Constant(rate=40, burstiness=0.5), Constraints(max_requests=60), server
    )
    assert_accounted(result)
    expected = list(itertools.islice(gamma_offsets_ns(40.0, 0.5, 1), 60))
    times = sorted(record.targeted_start_ns for record in result.summary)
    assert times == expected
    assert result.scheduled == 60


def test_a_concurrency_sweep_runs_one_concurrent_step_per_level_in_order() -> None:
    sweep = Sweep(concurrencies=(1, 4, 16, 64))
    loads: list[StepLoad] = []
    # A concurrency sweep reads only how many steps are done, not what they measured.
    while (load := next_load(sweep, cast("list[StepResult[None]]", loads[:]))) is not None:
        loads.append(load)
    assert loads == [Concurrent(streams=level) for level in (1, 4, 16, 64)]
    assert next_load(Sweep(), []) == Synchronous()  # the rate sweep is unchanged


def test_a_sweep_refuses_repeated_levels() -> None:
    with pytest.raises(ValueError, match="repeat"):
        Sweep(concurrencies=(4, 4))


def test_a_ramp_asks_for_no_single_rate_and_names_its_curve() -> None:
    ramp = RateRamp(curve="linear", start_rate=1, end_rate=5, duration_s=4)
    assert requested_rate(RampUp(ramp=ramp)) is None
    assert rate_ramp(RampUp(ramp=ramp)) == ramp
    assert rate_ramp(Throughput()) is None


async def test_a_file_shorter_than_max_requests_ends_as_data_exhausted() -> None:
    server = FakeServer(FakeClock())
    result = await run_on_fake_clock(
        Concurrent(streams=2), Constraints(max_requests=8), server, source=NumberedSource(count=4)
    )
    assert result.totals.dispatched == 4
    assert result.stopped_by is StopReason.data_exhausted


async def test_a_file_that_runs_out_before_max_seconds_ends_as_data_exhausted() -> None:
    server = FakeServer(FakeClock())
    result = await run_on_fake_clock(
        Constant(rate=10), Constraints(max_seconds=5), server, source=NumberedSource(count=4)
    )
    assert result.totals.dispatched == result.scheduled == 4
    assert result.stopped_by is StopReason.data_exhausted


async def test_a_file_run_once_without_limits_ran_to_the_end_of_its_schedule() -> None:
    for constraints in (Constraints(), Constraints(max_requests=4)):
        result = await run_on_fake_clock(
            Concurrent(streams=2), constraints, FakeServer(FakeClock()), source=NumberedSource(4)
        )
        assert result.totals.dispatched == 4
        limit = None if constraints.max_requests is None else StopReason.max_requests
        assert result.stopped_by is limit
