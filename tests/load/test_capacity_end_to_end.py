"""The capacity search against the mock with a known capacity: 40 slots answering in 0.5 s
each sustain 80 requests/s, and a token budget of 120 tokens/s 60 two-token answers a second.

The mock runs in the test's loop (`run_benchmark_async`); each step is an ordinary step of
6 s, whose last second is its cool-down (requests still queued when the step ends are
cancelled, and those the window kept are misses, as they must be). The SLOs leave 100 ms for
the machine's jitter.

A load a little over the capacity builds its queue slowly: x % over, the wait grows by x % of
each second, so 6.5 % over passes 100 ms after 1.5 s and shows within the step, while 1.6 %
over would not; a little under it, a loaded machine's jitter alone may miss. The first loads
and a 15 % precision are chosen so that the bisection offers nothing within 6 % of the capacity
(21.3/s: 42.6, 85.2, 63.9, 74.55; 16/s: 32, 64, 48, 56), and the bracket is checked to hold it.

On a machine too busy to run the client on time (the mock shares its loop), a step's misses
may be the client's own delay: the search judges a load on its steps whose client kept up,
reruns one that fails with none, and if it still fails stops `client_bound` rather than
bracketing below the capacity (this test's failure under a load average of 8: 32/s "failed" a
60/s server). Either way, no load it calls failing lies at or below the capacity.
"""

from __future__ import annotations

from functools import partial
from typing import TypeVar

from assay.backend import BackendSettings
from assay.core import Endpoint
from assay.data import FixedCount, SyntheticSource
from assay.engine import (
    BenchmarkPlan,
    BenchmarkResult,
    Constraints,
    counting_sink,
    run_benchmark_async,
)
from assay.load.benchmark_plan import probe_of
from assay.load.capacity import SearchState, search_state
from assay.load.loop_probe import client_saturated
from assay.mock import Fixed, LatencyModel, MockConfig, open_mock_server
from assay.mock.capacity import ServerModel
from assay.spec.capacity import Capacity, SloTarget
from assay.validators import default_chain

S = TypeVar("S")
SLOTS, SERVICE_S = 40, 0.5
CAPACITY = SLOTS / SERVICE_S  # 80 requests/s
STEP = Constraints(max_seconds=6.0, warmup_seconds=0.5, cooldown_seconds=1.0)


def finite_mock(ttft_s: float, server: ServerModel) -> MockConfig:
    return MockConfig(
        latency=LatencyModel(time_to_first_token=Fixed(value=ttft_s), output_tokens=Fixed(value=2)),
        server=server,
    )


def assert_brackets(
    state: SearchState, capacity: float, client_bound: bool, *, precise: bool = True
) -> None:
    """The search's bracket holds `capacity` (and is as narrow as asked when `precise`); a
    search that stopped early because a step's client was saturated claims no failure at or
    below it and no pass above it."""
    if client_bound and state.end in ("client_bound", "budget"):
        assert state.last_pass is None or state.last_pass.level <= capacity
        assert state.first_fail is None or capacity < state.first_fail.level
        return
    assert state.end != "client_bound"
    assert state.last_pass is not None
    assert state.first_fail is not None
    assert state.last_pass.level <= capacity < state.first_fail.level
    if precise:
        assert state.end == "precise"
        assert state.first_fail.level - state.last_pass.level <= 0.15 * state.last_pass.level


def any_client_bound(result: BenchmarkResult[S]) -> bool:
    return any(client_saturated(load) for step in result.steps for load in step.client)


def plan(url: str, profile: Capacity) -> BenchmarkPlan:
    return BenchmarkPlan(
        profile=profile,
        constraints=STEP,
        processes=1,
        source=SyntheticSource(
            model="assay-mock",
            prompt_tokens=FixedCount(value=16),
            output_tokens=FixedCount(value=2),
        ),
        backend=BackendSettings(base_url=url),
        validator_factory=partial(default_chain, Endpoint.chat),
        seed=3,
    )


async def test_the_bracket_holds_the_capacity_of_40_slots() -> None:
    # TTFT within 600 ms for 90 % of requests: 100 ms of queue breaks it.
    profile = Capacity(
        slos=(SloTarget.parse("ttft_ms=600@p90"),),
        start=21.3,
        precision=0.15,
        step_s=6.0,
        budget_s=90.0,
    )
    mock = finite_mock(SERVICE_S, ServerModel(slots=SLOTS))
    async with open_mock_server(mock) as server:
        result = await run_benchmark_async(plan(server.url, profile), counting_sink)
    state = search_state(profile, [probe_of(profile, step) for step in result.steps])
    for step in result.steps:
        totals = step.totals
        assert totals.dispatched == totals.completed + totals.errored + totals.cancelled
        assert step.scheduled == totals.dispatched + step.not_sent
    assert_brackets(state, CAPACITY, any_client_bound(result))


async def test_the_bracket_holds_the_capacity_of_a_token_budget() -> None:
    # 120 output tokens/s shared by every answer, 2 tokens each: 60 requests/s.
    budget, capacity = 120.0, 60.0
    profile = Capacity(
        slos=(SloTarget.parse("ttft_ms=100@p90"),),
        start=16,
        precision=0.15,
        step_s=6.0,
        budget_s=90.0,
    )
    mock = finite_mock(0.0, ServerModel(tokens_per_s=budget))
    async with open_mock_server(mock) as server:
        result = await run_benchmark_async(plan(server.url, profile), counting_sink)
    state = search_state(profile, [probe_of(profile, step) for step in result.steps])
    assert_brackets(state, capacity, any_client_bound(result), precise=False)
