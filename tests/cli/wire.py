"""The bodies the embedded mock received (`assay run --mock-record-requests FILE`), by request."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson

from assay.backend import wire_request_id


def received(path: Path) -> list[dict[str, Any]]:
    """Every recorded request line (path, request_id, received_ns, body), in arrival order."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@functools.cache
def _assay_ids() -> dict[str, str]:
    """assay's request ids, by the UUID each is sent as (`wire_request_id`), for the ids these
    tests make: plain requests and the turns of sessions."""
    ids = [f"req-{i:08d}" for i in range(2_000)]
    ids += [f"req-{i:08d}-turn-{turn:02d}" for i in range(200) for turn in range(1, 21)]
    return {wire_request_id(request_id): request_id for request_id in ids}


def bodies_by_id(path: Path) -> dict[str, dict[str, Any]]:
    """The generation bodies the mock received, keyed by assay's request id (the header on the
    wire carries its UUID)."""
    known = _assay_ids()
    return {
        known.get(str(line["request_id"]), str(line["request_id"])): line["body"]
        for line in received(path)
        if line["path"] != "/v1/models" and line["request_id"] is not None
    }
