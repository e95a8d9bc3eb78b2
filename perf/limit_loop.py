"""The limit loop: the least work assay's promise needs per streamed request, and nothing more.

Beside the bare loop (POST, read to EOF), it does what no honest count can skip: a body with a
request id of its own, a timestamp per read, each SSE event's JSON decoded once, content tokens
counted, the stream's end checked (a `finish_reason` and `[DONE]`), and one JSON record line
written per request. assay's CPU per request over this loop's is how far assay is from the
limit; over the bare loop's, how far from doing nothing.

    python -m perf.limit_loop [--seconds 5] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import json
import time

import aiohttp
import orjson

from assay import Endpoint
from assay.testing.bench import handler_for
from perf.harness import (
    CONCURRENCY,
    OUTPUT_TOKENS,
    own_cpu_seconds,
    run_on_fast_loop,
    running_mock,
)
from perf.resolve_vs_bare import chat_request


class Tally:
    """What the loop found: usable answers, unusable ones, and the records written."""

    def __init__(self) -> None:
        self.usable = 0
        self.unusable = 0
        self.records = io.BytesIO()


def judge_stream(reads: list[tuple[int, bytes]]) -> tuple[bool, int, int | None]:
    """(usable, content tokens, first-token time) of a chat stream given as timed reads.

    Events are split on blank lines across reads; each `data:` payload is decoded once. A
    stream is usable when it counted a token, gave a finish_reason and ended with `[DONE]`.

    >>> chunk = b'data: {"choices":[{"delta":{"content":"a"},"finish_reason":null}]}\\n\\n'
    >>> end = b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\\n\\ndata: [DONE]\\n\\n'
    >>> judge_stream([(5, chunk), (9, end)])
    (True, 1, 5)
    >>> judge_stream([(5, chunk)])
    (False, 1, 5)
    """
    tokens = 0
    first_token_ns: int | None = None
    finished = done = False
    pending = b""
    for read_ns, data in reads:
        events = (pending + data).split(b"\n\n")
        pending = events.pop()
        for event in events:
            payload = event.removeprefix(b"data: ")
            if payload == b"[DONE]":
                done = True
                continue
            choices = orjson.loads(payload)["choices"]
            if not choices:  # the usage chunk
                continue
            choice = choices[0]
            if choice["delta"].get("content"):
                tokens += 1
                if first_token_ns is None:
                    first_token_ns = read_ns
            if choice.get("finish_reason"):
                finished = True
    return tokens > 0 and finished and done, tokens, first_token_ns


async def limit_loop_for(
    url: str, concurrency: int, seconds: float, requests: int | None = None
) -> tuple[float, Tally]:
    """The limit loop for about `seconds` (or until `requests` were sent) at `concurrency`
    streams: (elapsed s, its tally)."""
    target = f"{url}/v1/chat/completions"
    build_body = handler_for(Endpoint.chat).build_body
    tally = Tally()
    ids = itertools.count()
    clock = time.perf_counter_ns
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            while time.perf_counter() < deadline:
                index = next(ids)
                if requests is not None and index >= requests:
                    return
                body = orjson.dumps(build_body(chat_request(index)))
                request_id = f"limit-{index}"
                sent_ns = clock()
                reads: list[tuple[int, bytes]] = []
                async with session.post(
                    target, data=body, headers={"X-Request-Id": request_id}
                ) as response:
                    content = response.content
                    while data := await content.readany():
                        reads.append((clock(), data))
                    status = response.status
                verdict = judge_stream(reads) if status == 200 else (False, 0, None)
                usable, tokens, first_ns = verdict
                if usable:
                    tally.usable += 1
                else:
                    tally.unusable += 1
                line = {
                    "id": request_id,
                    "status": "completed" if usable else "errored",
                    "sent_ns": sent_ns,
                    "first_token_ns": first_ns,
                    "end_ns": reads[-1][0] if reads else clock(),
                    "output_tokens": tokens,
                }
                tally.records.write(orjson.dumps(line) + b"\n")

        started = time.perf_counter()
        deadline = started + seconds
        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
        elapsed = time.perf_counter() - started
    return elapsed, tally


def main() -> None:
    """Run the limit loop against a mock of its own; print its figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    options = parser.parse_args()
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        cpu_before = own_cpu_seconds()
        elapsed, tally = run_on_fast_loop(
            limit_loop_for(mock.url, options.concurrency, options.seconds)
        )
        cpu = own_cpu_seconds() - cpu_before
    done = tally.usable + tally.unusable
    print(
        json.dumps(
            {
                "requests_per_s": round(tally.usable / elapsed, 1),
                "usable": tally.usable,
                "unusable": tally.unusable,
                "client_cpu_us_per_request": round(cpu / max(done, 1) * 1e6, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
