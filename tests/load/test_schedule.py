"""Schedules are deterministic, never drift, and slice the same work whatever the process count."""

from __future__ import annotations

import itertools

import pytest

from assay.load.error_watch import ErrorWatch
from assay.load.schedule import (
    constant_offset_ns,
    owned_streams,
    poisson_offsets_ns,
    rate_slice,
    stream_indices,
    throughput_indices,
    throughput_share,
)
from assay.spec.constraints import NS_PER_S, Constraints, StopReason
from assay.spec.load import Constant, Poisson, Sweep, sweep_rates


def test_constant_schedule_has_no_drift_over_100k_indices() -> None:
    rate = 7.3
    period = NS_PER_S / rate
    offsets = [constant_offset_ns(i, rate) for i in range(100_000)]
    assert offsets[0] == 0
    assert all(abs(offset - i * period) <= 0.5 for i, offset in enumerate(offsets))
    gaps = {b - a for a, b in itertools.pairwise(offsets)}
    assert gaps <= {int(period), int(period) + 1}


def test_poisson_schedule_is_deterministic_for_a_seed_and_has_the_asked_rate() -> None:
    first = list(itertools.islice(poisson_offsets_ns(50.0, seed=11), 100_000))
    again = list(itertools.islice(poisson_offsets_ns(50.0, seed=11), 100_000))
    other = list(itertools.islice(poisson_offsets_ns(50.0, seed=12), 100))
    assert first == again
    assert first[:100] != other
    assert first[0] == 0
    assert all(b >= a for a, b in itertools.pairwise(first))
    measured_rate = (len(first) - 1) / (first[-1] / NS_PER_S)
    assert measured_rate == pytest.approx(50.0, rel=0.02)


@pytest.mark.parametrize("load", [Constant(rate=40), Poisson(rate=40, seed=3)])
@pytest.mark.parametrize("processes", [1, 2, 3, 4])
def test_rate_slices_cover_each_index_once_at_the_single_process_time(
    load: Constant | Poisson, processes: int
) -> None:
    single = dict(rate_slice(load, seed=0, process=0, processes=1, budget=1_000))
    merged: dict[int, int] = {}
    for process in range(processes):
        for index, offset in rate_slice(load, 0, process, processes, budget=1_000):
            assert index % processes == process
            assert index not in merged
            merged[index] = offset
    assert merged == single
    assert sorted(merged) == list(range(1_000))


def test_poisson_without_its_own_seed_uses_the_plan_seed() -> None:
    with_plan_seed = list(rate_slice(Poisson(rate=5), 9, 0, 1, budget=10))
    with_own_seed = list(rate_slice(Poisson(rate=5, seed=9), 123, 0, 1, budget=10))
    assert with_plan_seed == with_own_seed


@pytest.mark.parametrize("processes", [1, 2, 3, 4])
def test_concurrent_streams_cover_each_index_once(processes: int) -> None:
    streams, budget = 5, 103
    seen: list[int] = []
    for process in range(processes):
        for stream in owned_streams(streams, process, processes):
            assert stream % processes == process
            seen.extend(stream_indices(stream, streams, budget))
    assert sorted(seen) == list(range(budget))


@pytest.mark.parametrize("processes", [1, 2, 3, 4])
@pytest.mark.parametrize("max_concurrency", [1, 3, 64])
def test_throughput_shares_add_up_and_cover_each_index_once(
    processes: int, max_concurrency: int
) -> None:
    active = min(processes, max_concurrency)
    shares = [throughput_share(max_concurrency, p, active) for p in range(active)]
    assert sum(shares) == max_concurrency
    seen: list[int] = []
    for process in range(processes):
        seen.extend(throughput_indices(max_concurrency, process, processes, budget=50))
    assert sorted(seen) == list(range(50))


def test_sweep_rates_rise_evenly_spaced_strictly_between_the_measured_rates() -> None:
    rates = sweep_rates(synchronous_rate=3.0, throughput_rate=43.0, count=Sweep(rates=4).rates)
    assert rates == pytest.approx([11.0, 19.0, 27.0, 35.0])
    assert all(3.0 < rate < 43.0 for rate in rates)
    gaps = [b - a for a, b in itertools.pairwise([3.0, *rates, 43.0])]
    assert gaps == pytest.approx([8.0] * 5)


def test_error_rate_applies_only_over_a_full_window() -> None:
    watch = ErrorWatch(Constraints(stop_error_rate=0.5, error_rate_window=4))
    assert [watch.observe(errored=True) for _ in range(3)] == [None, None, None]
    assert watch.observe(errored=True) is StopReason.stop_error_rate


def test_error_rate_window_slides_past_old_errors() -> None:
    watch = ErrorWatch(Constraints(stop_error_rate=0.5, error_rate_window=4))
    outcomes = [True, False, False, False, True, False, False, False]
    assert all(watch.observe(errored=e) is None for e in outcomes)


def test_measured_window_without_max_seconds_stays_open() -> None:
    constraints = Constraints(warmup_seconds=0.5, cooldown_seconds=1)
    assert constraints.measured_window(start_ns=100) == (100 + NS_PER_S // 2, None)
