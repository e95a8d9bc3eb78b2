"""Instructions per request, counted by callgrind: figures other work on the machine cannot move.

CPU time per request shifts with whatever else the machine runs; an instruction count does not.
Each client runs twice under `valgrind --tool=callgrind`, against one `assay mock` (16-token
streamed chat, concurrency 64), for a few requests and for many more; the difference over the
extra requests is its instructions per request, start-up and shut-down cancelling out. The
clients, all on asyncio's own loop in one process:

- `bare`: plain aiohttp, POST and read to EOF (`perf.resolve_vs_bare.bare_loop`);
- `limit`: the least work the promise needs (`perf.limit_loop`);
- `resolve`: `Backend.resolve` alone, transport and handler (`perf.resolve_vs_bare.resolve_loop`);
- `execute`: assay's per-request path, resolve, the default chat chain's verdict and the
  record's JSON line (`assay.worker.execute`, `assay.records.jsonl.record_line`);
- `read` (only with `--only read`): the answer's read alone, the mock's streamed answer
  (captured once) through the SSE parser, the accumulator and `finish`, no transport.

Instructions are not time (a cache miss costs many), so these are the work each client asks
for, not its speed; they say where assay stands between the bare and the limit loop.

    python -m perf.instructions [--requests 1000] [--base 200] [--only resolve]  # valgrind
    python -m perf.instructions --requests 1000 --base 100 --only read
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from perf.harness import running_mock

CLIENTS = ("bare", "limit", "resolve", "execute")
# Measured only when named: the suite's part measures `CLIENTS`.
EXTRA_CLIENTS = ("read",)
CONCURRENCY = 64
OUTPUT_TOKENS = 16
_TIMEOUT_S = 900.0
_TOTAL = re.compile(rb"^(?:summary|totals): (\d+)", re.MULTILINE)


def _execute_loop(url: str, requests: int) -> None:
    """resolve, the default chat chain's verdict, and each record's JSON line written."""
    from assay import GenerationResponse
    from assay.testing.bench import RequestRecord, record_line
    from perf.resolve_vs_bare import assay_loop

    lines = io.BytesIO()

    def write_line(record: RequestRecord[GenerationResponse]) -> None:
        lines.write(orjson.dumps(record_line(record)) + b"\n")

    asyncio.run(assay_loop(url, CONCURRENCY, requests, keep=write_line))


def _read_loop(url: str, requests: int) -> None:
    """The mock's streamed answer read `requests` times, as the free transport feeds it."""
    from assay import Endpoint
    from assay.testing.bench import SseParser, Transfer, handler_for
    from perf.free_transport import captured_answer
    from perf.resolve_vs_bare import chat_request

    answer = captured_answer(url)
    handler = handler_for(Endpoint.chat)
    request = chat_request(0)
    for _ in range(requests):
        accumulator = handler.open_accumulator(request, 0)
        parser = SseParser()
        accumulator.feed_all(parser.feed(answer), 1)
        accumulator.feed_all(parser.close(), 2)
        accumulator.finish(Transfer(send_ns=0, end_ns=3, first_byte_ns=1))


def run_client(client: str, url: str, requests: int) -> None:
    """Run one client for `requests` requests (what runs under callgrind)."""
    from perf.limit_loop import limit_loop_for
    from perf.resolve_vs_bare import bare_loop, resolve_loop

    match client:
        case "bare":
            asyncio.run(bare_loop(url, CONCURRENCY, requests))
        case "limit":
            asyncio.run(limit_loop_for(url, CONCURRENCY, _TIMEOUT_S, requests))
        case "resolve":
            asyncio.run(resolve_loop(url, CONCURRENCY, requests))
        case "execute":
            _execute_loop(url, requests)
        case "read":
            _read_loop(url, requests)
        case _:
            raise SystemExit(f"unknown client {client!r}: one of {', '.join(CLIENTS)}")


def count_instructions(client: str, url: str, requests: int) -> int:
    """Instructions callgrind counted for a whole run of `client` with `requests` requests."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "perf.instructions",
            "--client",
            client,
            "--url",
            url,
            "--requests",
            str(requests),
        ]
        completed = subprocess.run(command, capture_output=True, timeout=_TIMEOUT_S, check=False)
        if completed.returncode != 0:
            raise RuntimeError(
                f"{client} exited {completed.returncode}: {completed.stderr[-800:]!r}"
            )
        found = _TOTAL.search(out.read_bytes())
        if found is None:
            raise RuntimeError(f"no instruction total in callgrind's output for {client}")
        return int(found.group(1))


def measure(requests: int, base: int, clients: tuple[str, ...] = CLIENTS) -> dict[str, object]:
    """Instructions per request of `clients` (every one by default), and each over the bare
    and limit loops when both are measured."""
    if shutil.which("valgrind") is None:
        raise RuntimeError("valgrind is not installed (Debian: apt-get install valgrind)")
    per_request: dict[str, int] = {}
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        for client in clients:
            few = count_instructions(client, mock.url, base)
            many = count_instructions(client, mock.url, base + requests)
            per_request[client] = round((many - few) / requests)
    figures: dict[str, object] = {
        "requests": requests,
        "base_requests": base,
        "concurrency": CONCURRENCY,
        "output_tokens": OUTPUT_TOKENS,
        "instructions_per_request": per_request,
    }
    bare, limit = per_request.get("bare"), per_request.get("limit")
    if bare is not None and limit is not None:
        figures["over_bare"] = {name: round(n / bare, 2) for name, n in per_request.items()}
        figures["over_limit"] = {name: round(n / limit, 2) for name, n in per_request.items()}
    return figures


def main() -> None:
    """Measure every client (or, with --client, run one: the callgrind child)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--base", type=int, default=200)
    parser.add_argument(
        "--only",
        choices=CLIENTS + EXTRA_CLIENTS,
        action="append",
        help="measure this client (repeatable)",
    )
    parser.add_argument("--client", choices=CLIENTS + EXTRA_CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.client is not None:
        run_client(options.client, options.url, options.requests)
        return
    clients = tuple(options.only) if options.only else CLIENTS
    print(json.dumps(measure(options.requests, options.base, clients), indent=1))


if __name__ == "__main__":
    main()
