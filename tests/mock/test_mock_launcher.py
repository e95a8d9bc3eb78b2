"""The mock in child processes: one port shared by workers, readiness, and a clean stop."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request

import orjson

from assay.mock import MockConfig, start_mock_processes

SERVE_SCRIPT = """
from assay.mock import MockConfig, serve
serve(MockConfig(), port=0, workers=2, on_ready=lambda url: print(url, flush=True))
"""


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body


def test_worker_processes_share_one_port_and_stop_on_exit() -> None:
    with start_mock_processes(MockConfig(), workers=2) as url:
        assert url.startswith("http://127.0.0.1:")
        models = orjson.loads(fetch(url + "/v1/models"))
        assert models["data"][0]["id"] == "assay-mock"
        request = urllib.request.Request(
            url + "/v1/completions",
            data=orjson.dumps({"prompt": "hello there", "max_tokens": 3}),
            headers={"Content-Type": "application/json"},
        )
        answer = orjson.loads(fetch_request(request))
        assert answer["usage"]["completion_tokens"] == 3
    try:
        fetch(url + "/health")
    except OSError:
        pass  # nothing listens any more
    else:
        raise AssertionError("the mock still answers after its processes were stopped")


def fetch_request(request: urllib.request.Request) -> bytes:
    with urllib.request.urlopen(request, timeout=10) as response:
        body: bytes = response.read()
        return body


def test_serve_with_workers_stops_cleanly_on_sigterm() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", SERVE_SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), process.stderr
            assert fetch(url + "/health") == b""
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0
            assert process.stderr is not None
            assert "Traceback" not in process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
