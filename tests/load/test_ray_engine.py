"""The Ray engine on a Ray started in this process (issue 14): each slice in an actor sends what
a load process sends, an actor killed mid-step is a lost slice, and a stop in the driver
cancels every actor.

The runs target a port where nothing listens (every request is a quick connect error), so no
server is needed. One Ray serves the whole module; each test starts its own actors.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from assay.benchmark.run import recover_lost_shards, step_report
from assay.benchmark.shard_sink import ShardSinkFactory, ShardSummary
from assay.data import RequestSource
from assay.engine import (
    BenchmarkPlan,
    BenchmarkResult,
    Concurrent,
    Constant,
    Constraints,
    Poisson,
    Profile,
    ProgressSnapshot,
    RayActors,
    StopReason,
    Synchronous,
    Throughput,
    counting_sink,
    run_benchmark,
    start_load_processes,
    start_ray_actors,
)
from assay.records.jsonl import read_records
from assay.spec.load import Pacing, Replay, StepLoad, pacing
from tests.load.test_coordinator import trace_source, two_process_plan
from tests.ray_support import assert_no_ray_process_left, ray_environment

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


def plan(
    profile: Profile,
    constraints: Constraints,
    source: RequestSource | None = None,
    **options: float,
) -> BenchmarkPlan:
    return two_process_plan(constraints, profile, source, **options)


def slices(result: BenchmarkResult[ShardSummary]) -> dict[int, list[tuple[str, int]]]:
    """Per slice: each record's id and targeted start relative to its step's start."""
    sent: dict[int, list[tuple[str, int]]] = {}
    for step in result.steps:
        for summary in step.sink_results:
            records = read_records(summary.shard)
            sent.setdefault(summary.process, []).extend(
                (record.request_id, record.targeted_start_ns - step.started_ns)
                for record in records
            )
    return {process: sorted(records) for process, records in sent.items()}


def once(action: Callable[[], None]) -> Callable[[ProgressSnapshot], None]:
    """An on_progress callback that runs `action` at the first progress report."""
    done: list[bool] = []

    def on_progress(_: ProgressSnapshot) -> None:
        if not done:
            done.append(True)
            action()

    return on_progress


@pytest.mark.parametrize(
    "profile",
    [Constant(rate=40), Poisson(rate=40), Replay(), Concurrent(streams=4),
     Throughput(max_concurrency=4), Synchronous()],
    ids=lambda profile: profile.kind,
)  # fmt: skip
def test_ray_actors_send_each_slice_as_the_load_process_of_that_slice(
    tmp_path: Path, profile: StepLoad
) -> None:
    # A trace at 40 req/s: replay takes its times from it, the others only its prompts.
    trace = trace_source(tmp_path / "trace.jsonl", [index * 25 for index in range(24)])
    work = plan(profile, Constraints(max_requests=24), trace)
    ray_sinks = ShardSinkFactory(tmp_path / "ray")
    with start_ray_actors(None, 2) as actors:
        on_ray = run_benchmark(work, ray_sinks, started=actors)
    with start_load_processes(2) as started:
        local = run_benchmark(work, ShardSinkFactory(tmp_path / "local"), started=started)
    assert [step.totals for step in on_ray.steps] == [step.totals for step in local.steps]
    assert [step.scheduled for step in on_ray.steps] == [step.scheduled for step in local.steps]
    ray_slices, local_slices = slices(on_ray), slices(local)
    # Every record streamed back from the actors is in the driver's shards.
    assert sum(map(len, ray_slices.values())) == 24
    match pacing(profile):
        case Pacing.open_loop:
            # The same requests at the same targeted times, slice by slice, and what they owed.
            assert ray_slices == local_slices
            assert on_ray.steps[0].scheduled == 24
        case Pacing.closed_loop:
            # Each sends when its previous answer is in: the same requests per slice.
            ids = {p: [request for request, _ in sent] for p, sent in ray_slices.items()}
            local_ids = {p: [request for request, _ in sent] for p, sent in local_slices.items()}
            assert ids == local_ids


def test_an_actor_killed_mid_step_is_a_lost_slice_and_the_run_is_degraded(
    tmp_path: Path,
) -> None:
    import ray

    work = plan(Constant(rate=40), Constraints(max_seconds=1.0))
    sinks = ShardSinkFactory(tmp_path)
    with start_ray_actors(None, 2) as actors:
        kill = once(lambda: ray.kill(actors.actors[1]))
        result = run_benchmark(work, sinks, on_progress=kill, started=actors)
    assert result.degraded
    assert not result.interrupted
    [step] = result.steps
    [lost] = step.lost_processes
    assert (lost.process, lost.reason) == (1, "Ray actor 1 was killed (ray.kill)")
    # Its slice at 40 req/s over 1 s: the odd indices due before the deadline (less 2 ms).
    assert lost.scheduled == 20
    # Slice 0 ran its whole part; the lost slice counts with the records that reached the
    # driver, the rest of what it had sent as lost and the rest of its schedule as not sent.
    assert step.totals.dispatched == 20
    report = step_report(step, recover_lost_shards(result, sinks, work)[0])
    outcomes = report.metrics.outcomes
    assert outcomes.dispatched == outcomes.completed + outcomes.errored + outcomes.cancelled
    assert report.scheduled == 40
    assert outcomes.dispatched + report.lost + report.not_sent == 40
    assert report.lost_processes == ("Ray actor 1 was killed (ray.kill)",)


def test_a_frozen_actor_is_killed_after_its_silence_and_the_run_ends() -> None:
    import ray

    work = plan(Constant(rate=40), Constraints(max_seconds=1.0), unresponsive_after_s=0.5)
    with start_ray_actors(None, 2) as actors:
        pid = ray.get(actors.actors[1].__ray_call__.remote(lambda _: os.getpid()))
        freeze = once(lambda: os.kill(pid, signal.SIGSTOP))
        result = run_benchmark(work, counting_sink, on_progress=freeze, started=actors)
    assert result.degraded
    [step] = result.steps
    [lost] = step.lost_processes
    assert lost.reason == "Ray actor 1 stopped answering for 0.5 s and was killed"
    assert step.totals.dispatched == 20


def test_ctrl_c_in_the_driver_stops_every_actor_and_keeps_the_partial_result() -> None:
    # No deadline and no budget: only the stop can end this step.
    work = plan(Concurrent(streams=4), Constraints())
    with start_ray_actors(None, 2) as actors:
        interrupt = once(lambda: os.kill(os.getpid(), signal.SIGINT))
        result = run_benchmark(work, counting_sink, on_progress=interrupt, started=actors)
    assert result.interrupted
    assert not result.degraded
    [step] = result.steps
    assert step.stopped_by is StopReason.stop_signal
    assert len(step.sink_results) == 2  # both actors finished their part
    totals = step.totals
    assert totals.dispatched > 0
    assert totals.dispatched == totals.completed + totals.errored + totals.cancelled
    assert sum(counts.total for counts in step.sink_results) == totals.dispatched


def test_records_the_driver_cannot_write_stop_the_run_with_one_error_line() -> None:
    from assay.errors import OutputError

    # The actors spool their records; writing them in the driver is what fails.
    unwritable = ShardSinkFactory(Path("/proc/assay-shards"))
    with start_ray_actors(None, 2) as actors, pytest.raises(OutputError) as raised:
        run_benchmark(plan(Constant(rate=40), Constraints(max_requests=4)), unwritable,
                      started=actors)  # fmt: skip
    assert str(raised.value).startswith(
        "cannot write records to /proc/assay-shards/records.step000"
    )


LOOPBACK_CHECK = """
import os, psutil, ray_support_pids
from assay.engine import start_ray_actors
with start_ray_actors(None, 1) as started:
    import ray
    ray.get(started.actors[0].__ray_call__.remote(lambda _: None))  # the actor is up
    auth_mode = os.environ.get("RAY_AUTH_MODE")
    pids = ray_support_pids.of_folder()
    addresses = {
        address.ip
        for connection in psutil.net_connections(kind="inet")
        if connection.pid in pids
        for address in (connection.laddr, connection.raddr)
        if address
    }
    print(auth_mode, len(pids), sorted(addresses))
"""


def test_a_ray_of_its_own_stays_on_loopback_and_leaves_no_token_file(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    tmp_path = tmp_path_factory.mktemp("l")  # short: Ray's socket paths are limited
    # A fresh interpreter, as `assay run --engine ray` without --ray-address: Ray is imported
    # there for the first time, with nothing set but its folder.
    (tmp_path / "ray_support_pids.py").write_text(
        "import os, psutil\n"
        "def of_folder():\n"
        "    folder = os.environ['RAY_TMPDIR']\n"
        "    found = {os.getpid()}\n"
        "    for p in psutil.process_iter(['cmdline']):\n"
        "        if any(folder in part for part in p.info['cmdline'] or ()):\n"
        "            found.add(p.pid)\n"
        "    return found\n"
    )
    # Nor a token: left to itself, Ray 2.60 writes one into ~/.ray/auth_token.
    unset = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
    env = {key: value for key, value in os.environ.items() if key not in unset}
    home = tmp_path / "home"
    home.mkdir()
    env |= {"RAY_TMPDIR": str(tmp_path / "r"), "PYTHONPATH": str(tmp_path), "HOME": str(home)}
    (tmp_path / "r").mkdir()
    result = subprocess.run(
        [sys.executable, "-c", LOOPBACK_CHECK], capture_output=True, text=True, env=env,
        timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    auth_mode, processes, addresses = result.stdout.split(" ", 2)
    assert auth_mode == "token"  # authenticated all the same, with a token held in memory
    assert list(home.rglob("*")) == []
    assert int(processes) >= 3  # this driver, the GCS, the raylet, the actor...
    assert addresses.strip() in ("['127.0.0.1']", "['127.0.0.1', '::ffff:127.0.0.1']",
                                 "['::ffff:127.0.0.1']")  # fmt: skip
    assert_no_ray_process_left(tmp_path / "r")


def test_ray_actors_started_for_another_slice_count_are_refused() -> None:
    from assay.errors import ConfigError

    with start_ray_actors(None, 1) as actors:
        assert isinstance(actors, RayActors)
        assert actors.other_hosts == ()  # one machine: a loopback target is reachable
        with pytest.raises(ConfigError, match="1 Ray actors were started for a plan of 2"):
            run_benchmark(plan(Synchronous(), Constraints(max_requests=1)), counting_sink,
                          started=actors)  # fmt: skip


def test_more_workers_than_the_cluster_has_cpus_is_one_clear_error() -> None:
    from assay.errors import ConfigError

    refused = pytest.raises(
        ConfigError, match="the Ray cluster has 2 CPUs, and each actor needs one"
    )
    with refused, start_ray_actors(None, 3):
        pass
