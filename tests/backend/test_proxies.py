"""A proxy answering at the target is named, with what it is known to hide (issue 38 item 6):
LiteLLM marks its answers with `x-litellm-*` headers (not its `/v1/models`), so assay POSTs one
empty body to the run's endpoint, which no server generates anything for."""

from __future__ import annotations

import asyncio

from pydantic import SecretStr

from assay.backend import BackendSettings
from assay.backend.proxies import LITELLM, detect_proxy
from assay.benchmark.run import proxy_in_front
from assay.config import RunConfig
from assay.mock import open_mock_server
from assay.spec.endpoint import Endpoint
from assay.spec.proxy import SeenProxy
from assay.spec.target import Target
from tests.backend.backend_loopback import response_head, serve_raw

REFUSAL = b'{"error":{"message":"model is required"}}'


async def litellm_like(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    """Refuses the request as LiteLLM 1.108.7 refuses `{}`: 400, with its marks on."""
    head = response_head(400, "application/json", len(REFUSAL))
    marked = head.replace(
        b"\r\n\r\n", b"\r\nx-litellm-call-id: 186ba4ac\r\nx-litellm-key-spend: 0.0\r\n\r\n"
    )
    writer.write(marked + REFUSAL)
    await writer.drain()


async def test_litellms_marks_name_the_proxy_and_what_it_hides() -> None:
    async with serve_raw(litellm_like) as server:
        settings = BackendSettings(base_url=server.url, api_key=SecretStr("sk-test"))
        proxy = await detect_proxy(settings, Endpoint.responses)
    assert proxy is not None
    assert proxy.name == "LiteLLM"
    assert proxy.evidence == "x-litellm-call-id, x-litellm-key-spend"
    assert proxy.hides == LITELLM.hides
    assert any("/v1/responses malformed chunks are dropped" in hidden for hidden in proxy.hides)
    # The request was the empty body, to the run's endpoint, with the key.
    head = server.heads[0]
    assert head.startswith("POST /v1/responses ")
    assert "authorization: bearer sk-test" in head.lower()
    assert head.lower().rstrip().endswith("content-length: 2")


async def test_a_server_without_marks_is_no_proxy() -> None:
    async with open_mock_server() as mock:
        assert await detect_proxy(BackendSettings(base_url=mock.url), Endpoint.chat) is None
        assert mock.stats()["requests"] == 0  # refused before any answer was generated


async def test_nothing_listening_is_no_proxy() -> None:
    from tests.backend.backend_loopback import unused_port_url

    settings = BackendSettings(base_url=unused_port_url())
    assert await detect_proxy(settings, Endpoint.chat) is None


def test_the_run_notes_the_proxy_and_report_json_keeps_it() -> None:
    import threading

    notes: list[str] = []
    found: list[SeenProxy | None] = []

    def in_thread(url: str) -> None:
        target = Target(url=url)
        found.append(proxy_in_front(target, BackendSettings(base_url=url), notes.append))

    async def main() -> None:
        async with serve_raw(litellm_like) as server:
            thread = threading.Thread(target=in_thread, args=(server.url,))
            thread.start()
            await asyncio.to_thread(thread.join)

    asyncio.run(main())
    (proxy,) = found
    assert notes[0].startswith("target: answered by LiteLLM (x-litellm-call-id")
    assert "known to hide faults of the server behind it" in notes[0]
    echo = RunConfig().echo(
        resolved_target="http://127.0.0.1:1", resolved_model="m", validator_chain="c",
        processes=1, interrupted=False, degraded=False, proxy=proxy,
    )  # fmt: skip
    dumped = echo.model_dump(mode="json")
    assert dumped["proxy"]["name"] == "LiteLLM"
    assert "proxy" not in RunConfig().echo(
        resolved_target=None, resolved_model=None, validator_chain="c", processes=1,
        interrupted=False, degraded=False,
    ).model_dump(mode="json")  # fmt: skip


def test_no_detection_request_for_the_embedded_mock_or_with_no_probe() -> None:
    notes: list[str] = []
    settings = BackendSettings(base_url="http://127.0.0.1:9")
    assert proxy_in_front(Target(), settings, notes.append) is None
    assert (
        proxy_in_front(Target(url="http://127.0.0.1:9", probe=False), settings, notes.append)
        is None
    )
    assert notes == []
