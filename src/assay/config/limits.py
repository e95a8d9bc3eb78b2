"""Limits that depend on the machine: how many processes and connections a run may ask for.

A config can be valid anywhere and still impossible here (`--processes 100000` would start
interpreters until the machine gives out); these checks run before anything starts.
"""

from __future__ import annotations

from typing import Final

from assay.errors import ConfigError
from assay.load.machine import usable_cpus
from assay.spec.capacity import Capacity
from assay.spec.load import Sweep, most_in_flight, rate_ramp, requested_rate
from assay.spec.run import RunConfig
from assay.spec.target import on_this_machine

PROCESSES_PER_CPU: Final = 4
"""Load (or mock) processes allowed per usable CPU; more only compete for the same cores."""
SMALL_RUN_REQUESTS: Final = 256
"""A run that may send at most this many requests a step (`--max-requests`) at no rate above
`SMALL_RUN_RATE` runs in one load process unless `--processes` says otherwise: a second process
is a fresh interpreter that costs about 0.4 s of CPU to start, longer than one process takes
to send and read that many requests (it serves 2,000 or more a second)."""
SMALL_RUN_RATE: Final = 1000.0
"""The highest `--rate` (req/s) a small run keeps to one load process for."""
RESERVED_FILES: Final = 64
"""Open files a load process keeps for itself (its shard, sockets to the parent, imports)."""


def load_processes(config: RunConfig) -> int:
    """Load-generating processes on this machine: `config.processes`, else one for a small run
    (see `SMALL_RUN_REQUESTS`), else one per usable CPU the server leaves (`server_cpus`), at
    least one.

    The run spec holds only what was asked (`processes`, None for "as the run needs"); how many
    CPUs that is depends on the machine the run starts on, a question for the system, asked here.

    >>> load_processes(RunConfig.model_validate({"processes": 3}))
    3
    >>> load_processes(RunConfig.model_validate({"max_requests": 10}))
    1
    >>> load_processes(RunConfig.model_validate({"max_requests": 10, "processes": 2}))
    2
    """
    if config.engine.processes is not None:
        return config.engine.processes
    if _small_run(config):
        return 1
    cpus = usable_cpus()
    return max(1, cpus - server_cpus(config, cpus))


def server_cpus(config: RunConfig, cpus: int) -> int:
    """The CPUs of this machine's `cpus` the load leaves to the server when it runs here: the
    embedded mock's workers, half of them for a target on the loopback, none for one elsewhere.

    A load process on a core the server needs measures the client's contention, not the
    server: vLLM's API server and engine loop, a proxy, or the mock each want a core of their
    own (on a 2-core machine, one load process beside `assay mock` serves more than two).

    >>> server_cpus(RunConfig.model_validate({}), 8)  # the embedded mock, one worker
    1
    >>> server_cpus(RunConfig.model_validate({"target": "http://127.0.0.1:8000"}), 8)
    4
    >>> server_cpus(RunConfig.model_validate({"target": "http://gpu-box:8000"}), 8)
    0
    """
    url = config.target.url
    if url is None:
        return config.mock.workers
    return cpus // 2 if on_this_machine(url) else 0


def _small_run(config: RunConfig) -> bool:
    most, load = config.constraints.max_requests, config.load
    if most is None or most > SMALL_RUN_REQUESTS:
        return False
    if isinstance(load, Sweep | Capacity):
        return True  # no rate of its own
    ramp = rate_ramp(load)
    rates = (requested_rate(load), *(() if ramp is None else (ramp.start_rate, ramp.end_rate)))
    return all(rate is None or rate <= SMALL_RUN_RATE for rate in rates)


def open_file_limit() -> int | None:
    """The soft limit on open files (`ulimit -n`), None where it is unknown or unlimited."""
    try:
        import resource  # Unix only
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def check_machine_limits(config: RunConfig) -> tuple[str, ...]:
    """Raise `ConfigError` for what this machine cannot do; return warnings for what it can
    do only poorly (more load processes than CPUs)."""
    cpus = usable_cpus()
    most = PROCESSES_PER_CPU * cpus
    processes = load_processes(config)
    for flag, count in (
        ("--processes", processes),
        ("--mock-workers", config.mock.workers),
    ):
        if count > most:
            raise ConfigError(
                f"{flag} {count}: at most {most} on this machine "
                f"({PROCESSES_PER_CPU} per CPU, {cpus} usable CPUs)"
            )
    warnings: list[str] = []
    if processes > cpus:
        warnings.append(
            f"--processes {processes} is more than the {cpus} usable CPUs: the load "
            "processes compete for them and the client, not the server, may set the pace"
        )
    files = open_file_limit()
    # The concurrency the user gave, not a default: every stream in flight holds one
    # connection, so one socket, in its process.
    # A sweep's levels are checked as --concurrency is (issue 37: 1,10^30 was not).
    given = not config.load.model_fields_set.isdisjoint(
        {"streams", "max_concurrency", "concurrencies"}
    )
    concurrency = most_in_flight(config.load) if given else None
    if concurrency is not None and files is not None:
        per_process = -(-concurrency // processes)  # exact for any integer, unlike a float
        allowed = files - RESERVED_FILES
        flag = "--sweep-concurrency" if isinstance(config.load, Sweep) else "--concurrency"
        if per_process > allowed:
            raise ConfigError(
                f"{flag} {concurrency}: {per_process} connections per load process "
                f"is above what the open-file limit of {files} (ulimit -n) allows ({allowed}); "
                f"lower {flag}, add --processes or raise the limit"
            )
    return tuple(warnings)


__all__ = [
    "PROCESSES_PER_CPU",
    "RESERVED_FILES",
    "check_machine_limits",
    "load_processes",
    "server_cpus",
    "open_file_limit",
    "usable_cpus",
]
