"""`assay run --engine ray` against a Ray cluster of two nodes on loopback (issue 14): every
profile sends what a local run with as many processes sends, a fault mixture is counted
exactly as the mock injected it, and Ctrl-C cancels every actor and writes the partial report.

One cluster serves the module (Ray's start-up takes seconds); each run is its own driver, as
`assay run` on a machine of a real cluster is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.cli.cli_harness import (
    ASSAY,
    FAST,
    assert_every_request_accounted,
    read_record_lines,
    run_fast,
)
from tests.cli.test_cli_fault_accounting import RATES, SEED, error_counts, expected_code
from tests.cli.test_cli_interrupt import interrupt_mid_step
from tests.ray_support import loopback_cluster, ray_environment

pytestmark = pytest.mark.ray

REQUESTS = 40
# A sweep runs a synchronous, a throughput and a constant step: with the others, every profile.
# (tests/load/test_ray_engine.py compares each profile slice by slice, in one process.)
PROFILES = {
    "sweep": ("--profile", "sweep", "--sweep-rates", "1", "--concurrency", "4"),
    "concurrent": ("--profile", "concurrent", "--concurrency", "4"),
    "poisson": ("--profile", "poisson", "--rate", "200"),
    "replay": ("--profile", "replay", "--replay-speed", "20"),
}
OPEN_LOOPS = {"poisson", "replay"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two Ray nodes of one CPU each on loopback; the head's address."""
    with ray_environment(tmp_path_factory.mktemp("ray")) as temp:
        pytest.importorskip("ray")
        with loopback_cluster(temp, nodes=2) as address:
            yield address


def engine(cluster: str) -> tuple[str, ...]:
    return ("--engine", "ray", "--ray-address", cluster, "--ray-workers", "2")


def trace_file(directory: Path) -> Path:
    """A Mooncake trace of `REQUESTS` requests, 50 ms apart."""
    path = directory / "trace.jsonl"
    rows = (
        {"timestamp": 50 * i, "input_length": 32, "output_length": 16, "hash_ids": [i]}
        for i in range(REQUESTS)
    )
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def schedule(lines: list[dict[str, Any]], step: int) -> list[tuple[str, int]]:
    """A step's requests with their targeted starts relative to the step's first one."""
    mine = [line for line in lines if line["step"] == step]
    first = min(int(line["targeted_start_ns"]) for line in mine)
    return sorted((line["id"], int(line["targeted_start_ns"]) - first) for line in mine)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_every_profile_on_ray_sends_what_two_local_processes_send(
    tmp_path: Path, cluster: str, profile: str
) -> None:
    args: tuple[str | Path, ...] = (*PROFILES[profile], "--max-requests", str(REQUESTS))
    if profile == "replay":
        args = (*args[:-2], "--trace", trace_file(tmp_path))
    runs = {}
    for name, where in (("ray", engine(cluster)), ("local", ("--processes", "2"))):
        run_dir = tmp_path / name
        result = run_fast(run_dir, *args, *where, "--mock-fault", "http_500=0")
        assert result.exit_code == 0, result.stdout + result.stderr
        runs[name] = (assert_every_request_accounted(run_dir), read_record_lines(run_dir))
    (on_ray, ray_lines), (local, local_lines) = runs["ray"], runs["local"]
    assert on_ray.run_config["engine"] == "ray"
    assert on_ray.run_config["processes"] == local.run_config["processes"] == 2
    assert [step.profile for step in on_ray.steps] == [step.profile for step in local.steps]
    for ray_step, local_step in zip(on_ray.steps, local.steps, strict=True):
        assert ray_step.metrics.outcomes == local_step.metrics.outcomes
        assert ray_step.scheduled == local_step.scheduled
        ray_ids = sorted(line["id"] for line in ray_lines if line["step"] == ray_step.index)
        local_ids = sorted(line["id"] for line in local_lines if line["step"] == local_step.index)
        assert ray_ids == local_ids
        if profile in OPEN_LOOPS:
            # The same requests at the same targeted times (a sweep's constant rate is measured,
            # so there only the requests compare).
            assert schedule(ray_lines, ray_step.index) == schedule(local_lines, local_step.index)


def test_a_fault_mixture_on_ray_is_counted_exactly_as_the_mock_injected_it(
    tmp_path: Path, cluster: str
) -> None:
    faults = [arg for name, rate in RATES.items() for arg in ("--mock-fault", f"{name}={rate}")]
    result = run_fast(
        tmp_path, *faults, "--profile", "concurrent", "--concurrency", "8",
        "--max-requests", "200", "--seed", str(SEED), "--max-error-rate", "0.9", *engine(cluster),
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path)
    lines = read_record_lines(tmp_path)
    assert sorted(line["id"] for line in lines) == [f"req-{i:08d}" for i in range(200)]
    injected = Counter(code for line in lines if (code := expected_code(line["id"])) is not None)
    assert len(injected) == 3  # every fault of the mixture was drawn at least once
    assert error_counts(report) == dict(injected)


def test_ctrl_c_on_ray_cancels_every_actor_and_writes_the_partial_report(
    tmp_path: Path, cluster: str
) -> None:
    command = [
        str(ASSAY), "run", "--output-dir", str(tmp_path), *FAST[:2], "--mock-itl-ms", "20",
        "--output-tokens", "16", "--prompt-tokens", "32", "--profile", "concurrent",
        "--concurrency", "8", "--max-seconds", "60", "--mock-fault", "http_500=0",
        *engine(cluster),
    ]  # fmt: skip
    returncode, stdout, stderr = interrupt_mid_step(command)
    assert returncode == 130, stdout + stderr
    assert "INTERRUPTED: partial results" in stdout
    report = assert_every_request_accounted(tmp_path)
    assert report.run_config["interrupted"] is True
    assert report.run_config["degraded"] is False  # both actors stopped and reported
    (step,) = report.steps
    assert step.stopped_by == "stop_signal"
    outcomes = report.totals.outcomes
    assert outcomes.cancelled > 0
    assert outcomes.completed > 0
    assert outcomes.errored == 0, report.totals.errors_by_code
