"""A Ray cluster with nodes on other machines cannot reach a loopback target (the embedded mock
listens on loopback only): the run stops with one clear error before any load, and leaves no
run folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.benchmark.run import run_from_config
from assay.config import RunConfig
from assay.engine import RayActors
from assay.errors import ConfigError


def flat(**keys: object) -> RunConfig:
    """The config of flat keys, as a config file or the command line gives them."""
    return RunConfig.model_validate(keys)


def test_embedded_mock_with_ray_nodes_on_other_machines_is_refused_before_any_load(
    tmp_path: Path,
) -> None:
    # No actor is needed: the check comes before the plan is built.
    remote = RayActors(actors=[], driver_node="driver", nodes=2, other_hosts=("10.0.0.7",))
    config = flat(engine="ray", max_requests=3, output_dir=tmp_path / "runs")
    with pytest.raises(ConfigError) as refused:
        run_from_config(config, started=remote)
    message = str(refused.value)
    assert message.startswith("the target http://127.0.0.1:")
    assert "the Ray nodes on 10.0.0.7 cannot reach: give a --target every node can reach" in (
        message
    )
    runs = tmp_path / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []
