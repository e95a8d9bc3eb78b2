"""Which way of waiting wakes the dispatcher on time, and what does it cost?

The loop's timer (uvloop) rounds a delay to whole milliseconds, which sets a ~1 ms floor under
the dispatch lag at low rates. Three other ways are measured beside it:

- `waker thread`: a thread sleeping on a condition wakes within tens of microseconds and hands
  the wake-up to the loop with `call_soon_threadsafe`, but it needs the GIL to do so;
- `last-ms spin`: the loop's timer until a millisecond before the target, then yielding to the
  loop (`sleep(0)`) until the target passes: precise while the loop is idle, paid for in CPU;
- `timerfd`: the product's `assay.core.timer_fd.TimerFdWaiter`, a Linux timerfd armed at the
  target (absolute `CLOCK_MONOTONIC`) and watched by the loop (`add_reader`): the kernel's
  high-resolution timer makes it readable and `epoll` returns at once, with no thread and no
  spin. It won on lag at no more CPU than the loop's timer, and open-loop steps now pace on it.

Each is measured on an idle loop and on a loop whose callbacks run `--busy-us` microseconds each
(as a loop serving responses does), alternating, and with `--hogs N` processes spinning on the
machine's cores meanwhile (a busy machine). The CPU this process used per wake-up is given
beside the lag.

Run with `python -m perf.timer_waker [--busy-us 50] [--requests 400] [--hogs 0] [--rounds 2]
[--ways "loop timer" timerfd ...]`; prints one JSON object of lag percentiles in milliseconds
(and CPU µs per wake-up) per way and loop load, one entry per round.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import multiprocessing
import sys
import threading
import time
from typing import Literal

import orjson
import uvloop

from assay.testing.bench import TimerFdWaiter

Way = Literal["loop timer", "waker thread", "last-ms spin", "timerfd"]
WAYS: tuple[Way, ...] = ("loop timer", "waker thread", "last-ms spin", "timerfd")
SPIN_NS = 1_000_000
PERIOD_NS = 5_000_000  # 200 requests/s


class WakerThread:
    """Wakes futures at nanosecond deadlines from one thread (the candidate being measured)."""

    def __init__(self) -> None:
        self._due: list[tuple[int, int, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def wake_at(self, deadline_ns: int) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._changed:
            heapq.heappush(self._due, (deadline_ns, next(self._order), loop, future))
            self._changed.notify()
        return future

    def _run(self) -> None:
        with self._changed:
            while True:
                if not self._due:
                    self._changed.wait()
                    continue
                delay_ns = self._due[0][0] - time.perf_counter_ns()
                if delay_ns > 0:
                    self._changed.wait(delay_ns / 1e9)
                    continue
                _, _, loop, future = heapq.heappop(self._due)
                loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _busy_callbacks(busy_ns: int) -> None:
    while True:
        started = time.perf_counter_ns()
        while time.perf_counter_ns() - started < busy_ns:
            pass
        await asyncio.sleep(0)


async def lags_ms(way: Way, waker: WakerThread, requests: int, busy_us: int) -> list[float]:
    """Each wake-up's lateness after its target, for `requests` targets 5 ms apart."""
    noise = asyncio.create_task(_busy_callbacks(busy_us * 1000)) if busy_us else None
    timer_fd = TimerFdWaiter()
    start_ns = time.perf_counter_ns() + 10_000_000
    lags: list[float] = []
    for index in range(requests):
        target_ns = start_ns + index * PERIOD_NS
        while (now_ns := time.perf_counter_ns()) < target_ns:
            if way == "loop timer":
                await asyncio.sleep((target_ns - now_ns) / 1e9)
            elif way == "last-ms spin":
                if target_ns - now_ns > SPIN_NS:
                    await asyncio.sleep((target_ns - now_ns - SPIN_NS) / 1e9)
                else:
                    await asyncio.sleep(0)
            elif way == "timerfd":
                await timer_fd.sleep_until(target_ns)
            else:
                await waker.wake_at(target_ns)
        lags.append((time.perf_counter_ns() - target_ns) / 1e6)
    timer_fd.close()
    if noise is not None:
        noise.cancel()
    return sorted(lags)


def _percentiles(lags: list[float], cpu_s: float) -> dict[str, float]:
    last = len(lags) - 1
    return {f"p{q}": round(lags[min(last, int(len(lags) * q / 100))], 3) for q in (50, 90, 99)} | {
        "max": round(lags[-1], 3),
        "cpu_us_per_wakeup": round(cpu_s / len(lags) * 1e6, 1),
    }


def _hog() -> None:
    while True:
        pass


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.timer_waker")
    parser.add_argument("--busy-us", type=int, default=50)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--hogs", type=int, default=0)
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args(argv)
    waker = WakerThread()
    results: dict[str, list[dict[str, float]]] = {}
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(options.hogs)]
    for hog in hogs:
        hog.start()
    ways: list[Way] = options.ways
    try:
        for busy_us in (0, options.busy_us):
            for way in ways * options.rounds:
                cpu_s = time.process_time()
                lags = uvloop.run(lags_ms(way, waker, options.requests, busy_us))
                cpu_s = time.process_time() - cpu_s
                results.setdefault(f"{way}, callbacks {busy_us} us", []).append(
                    _percentiles(lags, cpu_s)
                )
    finally:
        for hog in hogs:
            hog.kill()
    sys.stdout.write(orjson.dumps(results).decode() + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
