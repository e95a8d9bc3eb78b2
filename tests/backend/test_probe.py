"""A wrong endpoint is found by one probe before the load, and the message names the endpoint
the server does answer (issue 8 item 7)."""

from __future__ import annotations

import pytest

from assay.backend import BackendSettings
from assay.backend.probe import WrongEndpoint, probe_endpoint
from assay.core import Endpoint, GenerationRequest
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
