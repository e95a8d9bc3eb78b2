"""Requests built ahead of their send times, once building them proves slow (and, in a closed
loop, built off the loop once that proves slow: `RequestBuilds`).

A synthetic request with images encodes each image as it is built (a 512x512 PNG takes about
14 ms); built at its send time, that cost is dispatch lag for it and for every request queued
behind it. An open-loop schedule says which requests come next, so they can be built beforehand
on threads of their own (Pillow and zlib release the GIL while they encode). A text request
builds in microseconds, less than handing it to a thread would cost, so a step builds on the
loop until `SLOW_BUILDS` requests have each taken longer than `SLOW_BUILD_NS`, no more than
`SLOW_SPACING` quick builds apart (or one took longer than `STALL_BUILD_NS`), timed in the
building thread's CPU as well as on the clock (`_SlowBuilds`: a pause that was not the build's
own does not count), and ahead from then on, at most `AHEAD` requests beyond the one being
sent. One build runs at a time, on a machine's cores beside the loop and the server; each
time `GROW_AFTER` requests in a row have had to wait for their builds, one more may run at once,
up to one per usable CPU (a 512x512 PNG at 100 req/s in one process needs two). The build
threads are daemons (`BuildThreads`): a stopped run never waits for an image still encoding.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Final, TypeVar

from assay.core import Clock, GenerationRequest
from assay.data.source import RequestSource
from assay.load.machine import usable_cpus

SLOW_BUILD_NS: Final = 500_000
"""A request that takes longer than this to build (0.5 ms) counts as slow."""
SLOW_BUILDS: Final = 3
"""Slow builds after which a step builds its requests ahead."""
SLOW_SPACING: Final = 64
"""Quick builds in a row after which the slow ones before them are forgotten (see
`_SlowBuilds`). Requests that really build slowly (images) come closer together than this."""
STALL_BUILD_NS: Final = 20_000_000
"""A build this long (20 ms: large images) moves the builds off the loop at once: the loop held
that long already delays every timer, Ctrl-C and `--max-seconds`."""
AHEAD: Final = 16
"""Requests built ahead of the one being sent, at most."""
GROW_AFTER: Final = 16
"""Requests in a row that waited for their builds after which one more build runs at once."""

_T = TypeVar("_T")


class BuildThreads(Executor):
    """Up to `most` daemon threads that build requests.

    A `ThreadPoolExecutor`'s threads are joined when the interpreter exits, so a process told to
    stop waited for every image still encoding (seconds each under load) before it could end.
    These threads are daemons: a build still running when the process ends is abandoned, its
    request was never going to be sent.
    """

    def __init__(self, most: int) -> None:
        self._most = most
        self._work: queue.SimpleQueue[tuple[Future[object], Callable[[], object]] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shut = False

    def submit(self, fn: Callable[..., _T], /, *args: object, **kwargs: object) -> Future[_T]:
        future: Future[_T] = Future()
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot build requests after shutdown")
            self._work.put((future, functools.partial(fn, *args, **kwargs)))  # type: ignore[arg-type]  # Future is invariant: the queue holds builds of any result
            if len(self._threads) < self._most:
                thread = threading.Thread(target=self._serve, name="assay-requests", daemon=True)
                self._threads.append(thread)
                thread.start()
        return future

    def _serve(self) -> None:
        while (item := self._work.get()) is not None:
            future, build = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(build())
            except BaseException as error:  # handed to whoever takes the request
                future.set_exception(error)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut = True
            if cancel_futures:
                while True:
                    try:
                        item = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            for _ in self._threads:
                self._work.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


class _SlowBuilds:
    """Tells from each build's time whether building has proven slow.

    A build is timed on the step's clock. A text request that builds in microseconds is now and
    then timed slow by a pause that was not its own (the process descheduled on a busy machine,
    a profiler's sample): on a loaded 2-core machine three of those came within seconds, and
    every later build then paid a thread's handoff (tens of microseconds a request). So once a
    build was timed slow, and until `SLOW_SPACING` quick builds in a row forget it, each build is
    also timed in the CPU its own thread spent (`cpu_ns`, when given), and counts as slow only
    when both say so; a stall timed on the clock alone moves the builds at the next build slow
    in both. Images encode in the building thread, so their builds stay slow.
    """

    __slots__ = ("_cpu_ns", "_quick", "_slow", "watching")

    def __init__(self, cpu_ns: Callable[[], int] | None) -> None:
        self._cpu_ns = cpu_ns
        self._slow = 0
        self._quick = 0  # quick builds since the last slow one
        # Whether builds are timed in CPU too (after a slow one).
        self.watching = False

    def cpu_now(self) -> int:
        """The thread's CPU time now (only called while `watching`)."""
        assert self._cpu_ns is not None  # watching only with a CPU clock
        return self._cpu_ns()

    def proven(self, took_ns: int, cpu_started_ns: int | None = None) -> bool:
        """Count a build of `took_ns` (with its thread's CPU time at its start while
        `watching`); whether the builds should leave the loop now."""
        if cpu_started_ns is not None:
            took_ns = min(took_ns, self.cpu_now() - cpu_started_ns)
        if took_ns <= SLOW_BUILD_NS:
            self._quick += 1
            if self._quick >= SLOW_SPACING:
                self._slow = self._quick = 0
                self.watching = False
            return False
        self._quick = 0
        if self._cpu_ns is not None and cpu_started_ns is None:
            # Timed slow on the clock alone: counted, and the next builds are timed in CPU too.
            # A stall so timed moves the builds on the next slow one, not at once.
            self.watching = True
            self._slow = SLOW_BUILDS - 1 if took_ns > STALL_BUILD_NS else self._slow + 1
            return self._slow >= SLOW_BUILDS
        self._slow += 1
        return self._slow >= SLOW_BUILDS or took_ns > STALL_BUILD_NS


class Lookahead(Iterator[tuple[int, int]]):
    """An open-loop schedule (`(index, offset_ns)` entries) whose next entries can be looked at
    without using them up.

    Iterating it yields every entry once, the looked-at ones first, so what is left of it when
    a step stops (the count of requests it still owed) includes them.

    >>> schedule = Lookahead(iter([(0, 0), (1, 10), (2, 20)]))
    >>> schedule.upcoming(2)
    [(0, 0), (1, 10)]
    >>> list(schedule)
    [(0, 0), (1, 10), (2, 20)]
    """

    __slots__ = ("_rest", "_shown")

    def __init__(self, schedule: Iterator[tuple[int, int]]) -> None:
        self._rest = schedule
        self._shown: deque[tuple[int, int]] = deque()

    def __iter__(self) -> Lookahead:
        return self

    def __next__(self) -> tuple[int, int]:
        if self._shown:
            return self._shown.popleft()
        return next(self._rest)

    def upcoming(self, count: int) -> list[tuple[int, int]]:
        """The next `count` entries (fewer where the schedule ends), still to be iterated."""
        shown = self._shown
        while len(shown) < count:
            entry = next(self._rest, None)
            if entry is None:
                break
            shown.append(entry)
        return list(itertools.islice(shown, count))


class RequestBuilds:
    """The requests of a closed loop's streams, built on the loop until that proves slow
    (`SLOW_BUILDS` builds above `SLOW_BUILD_NS`), then each on a build thread while its stream
    waits: a stream stopped meanwhile (Ctrl-C, `--max-seconds`) stops waiting at once, and the
    loop is never held by an image that takes a second to encode. `cpu_ns` (the thread's CPU
    clock, `time.thread_time_ns` in a run) confirms builds timed slow (`_SlowBuilds`).
    """

    def __init__(
        self,
        source: RequestSource,
        clock: Clock,
        executor: Callable[[int], Executor] = BuildThreads,
        most_at_once: int | None = None,
        cpu_ns: Callable[[], int] | None = None,
    ) -> None:
        self._source = source
        self._clock = clock
        self._new_executor = executor
        self._most = most_at_once or usable_cpus()
        self._slow = _SlowBuilds(cpu_ns)
        self._executor: Executor | None = None

    @property
    def off_the_loop(self) -> bool:
        """Whether requests are now built on build threads."""
        return self._executor is not None

    def here(self, index: int) -> GenerationRequest | None:
        """The request at `index` built on the loop, or None once builds are on threads (then
        `request` awaits it): a closed loop takes a request built here without a coroutine."""
        return self._build(index) if self._executor is None else None

    async def request(self, index: int) -> GenerationRequest:
        """The request at `index`."""
        if self._executor is not None:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, self._source.request, index)
        return self._build(index)

    def _build(self, index: int) -> GenerationRequest:
        """Build the request at `index` on the loop, timed: slow builds move the next ones off."""
        slow = self._slow
        cpu_started_ns = slow.cpu_now() if slow.watching else None
        started_ns = self._clock.now_ns()
        request = self._source.request(index)
        if slow.proven(self._clock.now_ns() - started_ns, cpu_started_ns):
            self._executor = self._new_executor(self._most)
        return request

    def close(self) -> None:
        """Drop the builds not started; one still running is abandoned with its thread."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


class RequestsAhead:
    """The requests of one open-loop step, built on the loop until that proves slow, then
    ahead of their send times on a thread.

    A request's build fails as it would have on the loop: its error is raised where the request
    is taken. Requests built ahead but never sent (the step stopped first) are dropped by
    `close`, which every step calls when its loop ends. `cpu_ns` as for `RequestBuilds`.
    """

    def __init__(
        self,
        source: RequestSource,
        schedule: Lookahead,
        clock: Clock,
        executor: Callable[[int], Executor] = BuildThreads,
        most_at_once: int | None = None,
        cpu_ns: Callable[[], int] | None = None,
    ) -> None:
        self._source = source
        self._schedule = schedule
        self._clock = clock
        self._new_executor = executor
        self._most = most_at_once or usable_cpus()
        self._slow = _SlowBuilds(cpu_ns)
        self._building: dict[int, asyncio.Future[GenerationRequest]] = {}
        self._executor: Executor | None = None
        self._running = 0  # builds submitted and not done
        self._at_once = 1  # builds allowed to run at once; grows while they fall behind
        self._waits = 0  # requests in a row that had to wait for their build
        self._closed = False

    @property
    def ahead(self) -> bool:
        """Whether requests are now built ahead (on the executor)."""
        return self._executor is not None

    @property
    def at_once(self) -> int:
        """How many builds may run at once now."""
        return self._at_once

    async def request(self, index: int) -> GenerationRequest:
        """The request at `index`, the next one the schedule sends."""
        if self._executor is not None:
            building = self._building.pop(index, None)
            if building is None:
                # Not started ahead (the builds are behind): built now, still off the loop.
                self._submit(index)
                building = self._building.pop(index)
                self._waited()
            elif building.done():
                self._waits = 0
            else:
                self._waited()
            request = await building
            self._build_ahead()
            return request
        slow = self._slow
        cpu_started_ns = slow.cpu_now() if slow.watching else None
        started_ns = self._clock.now_ns()
        request = self._source.request(index)
        if slow.proven(self._clock.now_ns() - started_ns, cpu_started_ns):
            self._executor = self._new_executor(self._most)
            self._build_ahead()
        return request

    def _waited(self) -> None:
        # A request had to wait for its build. After `GROW_AFTER` in a row the schedule outruns
        # the builds running at once (not a start that is catching up): allow one more, up to
        # one per usable CPU, and start it now.
        self._waits += 1
        if self._waits >= GROW_AFTER:
            self._waits = 0
            self._at_once = min(self._at_once + 1, self._most)
            self._build_ahead()

    def _submit(self, index: int) -> None:
        assert self._executor is not None  # only once building ahead
        loop = asyncio.get_running_loop()
        building = loop.run_in_executor(self._executor, self._source.request, index)
        self._running += 1
        building.add_done_callback(self._built)
        self._building[index] = building

    def _built(self, _: asyncio.Future[GenerationRequest]) -> None:
        self._running -= 1
        if not self._closed:
            self._build_ahead()

    def _build_ahead(self) -> None:
        """Start the builds of the next requests, as many at once as allowed."""
        building = self._building
        for index, _ in self._schedule.upcoming(AHEAD):
            if self._running >= self._at_once:
                return
            if index not in building:
                self._submit(index)

    def close(self) -> None:
        """Drop the requests built or being built that were never taken."""
        self._closed = True
        for building in self._building.values():
            if building.done():
                if not building.cancelled():
                    building.exception()  # a build that failed for a request never sent
            else:
                building.cancel()
        self._building.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


__all__ = [
    "AHEAD",
    "GROW_AFTER",
    "SLOW_BUILDS",
    "SLOW_BUILD_NS",
    "SLOW_SPACING",
    "STALL_BUILD_NS",
    "BuildThreads",
    "Lookahead",
    "RequestBuilds",
    "RequestsAhead",
]
