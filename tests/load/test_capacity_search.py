"""The capacity search on simulated servers: each step's counts come from a model with a known
capacity, and time is the steps' stated lengths (no clock runs)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from assay.load.capacity import Probe, SearchState, search_state
from assay.load.slo_tally import SloMisses
from assay.spec.capacity import Capacity

STEP_S = 10.0

Server = Callable[[float], SloMisses]


def search(profile: Capacity, server: Server, limit: int = 60) -> tuple[SearchState, list[Probe]]:
    probes: list[Probe] = []
    for _ in range(limit):
        state = search_state(profile, probes)
        if state.next_level is None:
            return state, probes
        probes.append(Probe(state.next_level, server(state.next_level), STEP_S))
    raise AssertionError(f"the search did not end in {limit} steps: {probes}")


def queueing_server(capacity: float) -> Server:
    """Past `capacity` requests/s the queue grows and the late requests miss their TTFT."""

    def step(rate: float) -> SloMisses:
        attempted = round(rate * STEP_S)
        late = 0 if rate <= capacity else round(attempted * (rate - capacity) / rate)
        return SloMisses(attempted, (late,))

    return step


def profile(**fields: object) -> Capacity:
    return Capacity.model_validate({"slos": ("ttft_ms=500@p99",), "step_s": STEP_S, **fields})


def test_the_bracket_holds_the_capacity_and_is_no_wider_than_the_precision() -> None:
    state, probes = search(profile(start=1, precision=0.05), queueing_server(80.0))
    assert state.end == "precise"
    assert state.last_pass is not None
    assert state.first_fail is not None
    low, high = state.last_pass.level, state.first_fail.level
    assert low <= 80.0 < high
    assert high - low <= 0.05 * low
    # Bracketing doubled from 1/s until 128/s failed, then narrowing bisected (the lowest
    # loads, too short to decide a p99, were lengthened: offered again in a row).
    offered = list(dict.fromkeys(probe.level for probe in probes))
    assert offered[:9] == [1, 2, 4, 8, 16, 32, 64, 128, 96]


def test_no_decided_load_is_offered_twice() -> None:
    p90 = profile(slos=("ttft_ms=500@p90",), start=3, precision=0.02)
    state, probes = search(p90, queueing_server(50.0))
    levels = [probe.level for probe in probes]
    # A load comes back only right after itself (a lengthened step), never once decided.
    runs = [
        level for position, level in enumerate(levels) if levels[position - 1 : position] != [level]
    ]
    assert len(runs) == len(set(runs))
    assert state.end == "precise"


def test_a_first_step_that_fails_shrinks_the_load_until_one_passes() -> None:
    state, probes = search(profile(start=400, precision=0.1), queueing_server(30.0))
    assert [probe.level for probe in probes][:5] == [400, 200, 100, 50, 25]
    assert state.capacity is not None
    assert state.first_fail is not None
    assert state.capacity <= 30.0 < state.first_fail.level


def test_an_undecided_step_is_run_again_at_its_load_and_pooled() -> None:
    p90 = profile(slos=("ttft_ms=500@p90",), start=10)
    # 100 requests, 12 late: allowed 10 %, the bounds straddle it.
    first = [Probe(10.0, SloMisses(100, (12,)), STEP_S)]
    state = search_state(p90, first)
    assert state.levels[0].verdict == "undecided"
    assert state.next_level == 10.0
    # 1,000 more, 60 late: 72 of 1,100 is 6.5 %, shown below 10 %: the load passes, grow.
    longer = [*first, Probe(10.0, SloMisses(1000, (60,)), STEP_S)]
    state = search_state(p90, longer)
    assert state.levels[0].steps == 2
    assert state.levels[0].verdict == "pass"
    assert state.next_level == 20.0


def test_a_load_undecided_after_every_lengthening_with_too_many_misses_fails() -> None:
    p90 = profile(slos=("ttft_ms=500@p90",), start=10, max_lengthening=1)
    straddling = Probe(10.0, SloMisses(100, (12,)), STEP_S)
    state = search_state(p90, [straddling, straddling])
    assert state.levels[0].verdict == "undecided"  # 24 of 200: not shown above 10 %
    assert state.first_fail is not None
    assert state.first_fail.level == 10.0
    assert state.next_level == 5.0  # it goes below the load it could not show passing


def test_a_load_too_short_to_tell_is_passed_over_but_never_reported_as_capacity() -> None:
    p99 = profile(start=1, max_lengthening=1)
    short = Probe(1.0, SloMisses(10, (0,)), STEP_S)  # 20 requests cannot show a p99
    state = search_state(p99, [short, short])
    assert state.levels[0].verdict == "undecided"
    assert state.first_fail is None
    assert state.capacity is None
    assert state.next_level == 2.0


def test_answers_empty_past_half_the_capacity_put_the_capacity_below_half() -> None:
    capacity = 80.0

    def empty_past_half(rate: float) -> SloMisses:
        attempted = round(rate * STEP_S)
        if rate > capacity / 2:  # every answer is empty: errored, a miss of every SLO
            return SloMisses(attempted, (attempted,))
        return queueing_server(capacity)(rate)

    state, _ = search(profile(start=1, precision=0.05), empty_past_half)
    assert state.capacity is not None
    assert state.capacity <= capacity / 2

    # Counted over the answers that came back usable only (what a successes-only search
    # reads), the empty ones vanish and the same server looks good up to about C.
    def successes_only(rate: float) -> SloMisses:
        return queueing_server(capacity)(rate)

    fooled, _ = search(profile(start=1, precision=0.05), successes_only)
    assert fooled.capacity == pytest.approx(capacity, rel=0.06)


def test_the_budget_stops_the_search_before_a_step_that_would_overrun_it() -> None:
    state, probes = search(profile(start=1, budget_s=35), queueing_server(80.0))
    assert state.end == "budget"
    assert len(probes) == 3  # 3 x 10 s run; a fourth would end at 40 s
    assert sum(probe.seconds for probe in probes) <= 35


def test_a_concurrency_search_narrows_to_one_stream() -> None:
    def streams_server(streams: float) -> SloMisses:
        attempted = round(streams * 50)
        return SloMisses(attempted, (0 if streams <= 40 else attempted // 4,))

    state, probes = search(profile(axis="concurrency", precision=0.01), streams_server)
    assert state.capacity == 40
    assert state.first_fail is not None
    assert state.first_fail.level == 41
    assert all(probe.level == int(probe.level) for probe in probes)


def test_the_failed_slo_is_the_one_furthest_over_its_allowance() -> None:
    two = profile(slos=("ttft_ms=500@p99", "e2e_ms=900@p90"), start=10)
    probes = [
        Probe(10.0, SloMisses(1000, (0, 0)), STEP_S),
        Probe(20.0, SloMisses(2000, (100, 900)), STEP_S),
    ]
    failed = search_state(two, probes).failed_slo()
    assert failed is not None
    index, judgement = failed
    assert index == 0  # 5 % missed of 1 % allowed (5x) is further over than 45 % of 10 % (4.5x)
    assert judgement.miss_fraction == pytest.approx(0.05)


def slow_client_server(capacity: float, client_limit: float) -> Callable[[float], Probe]:
    """A server with `capacity` run by a client that cannot keep up past `client_limit`: its
    own delay makes a third of the requests miss there, and it says it was saturated."""

    def step(rate: float) -> Probe:
        if rate <= client_limit:
            return Probe(rate, queueing_server(capacity)(rate), STEP_S)
        attempted = round(rate * STEP_S)
        return Probe(rate, SloMisses(attempted, (attempted // 3,)), STEP_S, client_bound=True)

    return step


def search_probes(
    profile: Capacity, run: Callable[[float], Probe], limit: int = 60
) -> tuple[SearchState, list[Probe]]:
    probes: list[Probe] = []
    for _ in range(limit):
        state = search_state(profile, probes)
        if state.next_level is None:
            return state, probes
        probes.append(run(state.next_level))
    raise AssertionError(f"the search did not end in {limit} steps: {probes}")


def test_a_load_failing_only_with_a_saturated_client_is_no_bracket_of_the_server() -> None:
    # Capacity 80/s; the client cannot keep up past 30/s. A failure at 32/s is the client's.
    state, probes = search_probes(
        profile(start=1, precision=0.05, max_lengthening=2), slow_client_server(80.0, 30.0)
    )
    assert state.end == "client_bound"
    assert state.first_fail is None  # no load is called the server's failure
    assert state.capacity == 16.0  # the highest load shown to pass, a lower bound
    # 32/s was run again as an undecided load is (2 lengthenings), and the search stopped there.
    assert [probe.level for probe in probes][-3:] == [32.0, 32.0, 32.0]


def test_a_client_bound_failure_above_a_real_one_keeps_the_real_bracket() -> None:
    p99 = profile(start=10, max_lengthening=0)
    probes = [
        Probe(10.0, SloMisses(1000, (0,)), STEP_S),
        Probe(20.0, SloMisses(2000, (500,)), STEP_S),  # the server's own failure
        Probe(15.0, SloMisses(1500, (500,)), STEP_S, client_bound=True),
    ]
    state = search_state(p99, probes)
    assert state.end == "client_bound"
    assert state.capacity == 10.0
    assert state.first_fail is not None
    assert state.first_fail.level == 20.0


def test_a_client_bound_step_that_passes_stands() -> None:
    p99 = profile(start=10)
    state = search_state(p99, [Probe(10.0, SloMisses(1000, (0,)), STEP_S, client_bound=True)])
    assert state.levels[0].verdict == "pass"
    assert state.capacity == 10.0
    assert state.next_level == 20.0


def test_a_clean_rerun_of_a_client_bound_failure_can_still_pass() -> None:
    p90 = profile(slos=("ttft_ms=500@p90",), start=10)
    bound = Probe(10.0, SloMisses(100, (30,)), STEP_S, client_bound=True)
    assert search_state(p90, [bound]).next_level == 10.0  # run again, not called failing
    state = search_state(p90, [bound, Probe(10.0, SloMisses(2000, (40,)), STEP_S)])
    # Judged on the step whose client kept up: 40 of 2,000 (2 %), shown below 10 %.
    assert state.levels[0].misses == SloMisses(2000, (40,))
    assert state.levels[0].verdict == "pass"
    assert state.next_level == 20.0


def test_a_failure_the_steps_whose_client_kept_up_show_is_the_servers() -> None:
    # Under a loaded machine (measured: 64/s against a 60/s token budget), the first step at
    # 64/s was client-bound, its rerun was not and failed as badly: the server's failure.
    p90 = profile(slos=("ttft_ms=100@p90",), start=16, precision=0.15)
    probes = [
        Probe(16.0, SloMisses(72, (0,)), STEP_S, client_bound=True),
        Probe(32.0, SloMisses(144, (0,)), STEP_S, client_bound=True),
        Probe(64.0, SloMisses(288, (149,)), STEP_S, client_bound=True),
    ]
    assert search_state(p90, probes).next_level == 64.0  # not yet the server's failure
    state = search_state(p90, [*probes, Probe(64.0, SloMisses(288, (160,)), STEP_S)])
    assert state.first_fail is not None
    assert state.first_fail.level == 64.0
    assert state.next_level == 48.0
