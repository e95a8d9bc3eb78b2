"""A traffic mix on the Ray engine (issue 39): each actor's sink aggregates the models its
records named, and the driver merges them into the step as it merges the load processes'.

The run targets a port where nothing listens (every request is a quick connect error), so no
server is needed; only the per-model accounting is under test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.benchmark.run import step_report
from assay.engine import Constraints, run_benchmark, start_ray_actors
from assay.records.jsonl import read_records
from tests.load.test_coordinator import two_process_plan
from tests.ray_support import assert_no_ray_process_left, ray_environment
from tests.reports.mixed_sinks import MODELS, MixedSinks

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module", autouse=True)
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Ray in this process: two CPUs, loopback only, no dashboard, torn down after the module."""
    with ray_environment(tmp_path_factory.mktemp("ray")) as temp:
        ray = pytest.importorskip("ray")
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=str(temp),
            log_to_driver=False,
        )
        try:
            yield
        finally:
            ray.shutdown()
            assert_no_ray_process_left(temp)


def test_ray_actors_aggregate_each_model_and_the_driver_merges_them(tmp_path: Path) -> None:
    work = two_process_plan(Constraints(max_requests=30))
    with start_ray_actors(None, 2) as actors:
        result = run_benchmark(work, MixedSinks(tmp_path), started=actors)
    step = step_report(result.steps[0])
    assert step.models is not None
    written = Counter(
        record.model
        for summary in result.steps[0].sink_results
        for record in read_records(summary.shard)
    )
    assert sum(written.values()) == 30
    assert set(written) <= set(MODELS)
    assert {name: m.outcomes.dispatched for name, m in step.models.items()} == dict(written)
    assert all(m.outcomes.errored == m.outcomes.dispatched for m in step.models.values())
