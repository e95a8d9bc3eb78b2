"""Readiness with retries (`--wait-ready`), without `/v1/models` when the model is given, and
interruptible by Ctrl-C (issue 8 item 6, issue 9 item 12, issue 10 item 10)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr

from assay.backend import BackendSettings, Timeouts, wait_until_ready
from assay.errors import ServerNotReady
from tests.backend.backend_loopback import Script, response_head, serve_raw, unused_port_url

MODELS = b'{"object":"list","data":[{"id":"tiny-llama","object":"model"}]}'
SECOND_NS = 1_000_000_000


class JumpingClock:
    """A clock whose sleeps end at once, moving time to their deadline (and noting them)."""

    def __init__(self) -> None:
        self.now = 0
        self.sleeps_ns: list[int] = []

    def now_ns(self) -> int:
        return self.now

    async def sleep_until(self, deadline_ns: int) -> None:
        self.sleeps_ns.append(deadline_ns - self.now)
        self.now = max(self.now, deadline_ns)
        await asyncio.sleep(0)


def answers(*statuses: int) -> tuple[list[int], Script]:
    """A script answering /v1/models with `statuses` in turn, then 200 with a model list."""
    served: list[int] = []

    async def script(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        index = len(served)
        status = statuses[index] if index < len(statuses) else 200
        served.append(status)
        body = MODELS if status == 200 else b'{"error":"loading"}'
        writer.write(response_head(status, "application/json", len(body)) + body)
        await writer.drain()

    return served, script


async def test_loading_server_is_retried_until_it_lists_its_model() -> None:
    served, script = answers(503, 503, 429)
    clock = JumpingClock()
    async with serve_raw(script) as server:
        model = await wait_until_ready(BackendSettings(base_url=server.url), wait_s=30, clock=clock)
    assert model == "tiny-llama"
    assert served == [503, 503, 429, 200]
    assert clock.sleeps_ns == [SECOND_NS] * 3


async def test_wait_ready_gives_up_at_its_deadline_naming_the_last_answer() -> None:
    served, script = answers(*([503] * 50))
    clock = JumpingClock()
    async with serve_raw(script) as server:
        with pytest.raises(ServerNotReady, match=r"answered 503 .*after 2.5 s of --wait-ready"):
            await wait_until_ready(BackendSettings(base_url=server.url), wait_s=2.5, clock=clock)
    assert len(served) == 4  # at 0, 1, 2 and 2.5 s
    assert clock.now == int(2.5 * SECOND_NS)


async def test_without_wait_ready_one_429_fails_with_a_hint() -> None:
    _, script = answers(429)
    async with serve_raw(script) as server:
        with pytest.raises(ServerNotReady, match=r"answered 429 .*--wait-ready SECONDS"):
            await wait_until_ready(BackendSettings(base_url=server.url))


async def test_server_that_is_not_up_yet_is_waited_for() -> None:
    clock = JumpingClock()
    with pytest.raises(ServerNotReady, match=r"connection refused.*3 attempts"):
        await wait_until_ready(BackendSettings(base_url=unused_port_url()), wait_s=2, clock=clock)


@pytest.mark.parametrize("status", [404, 405])
async def test_server_without_models_route_is_ready_when_the_model_is_given(status: int) -> None:
    served, script = answers(status)
    async with serve_raw(script) as server:
        model = await wait_until_ready(BackendSettings(base_url=server.url), "my-model")
    assert model == "my-model"
    assert served == [status]


async def test_unauthorized_models_is_not_retried() -> None:
    served, script = answers(401, 401)
    async with serve_raw(script) as server:
        with pytest.raises(ServerNotReady, match="answered 401"):
            await wait_until_ready(
                BackendSettings(base_url=server.url), wait_s=30, clock=JumpingClock()
            )
    assert served == [401]


async def never_answer(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    await release.wait()


async def test_ctrl_c_while_models_hangs_returns_at_once() -> None:
    async with serve_raw(never_answer) as server:
        settings = BackendSettings(base_url=server.url, timeouts=Timeouts(first_token_s=600))
        # Ctrl-C "arrives" once the server has the request; the test bound is not a timing claim.
        async with asyncio.timeout(20):
            ready = await wait_until_ready(settings, interrupted=lambda: bool(server.heads))
    assert ready is None


async def test_ctrl_c_between_retries_returns_at_once() -> None:
    _, script = answers(*([503] * 5))
    async with serve_raw(script) as server:
        async with asyncio.timeout(20):
            ready = await wait_until_ready(
                BackendSettings(base_url=server.url),
                wait_s=600,
                retry_interval_s=300,
                interrupted=lambda: bool(server.heads),
            )
    assert ready is None


async def test_a_wait_says_what_it_waits_for_at_once_and_every_ten_seconds() -> None:
    # Issue 20 item 8: --wait-ready printed nothing while it waited.
    served, script = answers(*([503] * 25))
    clock = JumpingClock()
    heard: list[str] = []
    async with serve_raw(script) as server:
        model = await wait_until_ready(
            BackendSettings(base_url=server.url), wait_s=60, clock=clock, note=heard.append
        )
    assert model == "tiny-llama"
    assert len(served) == 26
    assert len(heard) == 3  # at the first retry, then at 10 s and 20 s
    assert heard[0].startswith("waiting for the server: ")
    assert "503" in heard[0]
    assert heard[0].endswith("(retrying every 1 s, 60 s left of --wait-ready)")


async def test_one_500_on_models_is_retried_with_wait_ready_issue_38() -> None:
    """A server with an error rate (llmock's) fails `/v1/models` now and then: with
    `--wait-ready` one 500 is retried, also when the model is named."""
    served, script = answers(500)
    clock = JumpingClock()
    async with serve_raw(script) as server:
        model = await wait_until_ready(
            BackendSettings(base_url=server.url), "tiny-llama", wait_s=5, clock=clock
        )
    assert model == "tiny-llama"
    assert served == [500, 200]


async def test_without_wait_ready_a_500_fails_with_the_hint() -> None:
    _, script = answers(500)
    async with serve_raw(script) as server:
        with pytest.raises(ServerNotReady, match=r"answered 500 .*--wait-ready SECONDS"):
            await wait_until_ready(BackendSettings(base_url=server.url), "tiny-llama")


async def test_a_401_names_the_api_key_flag_and_variable_issue_38() -> None:
    _, script = answers(401)
    async with serve_raw(script) as server:
        with pytest.raises(ServerNotReady) as refused:
            await wait_until_ready(BackendSettings(base_url=server.url))
    message = str(refused.value)
    assert "answered 401 for /v1/models: no API key was sent" in message
    assert "OPENAI_API_KEY" in message
    assert "--api-key-env" in message


async def test_a_refused_key_says_where_it_was_read_from() -> None:
    _, script = answers(403)
    async with serve_raw(script) as server:
        settings = BackendSettings(base_url=server.url, api_key=SecretStr("sk-wrong"))
        with pytest.raises(ServerNotReady, match=r"API key sent was refused .*--api-key-env"):
            await wait_until_ready(settings)


async def test_a_plain_web_servers_404_asks_whether_it_is_openai_compatible_issue_38() -> None:
    _, script = answers(404)
    async with serve_raw(script) as server:
        with pytest.raises(ServerNotReady, match=r"answered 404 .*is this an OpenAI-compatible"):
            await wait_until_ready(BackendSettings(base_url=server.url))
