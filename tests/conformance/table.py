"""Print the server x endpoint x stream table: what assay made of clean and of faulty traffic
from each third-party server (completed, errored by diagnostic code).

Usage: python -m tests.conformance.table [--requests N] [--servers llmock,guidellm,llama-cpp,vllm]

Requests go through assay's library pipeline (its request source, backend, default validator
chain and worker), so that `logit_bias` can be set until the CLI has `--extra-body`. llama.cpp's
rows send UUID request ids (it answers 400 to others); one row shows assay's own ids.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pydantic import JsonValue

from assay.core import Endpoint
from tests.conformance import llmock as llmock_server
from tests.conformance.drive import codes, requests_for, send
from tests.conformance.guidellm import MODEL as GUIDELLM_MODEL
from tests.conformance.guidellm import guidellm_mock
from tests.conformance.llama_cpp import EOS_ID, llama_server
from tests.conformance.servers import MODEL_NAME

FORCE_EOS: dict[str, JsonValue] = {"logit_bias": {str(EOS_ID): 100}}
STREAMS = (True, False)


def _cell(counted: dict[str, int]) -> tuple[str, str]:
    completed = str(counted.get("completed", 0))
    errored = ", ".join(f"{code} {n}" for code, n in sorted(counted.items()) if code != "completed")
    return completed, errored or "-"


class Table:
    """Rows of (server, endpoint, stream, traffic, completed, errored by code)."""

    def __init__(self, requests: int) -> None:
        self.requests = requests
        self.rows: list[tuple[str, ...]] = []

    def add(
        self,
        server: str,
        url: str,
        endpoint: Endpoint,
        stream: bool,
        traffic: str,
        *,
        model: str,
        concurrency: int = 1,
        extra_body: dict[str, JsonValue] | None = None,
        uuid_ids: bool = False,
        output_tokens: int = 16,
    ) -> None:
        requests = requests_for(
            endpoint,
            model=model,
            count=self.requests,
            stream=stream,
            output_tokens=output_tokens,
            extra_body=extra_body,
            uuid_ids=uuid_ids,
        )
        counted = codes(send(url, requests, concurrency=concurrency))
        row = (server, endpoint.value, "yes" if stream else "no", traffic, *_cell(counted))
        self.rows.append(row)
        print(" | ".join(row), file=sys.stderr, flush=True)

    def render(self) -> str:
        head = ("server", "endpoint", "stream", "traffic", "completed", "errored by code")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def _llmock(table: Table, logs: Path) -> None:
    endpoints = (Endpoint.chat, Endpoint.responses)
    model = llmock_server.MODEL
    with llmock_server.llmock(logs) as clean:
        for endpoint in endpoints:
            for stream in STREAMS:
                table.add(
                    "llmock", clean.url, endpoint, stream, "clean", model=model, output_tokens=64
                )
                llmock_server.script(clean, {"type": "reply", "text": "", "times": table.requests})
                table.add(
                    "llmock",
                    clean.url,
                    endpoint,
                    stream,
                    "empty reply",
                    model=model,
                    output_tokens=64,
                )
        table.add(
            "llmock", clean.url, Endpoint.completions, True, "clean (no such route)", model=model
        )
    flags = ["--error-rate", "500=0.1", "--error-rate", "429=0.1"]
    for fault in ("truncate=0.1", "disconnect=0.1", "malformed=0.1"):
        flags += ["--stream-fault", fault]
    with llmock_server.llmock(logs, *flags) as faulty:
        for endpoint in endpoints:
            for stream in STREAMS:
                traffic = "errors 20 %" + (" + stream faults 30 %" if stream else "")
                table.add(
                    "llmock", faulty.url, endpoint, stream, traffic, model=model, output_tokens=64
                )


def _guidellm(table: Table, logs: Path) -> None:
    endpoints = (Endpoint.chat, Endpoint.completions, Endpoint.responses)
    with guidellm_mock(logs) as clean:
        for endpoint in endpoints:
            for stream in STREAMS:
                table.add("guidellm", clean.url, endpoint, stream, "clean", model=GUIDELLM_MODEL)
    with guidellm_mock(logs, "--output-tokens", "0") as silent:
        for endpoint in endpoints:
            for stream in STREAMS:
                table.add(
                    "guidellm",
                    silent.url,
                    endpoint,
                    stream,
                    "--output-tokens 0",
                    model=GUIDELLM_MODEL,
                )
    with guidellm_mock(logs, "--fail-after-requests", str(table.requests // 2)) as failing:
        table.add(
            "guidellm",
            failing.url,
            Endpoint.chat,
            True,
            "--fail-after-requests N/2",
            model=GUIDELLM_MODEL,
        )


def _llama_cpp(table: Table, logs: Path) -> None:
    endpoints = (Endpoint.chat, Endpoint.completions)
    with llama_server(logs, interrupt_requests=False) as patient:
        table.add(
            "llama-cpp", patient.url, Endpoint.chat, True, "clean, assay's ids", model=MODEL_NAME
        )
        for endpoint in endpoints:
            for stream in STREAMS:
                table.add(
                    "llama-cpp",
                    patient.url,
                    endpoint,
                    stream,
                    "clean",
                    model=MODEL_NAME,
                    uuid_ids=True,
                )
                table.add(
                    "llama-cpp",
                    patient.url,
                    endpoint,
                    stream,
                    "logit_bias EOS +100",
                    model=MODEL_NAME,
                    extra_body=FORCE_EOS,
                    uuid_ids=True,
                )
    with llama_server(logs, interrupt_requests=True) as cutting:
        for endpoint in endpoints:
            table.add(
                "llama-cpp",
                cutting.url,
                endpoint,
                True,
                "interrupt_requests, 4 at once",
                model=MODEL_NAME,
                concurrency=4,
                uuid_ids=True,
                output_tokens=64,
            )


def _vllm(table: Table, logs: Path) -> None:
    from tests.conformance.vllm import vllm_server

    with vllm_server(logs) as server:
        for endpoint in (Endpoint.chat, Endpoint.completions, Endpoint.responses):
            for stream in STREAMS:
                table.add(
                    "vllm", server.url, endpoint, stream, "clean", model=MODEL_NAME, concurrency=4
                )
                table.add(
                    "vllm",
                    server.url,
                    endpoint,
                    stream,
                    "logit_bias EOS +100",
                    model=MODEL_NAME,
                    concurrency=4,
                    extra_body=FORCE_EOS,
                )


@contextlib.contextmanager
def _no_pytest_fail() -> Iterator[None]:
    # The server helpers report a missing install with pytest.fail; outside pytest that is an
    # exception whose message says how to install.
    try:
        yield
    except BaseException as error:
        if type(error).__name__ == "Failed":
            raise SystemExit(f"error: {error}") from None
        raise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=20, help="requests per row [20]")
    parser.add_argument(
        "--servers",
        default="llmock,guidellm,llama-cpp",
        help="comma-separated, in order [llmock,guidellm,llama-cpp]; vllm needs "
        "`scripts/install-servers vllm`",
    )
    args = parser.parse_args()
    runners = {"llmock": _llmock, "guidellm": _guidellm, "llama-cpp": _llama_cpp, "vllm": _vllm}
    names = [name.strip() for name in args.servers.split(",") if name.strip()]
    unknown = [name for name in names if name not in runners]
    if unknown:
        parser.error(f"unknown server(s) {', '.join(unknown)}: choose from {', '.join(runners)}")
    table = Table(args.requests)
    with tempfile.TemporaryDirectory() as logs, _no_pytest_fail():
        for name in names:
            runners[name](table, Path(logs))
    print(table.render())


if __name__ == "__main__":
    main()
