"""A wrong endpoint is found by one probe before the load, and the message names the endpoint
the server does answer (issue 8 item 7)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from assay.backend import BackendSettings, wire_request_id
from assay.backend.probe import WrongEndpoint, probe_endpoint
from assay.core import Endpoint, GenerationRequest
from assay.mock import MockConfig
from assay.mock.server import open_mock_server
from tests.backend.chat_only import serve_chat_only


def completions_request() -> GenerationRequest:
    return GenerationRequest(
        request_id="req-00000000",
        endpoint=Endpoint.completions,
        model="chat-only",
        prompt="Write one line about rivers.",
        max_output_tokens=64,
    )


async def test_missing_route_names_the_endpoint_the_server_answers() -> None:
    async with serve_chat_only() as server:
        with pytest.raises(WrongEndpoint, match=r"HTTP 404.*--endpoint chat \(/v1/chat/"):
            await probe_endpoint(BackendSettings(base_url=server.url), completions_request())
    # One probe plus one question to each other endpoint, never a run's worth.
    assert sum(server.hits.values()) == len(Endpoint)


async def test_answered_probe_lets_the_run_go_ahead_with_one_request() -> None:
    request = completions_request().model_copy(
        update={"endpoint": Endpoint.chat, "prompt": None,
                "messages": ({"role": "user", "content": "hi"},)}
    )  # fmt: skip
    async with serve_chat_only() as server:
        assert await probe_endpoint(BackendSettings(base_url=server.url), request)
    assert server.hits == {"/v1/chat/completions": 1}


async def test_request_the_server_refuses_stops_before_the_load() -> None:
    request = completions_request().model_copy(
        update={"endpoint": Endpoint.chat, "prompt": None,
                "messages": ({"role": "user", "content": "hi"},)}
    )  # fmt: skip
    async with serve_chat_only(chat_status=400) as server:
        with pytest.raises(WrongEndpoint, match=r"HTTP 400.*bad field 'foo'.*every request"):
            await probe_endpoint(BackendSettings(base_url=server.url), request)
    assert server.hits == {"/v1/chat/completions": 1}


async def test_the_probe_has_its_own_id_and_asks_for_one_token(tmp_path: Path) -> None:
    # Issue 20 item 9: the probe reused the first request's X-Request-Id and took `max_tokens`
    # from --extra-body (4 tokens instead of 1).
    wire = tmp_path / "received.jsonl"
    first = GenerationRequest(
        request_id="req-00000000",
        endpoint=Endpoint.chat,
        model="assay-mock",
        messages=({"role": "user", "content": "hi"},),
        max_output_tokens=64,
        extra_body={"max_tokens": 4, "min_tokens": 3, "temperature": 0.5},
    )
    async with open_mock_server(MockConfig(record_requests=wire)) as server:
        assert await probe_endpoint(BackendSettings(base_url=server.url), first)
    (line,) = [orjson.loads(raw) for raw in wire.read_bytes().splitlines()]
    assert line["body"]["max_tokens"] == 1
    assert "min_tokens" not in line["body"]
    assert line["body"]["temperature"] == 0.5  # every other field as the run sends it
    assert line["request_id"] == wire_request_id("req-00000000-probe")
    assert line["request_id"] != wire_request_id("req-00000000")


async def test_a_model_the_server_does_not_serve_is_named_with_the_served_ones() -> None:
    # Issue 20 item 8: "check the target URL's path prefix" although /v1/models listed names.
    request = completions_request().model_copy(
        update={"endpoint": Endpoint.chat, "prompt": None, "model": "llama-70b",
                "messages": ({"role": "user", "content": "hi"},)}
    )  # fmt: skip
    async with serve_chat_only(chat_status=404) as server:
        with pytest.raises(WrongEndpoint) as raised:
            await probe_endpoint(BackendSettings(base_url=server.url), request)
    assert str(raised.value).endswith(
        "nothing was sent; model 'llama-70b' is not served here; served: chat-only"
    )
