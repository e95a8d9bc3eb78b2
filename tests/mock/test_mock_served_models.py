"""The mock serves several models (a traffic mix's targets), each with a latency of its own:
/v1/models lists them, a request naming one is answered with that model's latency and name, and
any other name is answered as before (issue 39, traffic mixes)."""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any

import aiohttp
import orjson
import pytest
from pydantic import ValidationError

from assay.mock import Fixed, LatencyModel, MockConfig, open_mock_server, start_mock_processes
from assay.mock.app import MockService
from assay.mock.config import ServedModel, spread_models
from assay.server_metrics import parse_exposition

BASE = LatencyModel(
    time_to_first_token=Fixed(value=0.04),
    inter_token_latency=Fixed(value=0.008),
    output_tokens=Fixed(value=16),
)
# a: the base latency; b: TTFT x 1.5 and ITL x 1.25 (spread_models' second).
MIXED = MockConfig(latency=BASE, models=spread_models(("a", "b"), BASE), max_model_len=4096)


class RecordingSleep:
    """Stands in for `asyncio.sleep`: keeps each latency the mock waits out, waits none."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)


async def _chat(
    session: aiohttp.ClientSession, url: str, model: str, stream: bool = True
) -> tuple[int, list[str]]:
    """The status and the `model` of every JSON object of one chat answer of 4 tokens."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4,
        "stream": stream,
    }
    async with session.post(url + "/v1/chat/completions", json=body) as answer:
        text = await answer.text()
        if not stream:
            payload: dict[str, Any] = await answer.json()
            return answer.status, [payload["model"]]
    models = [
        line.split('"model":"', 1)[1].split('"', 1)[0]
        for line in text.splitlines()
        if line.startswith("data: {")
    ]
    return answer.status, models


async def _waits_of(model: str, stream: bool = True) -> list[float]:
    sleep = RecordingSleep()
    async with (
        open_mock_server(MIXED, sleep=sleep) as server,
        aiohttp.ClientSession() as session,
    ):
        status, models = await _chat(session, server.url, model, stream)
    assert status == 200
    assert set(models) == {model}  # every chunk names the model the request named
    return sleep.waits


async def _listed(config: MockConfig) -> dict[str, Any]:
    async with (
        open_mock_server(config) as server,
        aiohttp.ClientSession() as session,
        session.get(server.url + "/v1/models") as answer,
    ):
        listed: dict[str, Any] = await answer.json()
    return listed


async def test_v1_models_lists_the_model_name_and_every_served_model() -> None:
    listed = await _listed(MIXED)
    assert [model["id"] for model in listed["data"]] == ["assay-mock", "a", "b"]
    assert {model["max_model_len"] for model in listed["data"]} == {4096}
    assert {model["object"] for model in listed["data"]} == {"model"}


async def test_a_served_model_named_like_the_mock_is_listed_once() -> None:
    listed = await _listed(MockConfig(model_name="a", models=spread_models(("a", "b"), BASE)))
    assert [model["id"] for model in listed["data"]] == ["a", "b"]


async def test_each_served_model_streams_with_its_own_latency() -> None:
    waits_a = await _waits_of("a")
    waits_b = await _waits_of("b")
    # The first token after the model's TTFT, then one ITL per gap between the 4 tokens.
    assert waits_a == pytest.approx([0.04, 0.008, 0.008, 0.008])
    assert waits_b == pytest.approx([0.06, 0.01, 0.01, 0.01])
    assert waits_b[0] > waits_a[0]
    assert sum(waits_b) > sum(waits_a)


async def test_a_whole_answer_waits_its_models_ttft_and_every_itl() -> None:
    assert await _waits_of("a", stream=False) == pytest.approx([0.04 + 3 * 0.008])
    assert await _waits_of("b", stream=False) == pytest.approx([0.06 + 3 * 0.01])


@pytest.mark.parametrize("model", ["assay-mock", "some-model-it-does-not-list"])
async def test_any_other_model_is_answered_with_the_mocks_own_latency(model: str) -> None:
    assert await _waits_of(model) == pytest.approx([0.04, 0.008, 0.008, 0.008])


def test_the_sampler_of_a_request_is_its_models() -> None:
    service = MockService(MIXED)
    assert service.sampler_for("b").model == MIXED.models[1].latency
    assert service.sampler_for("b").time_to_first_token() == pytest.approx(0.06)
    assert service.sampler_for("a").time_to_first_token() == pytest.approx(0.04)
    assert service.sampler_for("unknown").model == BASE
    assert service.sampler_for("assay-mock").model == BASE


async def test_a_served_model_answers_with_its_own_output_length() -> None:
    short = ServedModel(name="short", latency=LatencyModel(output_tokens=Fixed(value=3)))
    config = MockConfig(models=(short,))
    async with open_mock_server(config) as server, aiohttp.ClientSession() as session:
        tokens = {}
        for model in ("short", "assay-mock"):
            body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
            async with session.post(server.url + "/v1/chat/completions", json=body) as answer:
                tokens[model] = (await answer.json())["usage"]["completion_tokens"]
    assert tokens == {"short": 3, "assay-mock": 16}


def test_a_model_served_twice_is_refused() -> None:
    with pytest.raises(ValidationError, match="named more than once"):
        MockConfig(models=spread_models(("a", "a"), BASE))


def _per_model(text: str, name: str) -> dict[str, float]:
    """Sample name -> value of the series labelled `model_name=name` (label sets summed)."""
    label = f'model_name="{name}"'
    return parse_exposition("\n".join(line for line in text.splitlines() if label in line))


async def test_metrics_count_each_served_model_apart_and_add_up_to_the_total() -> None:
    async with open_mock_server(MIXED) as server, aiohttp.ClientSession() as session:
        for model, times in (("a", 2), ("b", 3), ("assay-mock", 1), ("unlisted", 1)):
            for _ in range(times):
                assert (await _chat(session, server.url, model, stream=False))[0] == 200
        async with session.get(server.url + "/metrics") as answer:
            text = await answer.text()
    finished = {
        name: _per_model(text, name)["vllm:request_success_total"]
        for name in ("assay-mock", "a", "b")
    }
    # A model the mock does not list is counted under the mock's own model_name, as before.
    assert finished == {"assay-mock": 2, "a": 2, "b": 3}
    assert _per_model(text, "b")["vllm:generation_tokens_total"] == 3 * 4
    total = parse_exposition(text)
    assert total["vllm:request_success_total"] == 7
    assert total["vllm:generation_tokens_total"] == 7 * 4


def test_metrics_of_several_workers_count_each_model_across_them() -> None:
    with start_mock_processes(MIXED, workers=2) as url:
        for n in range(10):
            body = {"model": "b" if n % 2 else "a", "prompt": "hello", "max_tokens": 3}
            request = urllib.request.Request(
                url + "/v1/completions",
                data=orjson.dumps(body),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        for _ in range(4):  # each scrape may reach either worker: every one sees the totals
            with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
                text = response.read().decode()
            assert _per_model(text, "a")["vllm:request_success_total"] == 5
            assert _per_model(text, "b")["vllm:generation_tokens_total"] == 15
            assert _per_model(text, "assay-mock")["vllm:request_success_total"] == 0
