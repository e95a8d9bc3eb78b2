"""Requests/s of assay's full path (resolve + default validation + worker) next to a bare loop.

The clients run in this process, one after the other, against the same server in the same run:
the bare loop is plain aiohttp (POST, read the stream to EOF, nothing else), so the ratio is the
price of everything assay does per request. `resolve_only` (backend and handler, no validation,
no record) shows the transport's own share of that price. By default the mock server runs in a
separate process, so client and server do not share an event loop.

    python -m perf.resolve_vs_bare [--concurrency 64] [--requests 3000] [--rounds 3]
        [--url URL] [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager

import aiohttp
import orjson
from returns.pipeline import is_successful

from assay import Completed, Endpoint, GenerationRequest, GenerationResponse, default_chain
from assay.testing.bench import (
    BackendSettings,
    MonotonicClock,
    RequestRecord,
    execute,
    handler_for,
    open_backend,
)

OUTPUT_TOKENS = 16
WARMUP_REQUESTS = 200


def chat_request(index: int) -> GenerationRequest:
    """One streamed chat request asking for exactly `OUTPUT_TOKENS` tokens."""
    return GenerationRequest(
        request_id=f"bench-{index}",
        endpoint=Endpoint.chat,
        model="mock-model",
        messages=({"role": "user", "content": "Say something about rivers and the sea."},),
        max_output_tokens=OUTPUT_TOKENS,
        ignore_eos=True,
        stream=True,
    )


async def run_workers(
    concurrency: int, requests: int, one: Callable[[int], Awaitable[None]]
) -> float:
    """Run `requests` calls of `one` over `concurrency` workers; return the elapsed seconds."""
    counter = itertools.count()

    async def worker() -> None:
        while (index := next(counter)) < requests:
            await one(index)

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
    return time.perf_counter() - started


async def bare_loop(url: str, concurrency: int, requests: int) -> tuple[float, int]:
    """Plain aiohttp: POST the same body, read the stream to EOF. Returns (seconds, non-200s)."""
    target = f"{url}/v1/chat/completions"
    body = orjson.dumps(handler_for(Endpoint.chat).build_body(chat_request(0)))
    failures = 0
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def one(index: int) -> None:
            nonlocal failures
            request_headers = {"X-Request-Id": f"bare-{index}"}
            async with session.post(target, data=body, headers=request_headers) as response:
                content = response.content
                while await content.readany():
                    pass
                if response.status != 200:
                    failures += 1

        seconds = await run_workers(concurrency, requests, one)
    return seconds, failures


async def assay_loop(
    url: str,
    concurrency: int,
    requests: int,
    keep: Callable[[RequestRecord[GenerationResponse]], None] | None = None,
) -> tuple[float, int]:
    """resolve + the default chat chain + the worker, each record also given to `keep` when
    set. Returns (seconds, not completed)."""
    clock = MonotonicClock()
    settings = BackendSettings(base_url=url, max_connections=concurrency)
    validate = default_chain(Endpoint.chat)
    requests_made = [chat_request(i) for i in range(requests)]
    not_completed = 0

    def sink(record: RequestRecord[GenerationResponse]) -> None:
        nonlocal not_completed
        if not isinstance(record.outcome, Completed):
            not_completed += 1
        if keep is not None:
            keep(record)

    async with open_backend(settings, clock) as backend:

        async def one(index: int) -> None:
            request = requests_made[index]
            await execute(
                request,
                request_id=request.request_id,
                resolve=backend.resolve,
                validate=validate,
                clock=clock,
                targeted_start_ns=clock.now_ns(),
                sink=sink,
            )

        seconds = await run_workers(concurrency, requests, one)
    return seconds, not_completed


async def resolve_loop(url: str, concurrency: int, requests: int) -> tuple[float, int]:
    """`Backend.resolve` alone: handler included, no validation, no record."""
    clock = MonotonicClock()
    settings = BackendSettings(base_url=url, max_connections=concurrency)
    requests_made = [chat_request(i) for i in range(requests)]
    failures = 0
    async with open_backend(settings, clock) as backend:

        async def one(index: int) -> None:
            nonlocal failures
            if not is_successful(await backend.resolve(requests_made[index])):
                failures += 1

        seconds = await run_workers(concurrency, requests, one)
    return seconds, failures


@contextmanager
def mock_in_another_process() -> Iterator[str]:
    """Start the project's mock server (zero latency) in its own process; yield its URL."""
    from assay.testing.bench import MockConfig, start_mock_processes

    with start_mock_processes(MockConfig(), workers=1) as url:
        yield url


async def measure(url: str, concurrency: int, requests: int, rounds: int) -> dict[str, object]:
    """Interleave the three loops for `rounds` rounds (the machine is shared, so load drifts) and
    report each one's median requests/s."""
    loops = {"bare": bare_loop, "assay": assay_loop, "resolve_only": resolve_loop}
    for loop in loops.values():
        await loop(url, concurrency, WARMUP_REQUESTS)
    rates: dict[str, list[float]] = {name: [] for name in loops}
    failures = dict.fromkeys(loops, 0)
    for _ in range(rounds):
        for name, loop in loops.items():
            seconds, failed = await loop(url, concurrency, requests)
            rates[name].append(requests / seconds)
            failures[name] += failed
    median = {name: statistics.median(values) for name, values in rates.items()}
    return {
        "concurrency": concurrency,
        "requests_per_round": requests,
        "rounds": rounds,
        "output_tokens": OUTPUT_TOKENS,
        "bare_requests_per_s": round(median["bare"], 1),
        "assay_requests_per_s": round(median["assay"], 1),
        "assay_over_bare": round(median["assay"] / median["bare"], 3),
        "resolve_only_requests_per_s": round(median["resolve_only"], 1),
        "resolve_only_over_bare": round(median["resolve_only"] / median["bare"], 3),
        "per_round_requests_per_s": {
            name: [round(rate, 1) for rate in values] for name, values in rates.items()
        },
        "bare_non_200": failures["bare"],
        "assay_not_completed": failures["assay"],
        "resolve_only_failures": failures["resolve_only"],
        "event_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
    }


def run(
    measurement: Coroutine[None, None, dict[str, object]], on_uvloop: bool
) -> dict[str, object]:
    if on_uvloop:
        import uvloop

        return uvloop.run(measurement)
    return asyncio.run(measurement)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=3000, help="per loop and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", default=None, help="an already running server (default: mock)")
    parser.add_argument("--uvloop", action="store_true", help="run the clients on uvloop")
    args = parser.parse_args(argv)
    if args.url is not None:
        result = run(
            measure(args.url.rstrip("/"), args.concurrency, args.requests, args.rounds), args.uvloop
        )
    else:
        with mock_in_another_process() as url:
            result = run(measure(url, args.concurrency, args.requests, args.rounds), args.uvloop)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
