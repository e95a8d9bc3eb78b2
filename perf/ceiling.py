"""Client ceiling: `assay run --profile throughput` next to a bare aiohttp loop and the limit
loop (perf/limit_loop.py: the least work the promise needs), same mock.

The bare loop (POST, read the stream to EOF, nothing else) runs in this process on the same
event loop assay's load processes use, before and after the assay runs, so drifting load on a
shared machine shows as a gap between the two. The mock's own ceiling is estimated from its CPU
time per request: 1 / (CPU seconds per request) is what it serves with a whole core to itself.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Coroutine
from typing import Any

import aiohttp
import orjson

from assay import Endpoint
from assay.testing.bench import handler_for
from perf.harness import (
    CONCURRENCY,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    MockProcess,
    own_cpu_seconds,
    run_assay,
    run_on_fast_loop,
    running_mock,
)
from perf.limit_loop import limit_loop_for
from perf.resolve_vs_bare import chat_request

SHORT_SECONDS = 1.0


async def bare_loop_for(url: str, concurrency: int, seconds: float) -> tuple[float, int, int]:
    """Plain aiohttp for about `seconds`: (elapsed s, 200 responses read to EOF, other statuses).

    Workers stop taking new requests at the deadline and finish the one they have, so the
    elapsed time includes the drain, as a time-bounded assay step's does.
    """
    target = f"{url}/v1/chat/completions"
    body = orjson.dumps(handler_for(Endpoint.chat).build_body(chat_request(0)))
    completed = 0
    failed = 0
    ids = itertools.count()
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            nonlocal completed, failed
            while time.perf_counter() < deadline:
                # A request id per request, as assay sends one.
                request_headers = {"X-Request-Id": f"bare-{next(ids)}"}
                async with session.post(target, data=body, headers=request_headers) as response:
                    content = response.content
                    while await content.readany():
                        pass
                    if response.status == 200:
                        completed += 1
                    else:
                        failed += 1

        started = time.perf_counter()
        deadline = started + seconds
        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
        elapsed = time.perf_counter() - started
    return elapsed, completed, failed


LoopFor = Callable[[str, int, float], Coroutine[Any, Any, tuple[float, int, int]]]


def loop_figures(
    mock: MockProcess, seconds: float, loop_for: LoopFor = bare_loop_for
) -> dict[str, float]:
    """Served req/s and the client's and the mock's CPU per request of one plain loop's run
    (`loop_for(url, concurrency, seconds)` -> elapsed s, 200 answers, anything else)."""
    cpu_before = mock.cpu_seconds()
    client_before = own_cpu_seconds()
    elapsed, completed, failed = run_on_fast_loop(loop_for(mock.url, CONCURRENCY, seconds))
    client_cpu = own_cpu_seconds() - client_before
    mock_cpu = mock.cpu_seconds() - cpu_before
    return {
        "requests_per_s": round(completed / elapsed, 1),
        "completed": completed,
        "non_200": failed,
        "seconds": round(elapsed, 3),
        "mock_cpu_us_per_request": round(mock_cpu / max(completed, 1) * 1e6, 1),
        "mock_cpu_share": round(mock_cpu / elapsed, 3),
        "client_cpu_us_per_request": round(client_cpu / max(completed, 1) * 1e6, 1),
    }


def _limit(mock: MockProcess, seconds: float) -> dict[str, float]:
    client_before = own_cpu_seconds()
    elapsed, tally = run_on_fast_loop(limit_loop_for(mock.url, CONCURRENCY, seconds))
    client_cpu = own_cpu_seconds() - client_before
    done = tally.usable + tally.unusable
    return {
        "requests_per_s": round(tally.usable / elapsed, 1),
        "usable": tally.usable,
        "unusable": tally.unusable,
        "client_cpu_us_per_request": round(client_cpu / max(done, 1) * 1e6, 1),
    }


def ceiling_arguments(url: str, seconds: float, processes: int | None) -> list[str]:
    """The `assay run` arguments of the ceiling's runs: throughput, 16-token streamed chat."""
    arguments = [
        "--profile",
        "throughput",
        "--concurrency",
        str(CONCURRENCY),
        "--target",
        url,
        "--endpoint",
        "chat",
        "--output-tokens",
        str(OUTPUT_TOKENS),
        "--prompt-tokens",
        str(PROMPT_TOKENS),
        "--max-seconds",
        f"{seconds:g}",
    ]
    if processes is not None:
        arguments += ["--processes", str(processes)]
    return arguments


def _assay(mock: MockProcess, seconds: float, processes: int | None) -> dict[str, Any]:
    arguments = ceiling_arguments(mock.url, seconds, processes)
    cpu_before = mock.cpu_seconds()
    run = run_assay(arguments, timeout_s=seconds + 120)
    mock_cpu = mock.cpu_seconds() - cpu_before
    metrics = run.step["metrics"]
    outcomes = metrics["outcomes"]
    return {
        "command": "assay run " + " ".join(arguments).replace(mock.url, "URL"),
        "processes": run.processes,
        "exit_code": run.returncode,
        "usable_requests_per_s": round(metrics["throughput"]["usable_requests_per_s"], 1),
        "attempted_requests_per_s": round(metrics["throughput"]["attempted_requests_per_s"], 1),
        "dispatched": outcomes["dispatched"],
        "completed": outcomes["completed"],
        "errored": outcomes["errored"],
        "step_duration_s": round(metrics["throughput"]["duration_s"], 3),
        "wall_s": round(run.wall_s, 3),
        "mock_cpu_us_per_request": round(mock_cpu / max(outcomes["completed"], 1) * 1e6, 1),
        # Start-up and shutdown included: the whole tree's CPU over the requests it completed.
        "client_cpu_s": round(run.cpu_s, 3),
        "client_cpu_us_per_request": round(run.cpu_s / max(outcomes["completed"], 1) * 1e6, 1),
    }


def measure(seconds: float = 10.0) -> dict[str, Any]:
    """Assay runs (default processes, 1, 2), each between two bare-loop runs, on one mock.

    Load on a shared machine drifts within a minute, so each assay run is compared with the
    mean of the bare runs just before and just after it, not with one bare figure for all.
    """
    bare_seconds = max(1.0, seconds / 2)
    configurations = {"assay_default": None, "assay_p1": 1, "assay_p2": 2}
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        run_on_fast_loop(bare_loop_for(mock.url, CONCURRENCY, 1.0))  # warm the mock up
        bares = [loop_figures(mock, bare_seconds)]
        limits = [_limit(mock, bare_seconds)]
        runs: dict[str, dict[str, Any]] = {}
        for name, processes in configurations.items():
            runs[name] = _assay(mock, seconds, processes)
            bares.append(loop_figures(mock, bare_seconds))
            short = _assay(mock, SHORT_SECONDS, processes)
            # The difference of a long and a short run cancels start-up and shutdown: what is
            # left is the client's CPU per request in the steady state.
            extra_requests = runs[name]["completed"] - short["completed"]
            extra_cpu = runs[name]["client_cpu_s"] - short["client_cpu_s"]
            runs[name]["marginal_client_cpu_us_per_request"] = (
                round(extra_cpu / extra_requests * 1e6, 1) if extra_requests > 0 else None
            )
            runs[name]["short_run_client_cpu_s"] = short["client_cpu_s"]
        limits.append(_limit(mock, bare_seconds))
    for index, run in enumerate(runs.values()):
        around = (bares[index]["requests_per_s"] + bares[index + 1]["requests_per_s"]) / 2
        run["bare_around_requests_per_s"] = round(around, 1)
        run["over_bare"] = round(run["usable_requests_per_s"] / around, 3)
    rates = [bare["requests_per_s"] for bare in bares]
    mock_us = sorted(bare["mock_cpu_us_per_request"] for bare in bares)
    client_us = [bare["client_cpu_us_per_request"] for bare in bares]
    best = max(runs.values(), key=lambda run: float(run["usable_requests_per_s"]))
    bare_cpu = sum(client_us) / len(client_us)
    limit_cpu = sum(limit["client_cpu_us_per_request"] for limit in limits) / len(limits)
    p1_cpu = runs["assay_p1"]["marginal_client_cpu_us_per_request"]
    return {
        "concurrency": CONCURRENCY,
        "output_tokens": OUTPUT_TOKENS,
        "seconds_per_assay_run": seconds,
        "seconds_per_bare_run": bare_seconds,
        "bare_requests_per_s": round(sum(rates) / len(rates), 1),
        "bare_runs": bares,
        "bare_client_cpu_us_per_request": round(sum(client_us) / len(client_us), 1),
        "mock_ceiling_requests_per_s": round(1e6 / mock_us[len(mock_us) // 2], 1),
        **runs,
        "assay_best_requests_per_s": best["usable_requests_per_s"],
        "assay_best_over_bare": best["over_bare"],
        "assay_best_processes": best["processes"],
        # The CPU target: assay's steady-state CPU per request with one process over
        # the bare loop's, both measured against the same mock in this part.
        "assay_p1_cpu_over_bare": round(p1_cpu / bare_cpu, 3) if p1_cpu and bare_cpu else None,
        # The least work the promise needs (perf/limit_loop.py), before and after the runs.
        "limit_runs": limits,
        "limit_client_cpu_us_per_request": round(limit_cpu, 1),
        "assay_p1_cpu_over_limit": (round(p1_cpu / limit_cpu, 3) if p1_cpu and limit_cpu else None),
    }
