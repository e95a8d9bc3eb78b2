"""The mock's finite server: slots that queue, a token clock, answers that go bad past a load."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson
import pytest
from pydantic import ValidationError

from assay.mock import Fixed, LatencyModel, MockConfig
from assay.mock.capacity import ServerLoad, ServerModel
from assay.mock.server import open_mock_server
from tests.mock.test_mock_media import post_transcription, transcription_form

CHAT = "/v1/chat/completions"


class FakeClock:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now_ns = 0

    def read(self) -> int:
        return self.now_ns

    async def sleep(self, seconds: float) -> None:
        self.now_ns += round(seconds * 1e9)


async def test_token_clock_lets_out_the_budget_per_second_across_answers() -> None:
    clock = FakeClock()
    load = ServerLoad(ServerModel(tokens_per_s=4), now_ns=clock.read, sleep=clock.sleep)
    sent: list[float] = []
    for _ in range(4):  # four tokens asked for at once, from any answers
        await load.take_tokens()
        sent.append(clock.now_ns / 1e9)
    assert sent == [0.0, 0.25, 0.5, 0.75]
    clock.now_ns = 2_000_000_000  # the clock idled: the next token goes at once
    await load.take_tokens(2)  # two together: the later one 0.25 s after
    assert clock.now_ns == 2_250_000_000


async def test_a_token_whose_client_left_holds_no_turn() -> None:
    load = ServerLoad(ServerModel(tokens_per_s=10))
    await load.take_tokens()  # the clock's next turn is 0.1 s away
    waiting = asyncio.create_task(load.take_tokens())
    queued = asyncio.create_task(load.take_tokens())
    await asyncio.sleep(0)
    waiting.cancel()
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    with pytest.raises(asyncio.CancelledError):
        await queued
    # Nothing was let out for them: the next token waits only for the first one's turn.
    assert load._next_token_ns - time.monotonic_ns() < 0.1e9


async def test_without_a_budget_tokens_never_wait() -> None:
    clock = FakeClock()
    load = ServerLoad(ServerModel(slots=2), now_ns=clock.read, sleep=clock.sleep)
    await load.take_tokens(100)
    assert clock.now_ns == 0


async def test_requests_beyond_the_slots_wait_in_arrival_order() -> None:
    load = ServerLoad(ServerModel(slots=2))
    release = asyncio.Event()
    served: list[int] = []

    async def request(number: int) -> None:
        async with load.admitted():
            served.append(number)
            await release.wait()

    async with asyncio.TaskGroup() as group:
        for number in range(4):
            group.create_task(request(number))
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert served == [0, 1]  # two slots, two waiting
        assert load.in_server == 4
        release.set()
    assert served == [0, 1, 2, 3]
    assert load.in_server == 0


async def test_answers_go_bad_past_the_stated_load_only() -> None:
    load = ServerLoad(ServerModel(fault_past=2))
    verdicts: list[bool] = []
    release = asyncio.Event()

    async def request() -> None:
        async with load.admitted() as faulty:
            verdicts.append(faulty)
            await release.wait()

    async with asyncio.TaskGroup() as group:
        for _ in range(4):
            group.create_task(request())
            await asyncio.sleep(0)
        release.set()
    assert verdicts == [False, False, True, True]
    async with load.admitted() as faulty:  # alone again: answered well
        assert not faulty


def test_a_load_fault_without_its_load_is_refused() -> None:
    with pytest.raises(ValidationError, match="fault_past"):
        ServerModel(fault="cut")


async def _stream(session: aiohttp.ClientSession, url: str) -> list[dict[str, Any]]:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with session.post(url + CHAT, json=body) as response:
        text = (await response.read()).decode()
    frames = [line.removeprefix("data: ") for line in text.split("\n") if line.startswith("data:")]
    return [orjson.loads(frame) for frame in frames if frame != "[DONE]"]


async def test_past_the_load_the_wire_carries_empty_answers_and_the_rest_whole() -> None:
    # One slot answering for 0.3 s: three requests sent together are all in the server when
    # the third arrives, so exactly the one that found two others there is answered empty.
    config = MockConfig(
        latency=LatencyModel(time_to_first_token=Fixed(value=0.3), output_tokens=Fixed(value=4)),
        server=ServerModel(slots=1, fault_past=2),
    )
    async with open_mock_server(config) as server, aiohttp.ClientSession() as session:
        answers = await asyncio.gather(*(_stream(session, server.url) for _ in range(3)))
        stats = server.stats()
    texts = sorted(
        "".join(
            chunk["choices"][0]["delta"].get("content") or ""
            for chunk in chunks
            if chunk["choices"]
        )
        for chunks in answers
    )
    assert texts[0] == ""
    assert texts[1]
    assert texts[2]
    assert stats["faults"] == {"empty_stream": 1}


async def test_transcriptions_take_a_slot_and_go_bad_past_the_load_as_chats_do() -> None:
    # A multipart upload is read by its own path; it went around the finite server, so a
    # capacity search on transcriptions against the mock never saw an overloaded server.
    config = MockConfig(
        latency=LatencyModel(time_to_first_token=Fixed(value=0.3), output_tokens=Fixed(value=4)),
        server=ServerModel(slots=1, fault_past=2),
    )
    async with open_mock_server(config) as server:
        answers = await asyncio.gather(
            *(post_transcription(server.url, transcription_form(1.0)) for _ in range(3))
        )
        stats = server.stats()
    texts = sorted(orjson.loads(raw)["text"] for _, _, raw in answers)
    assert texts[0] == ""
    assert texts[1]
    assert texts[2]
    assert stats["faults"] == {"empty_stream": 1}


async def test_past_the_load_a_body_that_cut_cannot_spoil_is_dropped() -> None:
    # A cut is a stream's fault: a whole body past the load was served whole and usable while
    # the mock counted it cut. It is dropped instead, for chats and transcriptions alike.
    config = MockConfig(
        latency=LatencyModel(time_to_first_token=Fixed(value=0.3), output_tokens=Fixed(value=4)),
        server=ServerModel(slots=1, fault_past=2, fault="cut"),
    )
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}

    async def chat(session: aiohttp.ClientSession, url: str) -> bool:
        try:
            async with session.post(url + CHAT, json=body) as response:
                return bool((await response.json())["choices"][0]["message"]["content"])
        except aiohttp.ClientError:
            return False

    async def transcription(url: str) -> bool:
        try:
            return bool(orjson.loads((await post_transcription(url, transcription_form(1.0)))[2]))
        except aiohttp.ClientError:
            return False

    async with open_mock_server(config) as server, aiohttp.ClientSession() as session:
        chats = await asyncio.gather(*(chat(session, server.url) for _ in range(3)))
        transcripts = await asyncio.gather(*(transcription(server.url) for _ in range(3)))
        stats = server.stats()
    assert sorted(chats) == [False, True, True]
    assert sorted(transcripts) == [False, True, True]
    assert stats["faults"] == {"drop": 2}
