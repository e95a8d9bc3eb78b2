"""The bodies the embedded mock received (`assay run --mock-record-requests FILE`), by request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def received(path: Path) -> list[dict[str, Any]]:
    """Every recorded request line (path, request_id, received_ns, body), in arrival order."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def bodies_by_id(path: Path) -> dict[str, dict[str, Any]]:
    """The generation bodies the mock received, keyed by the client's request id."""
    return {
        str(line["request_id"]): line["body"]
        for line in received(path)
        if line["path"] != "/v1/models" and line["request_id"] is not None
    }
