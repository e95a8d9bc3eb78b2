"""Assay's whole run with a transport that costs nothing: the floor of everything but HTTP.

The ceiling's targets compare assay's CPU per request with one process against the bare aiohttp
loop's. This asks how much of assay's figure is its own, whatever the transport: the same
`assay run --processes 1` the ceiling part times, in a process where the backend's exchange
sends nothing. Each request still builds its body, its id header and its deadline scope, and
its answer is the mock's own 16-token stream (captured once, byte for byte) fed through the
same SSE parser, accumulator and `finish` as a live answer, after two yields to the event loop
where a live exchange waits for the answer's head and its body. Judging, the record line, the
aggregation, the step runner and the report are the run's own.

What is left is a lower bound for assay with any HTTP/1.1 transport, however fast: a figure
above 1.5 times the bare loop's says the ceiling's targets cannot be met by the transport alone.
Part of it comes after the load: the report reads every record of records.jsonl back, in one
pass, for the peers' definitions and the page's latency samples. `after_load_cpu_us_per_request`
is that pass's cost per record, timed in process CPU over the long run's own records.jsonl, so
what the load itself costs per request is about the difference.

    python -m perf.free_transport [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
from returns.result import Result

from assay import Endpoint, GenerationRequest, GenerationResponse, UnusableResponse
from assay.testing.bench import DeadlineWatch, EndpointHandler, Exchange, SseParser, handler_for
from perf.ceiling import (
    SHORT_SECONDS,
    bare_loop_for,
    ceiling_arguments,
    loop_figures,
)
from perf.harness import OUTPUT_TOKENS, MockProcess, run_assay, running_mock
from perf.resolve_vs_bare import chat_request

_ANSWER_ENV = "ASSAY_PERF_FREE_ANSWER"


def captured_answer(url: str) -> bytes:
    """The mock's streamed answer to the bare loop's chat request, its body byte for byte."""
    body = orjson.dumps(handler_for(Endpoint.chat).build_body(chat_request(0)))
    request = urllib.request.Request(
        url + Endpoint.chat.path,
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # loopback mock only
        answer: bytes = response.read()
    return answer


def install(answer: bytes) -> None:
    """Replace the backend's exchange in this process by one that answers `answer` for free."""
    from assay.testing.bench import client

    class FreeBackend(client.Backend):
        async def _exchange(
            self,
            request: GenerationRequest,
            handler: EndpointHandler,
            body: bytes,
            content_type: str | None,
            exchange: Exchange,
            watch: DeadlineWatch,
        ) -> Result[GenerationResponse, UnusableResponse]:
            clock = self._clock
            exchange.send_ns = clock.now_ns()
            headers = self._request_headers(request, exchange)
            self._prepared.build(request.endpoint, body, headers, content_type)
            await asyncio.sleep(0)  # the answer's head
            exchange.first_byte_ns = clock.now_ns()
            exchange.http_status = 200
            accumulator = handler.open_accumulator(request, exchange.send_ns)
            exchange.accumulator = watch.accumulator = accumulator
            parser = SseParser()
            await asyncio.sleep(0)  # the answer's body, in one read as the mock's mostly comes
            received_ns = clock.now_ns()
            watch.saw_bytes(self._loop.time())
            accumulator.feed_all(parser.feed(answer), received_ns)
            if accumulator.ended:
                exchange.terminal_ns = received_ns
                return accumulator.finish(exchange.transfer(received_ns))
            end_ns = clock.now_ns()
            accumulator.feed_all(parser.close(), end_ns)
            return accumulator.finish(exchange.transfer(end_ns))

    client.Backend = FreeBackend  # type: ignore[misc]


def _launch() -> None:
    """The child's entry: install the free exchange, then the command line as `assay` runs it."""
    install(bytes.fromhex(os.environ[_ANSWER_ENV]))
    from assay.testing.bench import main

    sys.argv = ["assay", *sys.argv[1:]]
    main()


def _assay_free(mock: MockProcess, seconds: float, answer: bytes) -> dict[str, Any]:
    launcher = [sys.executable, "-c", "from perf.free_transport import _launch; _launch()"]
    env = {_ANSWER_ENV: answer.hex()}
    figures: dict[str, Any] = {}
    for name, length in (("long", seconds), ("short", SHORT_SECONDS)):
        with tempfile.TemporaryDirectory(prefix="assay-perf-free-") as folder:
            run = run_assay(
                ceiling_arguments(mock.url, length, processes=1),
                timeout_s=length + 120,
                env=env,
                launcher=launcher,
                keep_dir=Path(folder),
            )
            if name == "long":
                figures["after_load_cpu_us_per_request"] = after_load_us(Path(folder) / "run")
        outcomes = run.step["metrics"]["outcomes"]
        figures[name] = {
            "completed": outcomes["completed"],
            "errored": outcomes["errored"],
            "cpu_s": round(run.cpu_s, 3),
            "requests_per_s": round(run.step["metrics"]["throughput"]["usable_requests_per_s"], 1),
        }
    extra = figures["long"]["completed"] - figures["short"]["completed"]
    extra_cpu = figures["long"]["cpu_s"] - figures["short"]["cpu_s"]
    figures["marginal_client_cpu_us_per_request"] = (
        round(extra_cpu / extra * 1e6, 1) if extra > 0 else None
    )
    return figures


def after_load_us(run_dir: Path) -> float | None:
    """Process CPU per record of what a run does after its load that grows with its records:
    reading records.jsonl back, in one pass, for the peers' definitions and for the page's
    latency samples, as the run does."""
    from assay.testing.bench import load_report, read_back

    records = run_dir / "records.jsonl"
    count = sum(1 for _ in records.open("rb"))
    if count == 0:
        return None
    report = load_report(run_dir)
    started = time.process_time_ns()
    read_back(records, report)
    return round((time.process_time_ns() - started) / count / 1000, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.free_transport")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args(argv)
    rounds: list[dict[str, Any]] = []
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        answer = captured_answer(mock.url)
        for _ in range(options.rounds):
            bare = loop_figures(mock, max(1.0, options.seconds / 2), loop_for=bare_loop_for)
            free = _assay_free(mock, options.seconds, answer)
            rounds.append({"bare": bare, "assay_free_transport": free})
    print(json.dumps({"answer_bytes": len(answer), "rounds": rounds}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
