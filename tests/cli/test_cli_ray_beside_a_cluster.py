"""`assay run --engine ray` without `--ray-address` on a machine that already runs a Ray
cluster (issue 37, item 8): Ray's own `ray.init()` joins that cluster from its address file
(or RAY_ADDRESS) and refused the `num_cpus` assay passes (exit 3). assay starts a Ray of its
own instead, and the user's cluster is left as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.cli_harness import assert_every_request_accounted, run_fast
from tests.ray_support import loopback_cluster, ray_environment, ray_processes

pytestmark = pytest.mark.ray


@pytest.fixture
def users_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A one-node Ray cluster of the user's on loopback, its address in Ray's address file as
    `ray start --head` writes it; its address and its folder."""
    with ray_environment(tmp_path_factory.mktemp("rc")) as temp:
        pytest.importorskip("ray")
        with loopback_cluster(temp, nodes=1) as address:
            yield address, temp


@pytest.mark.parametrize("found_by", ["address_file", "RAY_ADDRESS"])
def test_a_run_without_ray_address_starts_its_own_ray_beside_the_users(
    users_cluster: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found_by: str
) -> None:
    address, temp = users_cluster
    address_file = temp / "ray_current_cluster"
    assert address_file.read_text() == address  # what Ray's own init would join
    if found_by == "RAY_ADDRESS":
        monkeypatch.setenv("RAY_ADDRESS", address)
    before = {process.pid for process in ray_processes(temp)}
    result = run_fast(
        tmp_path / "run", "--engine", "ray", "--ray-workers", "1", "--max-requests", "8"
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path / "run")
    assert report.totals.outcomes.dispatched == 8
    # The user's cluster: every process of it still there, its address file untouched.
    alive = {process.pid for process in ray_processes(temp) if process.is_running()}
    assert before <= alive
    assert address_file.read_text() == address
