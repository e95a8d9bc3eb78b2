"""check_ready: the model to use, or ServerNotReady with a message naming what is wrong."""

from __future__ import annotations

import asyncio
import socket

import pytest

from assay.backend import BackendSettings, Timeouts, check_ready
from assay.errors import ServerNotReady
from tests.backend.backend_loopback import response_head, serve_raw, unused_port_url

MODELS = (
    b'{"object":"list","data":[{"id":"tiny-llama","object":"model","owned_by":"vllm"},'
    b'{"id":"tiny-llama-lora","object":"model","owned_by":"vllm"}]}'
)


async def models_server_check(status: int, body: bytes, model: str | None = None) -> str:
    async def script(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(status, "application/json", len(body)) + body)
        await writer.drain()

    async with serve_raw(script) as server:
        return await check_ready(BackendSettings(base_url=server.url), model)


async def test_first_listed_model_is_used_when_none_is_configured() -> None:
    assert await models_server_check(200, MODELS) == "tiny-llama"


async def test_configured_model_is_kept() -> None:
    assert await models_server_check(200, MODELS, model="tiny-llama-lora") == "tiny-llama-lora"


async def test_nothing_listening_is_no_server_connection_refused() -> None:
    url = unused_port_url()
    with pytest.raises(
        ServerNotReady, match=rf"^no server at {url} \(connection refused\) \(.*--wait-ready"
    ):
        await check_ready(BackendSettings(base_url=url))


async def test_models_404_names_the_status_and_path_and_asks_for_the_model() -> None:
    body = b'{"detail":"Not Found"}'
    # Issue 38: a plain web server's 404 asks first whether it is an OpenAI-compatible server.
    pattern = r"answered 404 for /v1/models: is this an OpenAI-compatible server\? \(.*--model\)$"
    with pytest.raises(ServerNotReady, match=pattern):
        await models_server_check(404, body)


async def test_empty_model_list_is_no_models() -> None:
    with pytest.raises(ServerNotReady, match=r"returned no models \(.*--wait-ready"):
        await models_server_check(200, b'{"object":"list","data":[]}')


async def test_body_that_is_not_a_model_list_is_not_ready() -> None:
    with pytest.raises(ServerNotReady, match="not a model list"):
        await models_server_check(200, b"<html>login</html>")


async def test_server_that_never_answers_models_is_not_ready() -> None:
    async def silent(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        await release.wait()

    async with serve_raw(silent) as server:
        settings = BackendSettings(base_url=server.url, timeouts=Timeouts(first_token_s=0.2))
        with pytest.raises(ServerNotReady, match="did not answer /v1/models"):
            await check_ready(settings)


async def test_mock_server_is_ready_with_its_model(mock_url: str) -> None:
    assert await check_ready(BackendSettings(base_url=mock_url + "/v1")) == "assay-mock"


async def test_a_rate_limited_model_list_is_no_stop_when_the_model_is_named() -> None:
    # Issue 20 item 8: a 429 on /v1/models aborted the run even with --model.
    assert await models_server_check(429, b'{"error": "slow down"}', model="m") == "m"


async def test_a_host_name_that_does_not_resolve_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 20 item 8: a DNS failure read "unknown error -2".
    def no_such_host(*args: object, **kwargs: object) -> list[object]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    with pytest.raises(ServerNotReady) as raised:
        await check_ready(BackendSettings(base_url="http://gpu-box.example:8000"), "m")
    message = str(raised.value)
    assert "host name 'gpu-box.example' did not resolve: Name or service not known" in message
    assert "unknown error" not in message.lower()
