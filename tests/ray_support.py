"""Ray for the tests: an environment that keeps Ray on loopback and in a temporary folder, a
local cluster of several nodes, and a check that no Ray process outlives it."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # no stubs installed; only process listing is used
import pytest

RAY_TEARDOWN_S = 20.0
# One token for the whole test session: Ray reads it once per process, at its first use.
_TOKEN = secrets.token_hex(16)


@contextlib.contextmanager
def ray_environment(root: Path) -> Iterator[Path]:
    """Set the variables every Ray process of a test (and `assay` subprocesses) reads, and give
    the folder Ray keeps its sessions, sockets and logs in (a short path: socket names are
    limited to ~107 bytes). Ray reads some of them when it is imported: import it inside."""
    temp = root / "r"
    temp.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        # Ray turns a loopback address into the machine's own network address unless told it
        # runs as a single machine: this keeps every node, driver and actor on 127.0.0.1.
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        # Token authentication as Ray enables by default, with a token of the test's own
        # (never written to the home folder).
        patch.setenv("RAY_AUTH_MODE", "token")
        patch.setenv("RAY_AUTH_TOKEN", _TOKEN)
        patch.setenv("RAY_TMPDIR", str(temp))
        yield temp / "ray"


def ray_processes(temp: Path) -> list[psutil.Process]:
    """The Ray processes (raylets, GCS, workers) whose command line names the folder `temp`."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if any(str(temp) in part for part in process.info["cmdline"] or ()):
                found.append(process)
    return found


def assert_no_ray_process_left(temp: Path) -> None:
    """Every Ray process of the folder `temp` ends within `RAY_TEARDOWN_S` (a safety bound)."""
    deadline = time.monotonic() + RAY_TEARDOWN_S
    while (left := ray_processes(temp)) and time.monotonic() < deadline:
        time.sleep(0.2)
    names = [process.name() for process in left if process.is_running()]
    assert not names, f"Ray processes left behind: {names}"


@contextlib.contextmanager
def loopback_cluster(temp: Path, nodes: int) -> Iterator[str]:
    """A Ray cluster of `nodes` nodes of one CPU each on this machine (each its own raylet and
    object store, as on separate machines); yields the head's address."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "temp_dir": str(temp)},
    )
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        cluster.shutdown()  # type: ignore[no-untyped-call]  # ray.cluster_utils has no annotations
        assert_no_ray_process_left(temp)
