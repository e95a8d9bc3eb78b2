"""A traffic mix on Ray actors names every request's model as local load processes do (issue
39): the pick is a function of the run's seed and the request's index alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.cli_harness import assert_every_request_accounted, read_record_lines, run_fast
from tests.ray_support import loopback_cluster, ray_environment

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two Ray nodes of one CPU each on loopback; the head's address."""
    with ray_environment(tmp_path_factory.mktemp("ray")) as temp:
        pytest.importorskip("ray")
        with loopback_cluster(temp, nodes=2) as address:
            yield address


def test_a_mix_on_ray_names_the_models_local_processes_name(tmp_path: Path, cluster: str) -> None:
    engines = {
        "ray": ("--engine", "ray", "--ray-address", cluster, "--ray-workers", "2"),
        "local": ("--processes", "2"),
    }
    models = {}
    for name, where in engines.items():
        run_dir = tmp_path / name
        result = run_fast(
            run_dir, "--model", "a=0.5,b=0.3,c=0.2", "--max-requests", "60", "--seed", "4", *where
        )
        assert result.exit_code == 0, result.stdout + result.stderr
        assert_every_request_accounted(run_dir)
        models[name] = sorted((line["id"], line["model"]) for line in read_record_lines(run_dir))
    assert models["ray"] == models["local"]
    assert {model for _, model in models["ray"]} == {"a", "b", "c"}
