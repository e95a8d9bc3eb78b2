"""A second, independent observer of a run: the server's own metrics, scraped in a thread.

The observer runs its own event loop in a thread, so scraping never delays the load that the
run's event loops send. It scrapes once on demand (before and after the load, so the run's
counter deltas are exact) and every `interval_s` in between (the time series and per-step
figures). Samples are timed on the run's monotonic clock (`time.perf_counter_ns`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Self

from assay.server_metrics.scrape import Scraped, scrape

# The first scrape decides whether the run is cross-checked at all: a problem that may pass is
# retried this many times in all, this long apart (issue 38: one unreadable first page turned
# the cross-check off for the whole run).
FIRST_SCRAPE_ATTEMPTS = 3
FIRST_SCRAPE_PAUSE_S = 0.5

# When the series outgrows this many samples, every second one between the first and the last
# is dropped: a day-long run keeps a bounded series.
MAX_SAMPLES = 2048
# The distinct problems kept: a server may answer a new one (quoting its page) at every scrape.
MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class TimedSample:
    """The samples of one successful scrape and when it was taken (monotonic ns)."""

    time_ns: int
    samples: Mapping[str, float]


class ServerMetricsObserver:
    """Scrapes `url` periodically in a background thread; a context manager.

    `headers` go with every scrape (auth for a gateway); the caller passes them only when the
    metrics URL has the target's origin, so no credential crosses to another host.
    `metrics_elsewhere` says the metrics URL has another origin than the load's target (the
    set-up of a proxy in front of the server), for the cross-check's verdict.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        interval_s: float = 1.0,
        timeout_s: float = 5.0,
        verify_tls: bool | ssl.SSLContext = True,
        shown_url: str | None = None,
        metrics_elsewhere: bool = False,
        clean: Callable[[str], str] = str,
    ) -> None:
        self._url = url
        # Masks what the requests send that is secret in a problem (a page that echoes them).
        self._clean = clean
        self.metrics_elsewhere = metrics_elsewhere
        # What reports and messages show: the URL with any credentials masked.
        self.url = url if shown_url is None else shown_url
        self._verify_tls = verify_tls
        self._tls: ssl.SSLContext | None = None
        self.interval_s = interval_s
        self._headers = dict(headers or {})
        self._timeout_s = timeout_s
        self._samples: list[TimedSample] = []
        self._problems: list[str] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="assay-server-metrics", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(10.0)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and loop.is_running():
            loop.call_soon_threadsafe(stop.set)
        self._thread.join(self._timeout_s + 5.0)

    @property
    def samples(self) -> tuple[TimedSample, ...]:
        """Every successful scrape so far, oldest first."""
        with self._lock:
            return tuple(self._samples)

    @property
    def problems(self) -> tuple[str, ...]:
        """Why scrapes failed (the distinct reasons, in order)."""
        with self._lock:
            return tuple(self._problems)

    def scrape_now(self) -> Scraped:
        """Scrape once, now, and keep the result; blocks the caller until it is done.

        A successful scrape is also the newest of `samples`.
        """
        loop = self._loop
        if loop is None or not loop.is_running():
            return Scraped({}, "the metrics observer is not running")
        future = asyncio.run_coroutine_threadsafe(self._scrape_and_keep(), loop)
        try:
            return future.result(self._timeout_s + 5.0)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            return Scraped({}, f"GET {self.url} did not answer in time")

    def scrape_first(
        self, attempts: int = FIRST_SCRAPE_ATTEMPTS, pause_s: float = FIRST_SCRAPE_PAUSE_S
    ) -> Scraped:
        """The scrape before the load, retried while its problem may pass (`Scraped.may_pass`):
        the last result; blocks the caller."""
        result = self.scrape_now()
        for _ in range(attempts - 1):
            if result.problem is None or not result.may_pass:
                break
            time.sleep(pause_s)
            result = self.scrape_now()
        return result

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            if self._url.startswith("https:"):
                # Imported here, as `scrape` imports the transport: see there.
                from assay.h1.pool import tls_context

                self._tls = tls_context(self._verify_tls)
        finally:
            self._ready.set()
        while not self._stop.is_set():
            try:
                async with asyncio.timeout(self.interval_s):
                    await self._stop.wait()
            except TimeoutError:
                await self._scrape_and_keep()

    async def _scrape_and_keep(self) -> Scraped:
        clean = self._clean
        result = await scrape(self._url, self._headers, self._timeout_s, self.url, self._tls, clean)
        if result.problem is not None:
            result = replace(result, problem=clean(result.problem))
        now = time.perf_counter_ns()
        with self._lock:
            if result.problem is None:
                self._samples.append(TimedSample(now, result.samples))
                if len(self._samples) > MAX_SAMPLES:
                    # Keep the first and the newest; thin the rest to every second sample.
                    self._samples[1:-1] = self._samples[1:-1:2]
            elif result.problem not in self._problems:
                if len(self._problems) < MAX_PROBLEMS:
                    self._problems.append(result.problem)
                elif len(self._problems) == MAX_PROBLEMS:
                    self._problems.append(f"GET {self.url}: more problems, not kept")
        return result
