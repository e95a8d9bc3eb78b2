"""One model named with `--model` must be listed by `/v1/models`, as every model of a traffic
mix must: one rule for both (a server that accepts any name accepts the one it lists, and one
that does not, vLLM, would refuse every request of the run). A server without the route, or
whose listing names no model, cannot tell and is taken at its word, for a mix as for one."""

from __future__ import annotations

import asyncio

import pytest

from assay.backend import BackendSettings, check_ready
from assay.backend.readiness import wait_for_model
from assay.errors import ServerNotReady
from tests.backend.backend_loopback import response_head, serve_raw

MODELS = (
    b'{"object":"list","data":[{"id":"tiny-llama","object":"model","max_model_len":4096},'
    b'{"id":"tiny-llama-lora","object":"model"}]}'
)
EMPTY = b'{"object":"list","data":[]}'


async def ready_with(
    status: int, body: bytes, model: str | None, mix: tuple[str, ...] = ()
) -> tuple[str, int | None]:
    async def script(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(status, "application/json", len(body)) + body)
        await writer.drain()

    async with serve_raw(script) as server:
        served = await wait_for_model(BackendSettings(base_url=server.url), model, mix=mix)
    assert served is not None
    return served.id, served.context_window


async def test_one_model_not_listed_is_refused_naming_what_is_served() -> None:
    async def script(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(200, "application/json", len(MODELS)) + MODELS)
        await writer.drain()

    async with serve_raw(script) as server:
        with pytest.raises(ServerNotReady) as refused:
            await check_ready(BackendSettings(base_url=server.url), "tgi")
    assert str(refused.value) == (
        f"model of --model not served at {server.url}: 'tgi'; "
        "it serves: 'tiny-llama', 'tiny-llama-lora'"
    )


async def test_one_listed_model_is_used_with_its_window() -> None:
    assert await ready_with(200, MODELS, "tiny-llama") == ("tiny-llama", 4096)


@pytest.mark.parametrize("mix", [(), ("someone", "else")])
async def test_a_listing_that_names_no_model_takes_the_run_at_its_word(
    mix: tuple[str, ...],
) -> None:
    assert await ready_with(200, EMPTY, "someone", mix) == ("someone", None)


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_a_server_without_the_listing_takes_one_model_at_its_word(status: int) -> None:
    assert await ready_with(status, b'{"detail":"Not Found"}', "anything") == ("anything", None)
