"""The Ray engine: every slice of the load runs in a Ray actor, spread over a cluster's nodes.

The driver (this process) does what the parent of a local run does, with the same code
(`coordinate`): one start time per step, merged progress, the error constraints over every
slice, one stop for all, lost slices accounted. It runs no slice itself: with N actors a run
sends exactly the requests, at the same targeted times, that a local run with N processes
sends. Each actor does what a load child does (`assay.engine.ray_actor`); its aggregates come
back with its part of each step and are merged here, and its records' lines are streamed here
in batches and written to the shards a local run would write (see `SpooledSinkFactory`).

Ray is an optional extra: this module imports it only when an engine starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar

from assay.core import MonotonicClock
from assay.engine.coordinator import (
    GONE,
    Crashed,
    StepCommand,
    StopStep,
    coordinate,
    next_message,
    pickle_for_children,
    run_event_loop,
)
from assay.engine.interrupt import STOP_SIGNALS, SigintFlag, sigint_as_flag
from assay.engine.ray_actor import DriverClock, LoadSliceActor, RecordLines
from assay.engine.ray_leftovers import (
    PROC,
    RUN_MARK,
    end_stale_ray,
    record_path,
    run_mark,
    start_time,
    state_folder,
    write_record,
)
from assay.engine.ray_watchdog import ray_descendants, start_watchdog
from assay.errors import AssayError, ConfigError, first_assay_error
from assay.load.benchmark_plan import BenchmarkPlan, BenchmarkResult
from assay.load.progress import ProgressSnapshot
from assay.records.sink import SinkFactory, SpooledSinkFactory
from assay.spec.target import on_this_machine

if TYPE_CHECKING:
    from types import ModuleType

S = TypeVar("S")

ActorHandle: TypeAlias = Any
"""A `ray.actor.ActorHandle` of a `LoadSliceActor`: Ray types method calls on a handle only for
classes decorated where they are defined, and this one is wrapped at run time (Ray is optional)."""

# Ray delivers a method call in about a millisecond on a LAN; the lead covers a busy node.
_START_LEAD_NS = 200_000_000
# How long an idle actor holds a drain call open: the driver hears from each actor at least
# this often, which is what the heartbeat deadline judges.
_DRAIN_WAIT_S = 0.1
_CLOSE_TIMEOUT_S = 5.0
# How long a cluster's address may take to accept a connection before the run gives up on it
# (Ray 2.60 itself kept retrying a dead address for over 5 minutes, printing only warnings).
_REACH_TIMEOUT_S = 5.0
# Ray's switch for a machine that is not part of a cluster (its default on macOS and Windows):
# nodes then take the loopback address as their own.
_SINGLE_MACHINE: Final = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# Ray's token authentication (on by default for a local Ray since 2.59): its mode and token.
_AUTH_MODE: Final = "RAY_AUTH_MODE"
_AUTH_TOKEN: Final = "RAY_AUTH_TOKEN"


def import_ray() -> ModuleType:
    """The `ray` module, or a `ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            '--engine ray needs Ray, an optional extra: pip install -e ".[ray]" '
            "(or pip install 'assay[ray]')"
        ) from None
    return ray


@dataclass(eq=False)
class RayPeer:
    """One actor as the coordinator sees it (compared, and hashed, by identity)."""

    process: int
    handle: ActorHandle
    exit: str = "went away"


@dataclass(frozen=True)
class RayActors:
    """Ray actors started for a run (see `start_ray_actors`): one per slice of the load."""

    actors: list[ActorHandle]
    driver_node: str
    nodes: int = 1
    # The addresses of the cluster's nodes on other machines than the driver's.
    other_hosts: tuple[str, ...] = ()
    # What was ended of a Ray an earlier run left, in one line (see `ray_leftovers`).
    leftovers_ended: str | None = None

    @property
    def processes(self) -> int:
        """The plan's slice count these serve: one per actor."""
        return len(self.actors)

    def check_can_reach(self, url: str) -> None:
        """A `ConfigError` when `url` is a loopback address and the cluster has nodes on other
        machines: there it would name a server of their own machine, or none.

        >>> RayActors([], "n1", 2, ("10.0.0.7",)).check_can_reach("http://127.0.0.1:8000")
        Traceback (most recent call last):
        ...
        assay.errors.ConfigError: the target http://127.0.0.1:8000 is on this machine's \
loopback, which the Ray nodes on 10.0.0.7 cannot reach: give a --target every node can reach \
(the embedded mock listens on loopback only)
        >>> RayActors([], "n1", 2, ("10.0.0.7",)).check_can_reach("http://gateway:8000")
        """
        if not self.other_hosts or not on_this_machine(url):
            return
        raise ConfigError(
            f"the target {url} is on this machine's loopback, which the Ray nodes on "
            f"{', '.join(self.other_hosts)} cannot reach: give a --target every node can reach "
            "(the embedded mock listens on loopback only)"
        )


def _hosts_beside_the_driver(
    nodes: Iterable[Mapping[str, Any]], driver_node: str
) -> tuple[str, ...]:
    """The addresses of the alive nodes (as `ray.nodes()` lists them) on other machines than
    the driver's node.

    >>> nodes = [{"NodeID": "a", "Alive": True, "NodeManagerAddress": "10.0.0.1"},
    ...          {"NodeID": "b", "Alive": True, "NodeManagerAddress": "10.0.0.1"},
    ...          {"NodeID": "c", "Alive": True, "NodeManagerAddress": "10.0.0.2"},
    ...          {"NodeID": "d", "Alive": False, "NodeManagerAddress": "10.0.0.3"}]
    >>> _hosts_beside_the_driver(nodes, "a")
    ('10.0.0.2',)
    """
    alive = [node for node in nodes if node.get("Alive")]
    driver = {node.get("NodeManagerAddress") for node in alive if node.get("NodeID") == driver_node}
    return tuple(sorted({str(node.get("NodeManagerAddress")) for node in alive} - driver))


@contextlib.contextmanager
def start_ray_actors(address: str | None, workers: int | None) -> Iterator[RayActors]:
    """Connect to the Ray cluster at `address` (or start a local one, on loopback only) and
    start `workers` actors, one CPU each, spread over its nodes (default: one per CPU of the
    cluster). On leaving, every actor is killed, and a Ray this started is shut down."""
    with _token_of_its_own() if address is None else contextlib.nullcontext():
        if address is None and "ray" not in sys.modules:
            # A Ray of this run alone stays on loopback. Ray otherwise gives its nodes, and
            # every connection between its processes, the machine's network address, even with
            # a loopback node address; its processes inherit this (read when ray is imported).
            os.environ.setdefault(_SINGLE_MACHINE, "0")
        with _actors_on(import_ray(), address, workers) as actors:
            yield actors


@contextlib.contextmanager
def _token_of_its_own() -> Iterator[None]:
    """Token authentication for a Ray of this run alone, with a token that only its processes'
    environment holds: left to itself, Ray writes a token into the home folder
    (`~/.ray/auth_token`) that outlives the run. A mode or token the user set is kept."""
    if _AUTH_MODE in os.environ or _AUTH_TOKEN in os.environ:
        yield
        return
    os.environ |= {_AUTH_MODE: "token", _AUTH_TOKEN: secrets.token_hex(32)}
    try:
        yield
    finally:
        for name in (_AUTH_MODE, _AUTH_TOKEN):
            os.environ.pop(name, None)


@contextlib.contextmanager
def _actors_on(ray: ModuleType, address: str | None, workers: int | None) -> Iterator[RayActors]:
    """Start the actors on the cluster at `address` (a Ray of its own when `None`)."""
    owns_ray = not ray.is_initialized()
    record: Path | None = None
    ended: str | None = None
    own = owns_ray and address is None and PROC.is_dir()
    if owns_ray:
        folder = state_folder() if own else None
        if folder is not None:
            # A Ray an earlier run started and left (its run and watchdog both gone) ends here.
            ended = end_stale_ray(folder).line()
        if own:
            # A Ray of this run alone ends with the run, even one killed before it could shut
            # Ray down (see `ray_watchdog`), and is recorded, should the watchdog die as well:
            # both before Ray starts, so a kill during its start-up leaves nothing behind.
            record = _record_ray(folder)
            start_watchdog(os.getpid(), record)
    actors: list[ActorHandle] = []
    try:
        if owns_ray:
            _init_marked(ray, address, workers, marked=own)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        count = workers or cpus
        if count < 1 or count > cpus:
            raise ConfigError(
                f"--ray-workers {count}: the Ray cluster has {cpus} CPUs, and each actor needs one"
            )
        remote = ray.remote(num_cpus=1, scheduling_strategy="SPREAD")(LoadSliceActor)
        actors = [remote.remote() for _ in range(count)]
        nodes = ray.nodes()
        driver_node = ray.get_runtime_context().get_node_id()
        alive = sum(1 for node in nodes if node.get("Alive"))
        if record is not None:
            _record_ray(record.parent, record)  # with the workers and agents started since
        yield RayActors(
            actors, driver_node, alive, _hosts_beside_the_driver(nodes, driver_node), ended
        )
    finally:
        # Each closes its HTTP session (a step still running is stopped first), then goes.
        # (Without actors, none: `ray.get` on a Ray that never started would start one.)
        with contextlib.suppress(Exception):
            if actors:
                ray.get([actor.close.remote() for actor in actors], timeout=_CLOSE_TIMEOUT_S)
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if owns_ray:
            ray.shutdown()
        if record is not None:
            with contextlib.suppress(OSError):
                record.unlink()


def _record_ray(folder: Path | None, record: Path | None = None) -> Path | None:
    """Write (or, given `record`, rewrite) the record of this run's Ray processes; None when
    there is no folder to keep it in or it cannot be written (the watchdog still runs)."""
    driver = os.getpid()
    started = start_time(driver)
    if folder is None or started is None:
        return None
    path = record or record_path(folder, driver, started)
    try:
        write_record(path, driver, started, ray_descendants(driver), new=record is None)
    except OSError:
        return None
    return path


def _init_marked(
    ray: ModuleType, address: str | None, workers: int | None, *, marked: bool
) -> None:
    """Start (or join) Ray; a Ray of this run alone is started with the run's mark in its
    environment, inherited by each of its processes (see `ray_leftovers`)."""
    started = start_time(os.getpid()) if marked else None
    if started is None:
        _init(ray, address, workers)
        return
    os.environ[RUN_MARK] = run_mark(os.getpid(), started)
    try:
        _init(ray, address, workers)
    finally:
        os.environ.pop(RUN_MARK, None)


def _init(ray: ModuleType, address: str | None, workers: int | None) -> None:
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if address is None:
        # A Ray of this run alone, on this machine: loopback only, no dashboard, no usage
        # report.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        options |= {
            "num_cpus": workers or os.cpu_count() or 1,
            "include_dashboard": False,
            "_node_ip_address": "127.0.0.1",
        }
    elif address != "auto":
        _check_reachable(address)
    # Ray sets a SIGTERM handler of its own in a driver; the caller's (a clean stop) stays.
    handlers = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    try:
        # "local": a Ray of its own even when the user runs one here (`ray start --head`, or
        # RAY_ADDRESS set); without it Ray joins that cluster and refuses `num_cpus`.
        ray.init(address="local" if address is None else address, **options)
    except ConnectionError as error:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {error}") from None
    finally:
        if threading.current_thread() is threading.main_thread():
            for number, handler in handlers.items():
                if handler is not None:
                    signal.signal(number, handler)


def _check_reachable(address: str) -> None:
    """Fail at once, naming the address, when nothing accepts a connection at `address`
    (HOST:PORT, checked by the config)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), _REACH_TIMEOUT_S):
            pass
    except OSError as error:
        reason = (
            f"no answer within {_REACH_TIMEOUT_S:g} s"
            if isinstance(error, TimeoutError)
            else error.strerror
        )
        raise ConfigError(
            f"cannot reach the Ray cluster at {address}: {reason or error} (is `ray start "
            "--head` running there, and is this its GCS port?)"
        ) from None


def run_on_ray(
    plan: BenchmarkPlan,
    sink_factory: SinkFactory[S],
    started: RayActors,
    *,
    on_progress: Callable[[ProgressSnapshot], None] | None = None,
) -> BenchmarkResult[S]:
    """Run `plan` over the actors of `started`, one slice each; Ctrl-C becomes a clean stop
    (every actor cancels what it has in flight, and the partial result comes back).

    `plan` and `sink_factory` must pickle, as for load processes. A sink factory that can
    spool (`SpooledSinkFactory`, as the CLI's) has its records written here; any other runs
    as it is in the actors (a `counting_sink`, a sink of the caller's).
    """
    if started.processes != plan.processes:
        raise ConfigError(
            f"{started.processes} Ray actors were started for a plan of {plan.processes} slices"
        )
    ray = import_ray()
    with sigint_as_flag() as interrupted:
        payload = pickle_for_children((plan, sink_factory))
        clock = MonotonicClock()
        driver = DriverClock(clock.now_ns(), time.time_ns(), started.driver_node)
        spooled = _spooling(sink_factory)
        peers = [RayPeer(process, actor) for process, actor in enumerate(started.actors)]
        return run_event_loop(
            _drive(ray, plan, peers, payload, driver, spooled, clock, interrupted, on_progress)
        )


def _spooling(factory: object) -> SpooledSinkFactory[Any] | None:
    # (Taken as an object: a plain callable is not a SpooledSinkFactory to the type checker.)
    return factory if isinstance(factory, SpooledSinkFactory) else None


async def _drive(
    ray: ModuleType,
    plan: BenchmarkPlan,
    peers: list[RayPeer],
    payload: bytes,
    driver: DriverClock,
    spooled: SpooledSinkFactory[Any] | None,
    clock: MonotonicClock,
    interrupted: SigintFlag,
    on_progress: Callable[[ProgressSnapshot], None] | None,
) -> BenchmarkResult[S]:
    inbox = RayInbox(ray, spooled, clock)
    try:
        async with asyncio.TaskGroup() as group:
            for peer in peers:
                setup = peer.handle.setup.remote(peer.process, payload, driver)
                inbox.follow(group, peer, setup)
            try:
                result: BenchmarkResult[S] = await coordinate(
                    plan,
                    {peer: peer.process for peer in peers},
                    inbox,
                    interrupted,
                    on_progress,
                    clock=clock,
                    start_lead_ns=_START_LEAD_NS,
                )
            finally:
                inbox.close()
    except BaseExceptionGroup as error:
        # An error meant for the user (the driver's disk is full, an actor failed) is told as
        # one line, as a local run tells it, not inside the group of the polling tasks.
        user_error = first_assay_error(error)
        if user_error is not None:
            raise user_error from None
        raise
    return result


class RayInbox:
    """The actors' messages, from one long-polling `drain` call per actor at a time; records'
    lines are written as they come, before the part of the step that counts them."""

    noun = "Ray actor"
    nouns = "Ray actors"

    def __init__(
        self, ray: ModuleType, spooled: SpooledSinkFactory[Any] | None, clock: MonotonicClock
    ) -> None:
        self._ray = ray
        self._spooled = spooled
        self._clock = clock
        self._queue: asyncio.Queue[tuple[RayPeer, object]] = asyncio.Queue()
        self._polls: dict[RayPeer, asyncio.Task[None]] = {}
        self.last_read_ns: dict[RayPeer, int] = {}

    def follow(self, group: asyncio.TaskGroup, peer: RayPeer, setup: Any) -> None:
        """Start reading `peer`, whose setup call is `setup`."""
        self._polls[peer] = group.create_task(self._poll(peer, setup))

    def close(self) -> None:
        """Stop reading every actor."""
        for task in self._polls.values():
            task.cancel()

    async def _poll(self, peer: RayPeer, setup: Any) -> None:
        errors = self._ray.exceptions
        try:
            self._take(peer, [await setup])
            while True:
                try:
                    said = await peer.handle.drain.remote(_DRAIN_WAIT_S)
                except errors.ActorUnavailableError:
                    # Unreachable for now (a network blip, a restarting node): the heartbeat
                    # deadline decides when it is lost.
                    await asyncio.sleep(_DRAIN_WAIT_S)
                    continue
                self._take(peer, said)
        except errors.RayActorError as error:
            peer.exit = _describe_death(error)
            self._queue.put_nowait((peer, GONE))
        except errors.RayTaskError as error:
            # Its setup failed: an error meant for the user (a bad validator) stays one line.
            cause = first_assay_error(error.cause) if error.cause is not None else None
            self._queue.put_nowait((peer, Crashed(peer.process, str(error), cause)))

    def _take(self, peer: RayPeer, said: list[object]) -> None:
        self.last_read_ns[peer] = self._clock.now_ns()
        for message in said:
            if isinstance(message, RecordLines):
                if self._spooled is None:
                    continue
                try:
                    self._spooled.write_spooled(message.step, message.process, message.lines)
                except AssayError as error:  # the driver's disk is full: the run stops
                    self._queue.put_nowait((peer, Crashed(peer.process, "", error)))
            else:
                self._queue.put_nowait((peer, message))

    async def get(self, timeout_s: float) -> tuple[RayPeer, object] | None:
        return await next_message(self._queue, timeout_s, self.name)

    def send(self, peers: Iterable[RayPeer], message: object) -> None:
        for peer in peers:
            if isinstance(message, StepCommand):
                ref = peer.handle.start_step.remote(message)
            elif isinstance(message, StopStep):
                ref = peer.handle.stop_step.remote(message.step)
            else:
                raise TypeError(f"no Ray call for {message!r}")
            # A dead actor's call fails; its death is reported by its drain call, not here.
            ref.future().add_done_callback(_retrieve)

    def has_unread(self, peer: RayPeer) -> bool:
        return False  # an answer that arrived is taken at once

    def kill(self, peer: RayPeer) -> None:
        self._polls[peer].cancel()
        with contextlib.suppress(Exception):
            self._ray.kill(peer.handle, no_restart=True)

    def name(self, peer: RayPeer) -> str:
        return f"Ray actor {peer.process}"

    def describe_exit(self, peer: RayPeer) -> str:
        return peer.exit


def _retrieve(future: Any) -> None:
    with contextlib.suppress(BaseException):
        future.exception()


def _describe_death(error: BaseException) -> str:
    """A line on how an actor died, from Ray's (long) error."""
    text = " ".join(str(error).split())
    if "ray.kill" in text:
        return "was killed (ray.kill)"
    if "node" in text.lower() and "died" in text.lower():
        return "died with its node"
    first = text.split(". ")[0][:200]
    return f"died ({first})"


__all__ = [
    "RayActors",
    "RayInbox",
    "import_ray",
    "run_on_ray",
    "start_ray_actors",
]
