"""llmock (PyPI `llmock`) on loopback: its control API scripts faults and its journal records
what it served, so each assay outcome can be checked against the server's own account."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conformance.servers import RunningServer, require_installed, serve

MODEL = "gpt-4o"
STARTUP_S = 60.0


@contextlib.contextmanager
def llmock(log_dir: Path, *flags: str) -> Iterator[RunningServer]:
    """`llmock serve` with `flags` on a free loopback port."""
    bin_dir = require_installed("llmock")
    with serve(
        "llmock",
        lambda port: [
            str(bin_dir / "llmock"),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            *flags,
        ],
        ready_path="/health",
        startup_s=STARTUP_S,
        log_dir=log_dir,
    ) as server:
        yield server


def _call(method: str, url: str, body: object | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def reset(server: RunningServer) -> None:
    """Forget the journal and any queued behaviour."""
    _call("POST", server.url + "/_llmock/reset", {})


def script(server: RunningServer, *behaviors: dict[str, object]) -> None:
    """Queue behaviours that the next matching requests consume."""
    _call("POST", server.url + "/_llmock/scenario", {"behaviors": list(behaviors)})


def journal(server: RunningServer, path: str | None = None) -> list[dict[str, Any]]:
    """Every request llmock served since the last reset (generation requests only, or those on
    `path`), oldest first."""
    records: list[dict[str, Any]] = _call("GET", server.url + "/_llmock/requests")["requests"]
    if path is not None:
        return [r for r in records if r["path"] == path]
    return [r for r in records if r["method"] == "POST"]


def prompt_of(entry: dict[str, Any]) -> str:
    """The prompt text of a journaled chat or responses request body."""
    body = entry["body"]
    if "messages" in body:
        return str(body["messages"][-1]["content"])
    return str(body["input"])


def expected_code(entry: dict[str, Any]) -> str:
    """What assay must make of what the journal says llmock did to a request."""
    fault = entry["fault"] or ""
    if entry["status"] >= 400:
        return "http_status"
    if fault.startswith("stream:truncate"):
        return "truncated_stream"
    if fault.startswith("stream:disconnect"):
        return "stream_interrupted"
    if fault.startswith("stream:malformed"):
        return "invalid_json"
    return "completed"
