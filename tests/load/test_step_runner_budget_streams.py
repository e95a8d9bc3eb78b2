"""Issue 9.13: `--concurrency 10**9` with a budget of 2 requests allocated past 4 GB, one task per
possible stream. Closed loops start only as many tasks as the budget can use."""

from __future__ import annotations

import asyncio

import pytest
from returns.result import Result

from assay.core import GenerationRequest, GenerationResponse, UnusableResponse
from assay.spec.constraints import Constraints
from assay.spec.load import Concurrent, StepLoad, Throughput
from assay.testing import FakeClock
from tests.load.test_step_runner import FakeServer, assert_accounted, run_on_fake_clock

HUGE = 200_000


class TaskCountingServer(FakeServer):
    """Notes how many tasks the loop holds whenever a request arrives."""

    most_tasks: int = 0

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        self.most_tasks = max(self.most_tasks, len(asyncio.all_tasks()))
        return await super().resolve(request)


@pytest.mark.parametrize("load", [Throughput(max_concurrency=HUGE), Concurrent(streams=HUGE)])
async def test_a_huge_concurrency_with_a_small_budget_starts_few_tasks(load: StepLoad) -> None:
    server = TaskCountingServer(FakeClock())
    result = await run_on_fake_clock(load, Constraints(max_requests=2), server)
    assert_accounted(result)
    assert result.totals.dispatched == 2
    # Two request loops and the runner's few helpers, not 200,000 idle loops.
    assert server.most_tasks < 20, server.most_tasks
