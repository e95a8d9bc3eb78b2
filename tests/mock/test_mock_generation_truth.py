"""Over HTTP: the mock honours the request's limits, says why it stopped, and reports true usage."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
import pytest

from assay.data.tokenizer import BuiltinTokenizer
from assay.mock import LatencyModel, MockConfig, MockServer, Uniform

StartMock = Callable[[MockConfig], Awaitable[MockServer]]
TOKENIZER = BuiltinTokenizer()
PROMPT = "Explain, in plain words, why the sky looks blue at noon and red at dusk."


async def post_json(url: str, body: dict[str, Any]) -> Any:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body) as response,
    ):
        assert response.status == 200
        return orjson.loads(await response.read())


async def post_stream(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json={**body, "stream": True}) as response,
    ):
        raw = (await response.read()).decode()
    frames = [block.removeprefix("data: ") for block in raw.split("\n\n") if block]
    assert frames[-1] == "[DONE]"
    return [orjson.loads(frame) for frame in frames[:-1]]


@pytest.mark.parametrize(
    ("body", "tokens", "finish_reason"),
    [
        ({"max_tokens": 4}, 4, "length"),
        ({"max_tokens": 16}, 16, "length"),
        ({"max_tokens": 40}, 16, "stop"),
        ({}, 16, "stop"),
        ({"max_tokens": 40, "ignore_eos": True}, 40, "length"),
        ({"max_tokens": 40, "min_tokens": 25}, 25, "stop"),
        ({"max_tokens": 20, "min_tokens": 25}, 20, "length"),
        ({"max_tokens": 0}, 0, "length"),
    ],
)
async def test_completion_length_and_finish_reason_are_true(
    mock_url: str, body: dict[str, Any], tokens: int, finish_reason: str
) -> None:
    answer = await post_json(mock_url + "/v1/completions", {"prompt": PROMPT, **body})
    choice = answer["choices"][0]
    assert (choice["finish_reason"], answer["usage"]["completion_tokens"]) == (
        finish_reason,
        tokens,
    )
    assert TOKENIZER.count(choice["text"]) == tokens
    assert answer["usage"]["prompt_tokens"] == TOKENIZER.count(PROMPT)
    assert answer["usage"]["total_tokens"] == TOKENIZER.count(PROMPT) + tokens


async def test_max_completion_tokens_wins_over_max_tokens_in_chat(mock_url: str) -> None:
    body = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
        "max_tokens": 3,
        "max_completion_tokens": 7,
    }
    answer = await post_json(mock_url + "/v1/chat/completions", body)
    assert answer["usage"] == {
        "prompt_tokens": TOKENIZER.count(PROMPT),
        "completion_tokens": 7,
        "total_tokens": TOKENIZER.count(PROMPT) + 7,
    }


async def test_streamed_usage_equals_the_streamed_tokens_under_a_length_distribution(
    start_mock: StartMock,
) -> None:
    config = MockConfig(latency=LatencyModel(output_tokens=Uniform(low=1, high=60)), seed=3)
    server = await start_mock(config)
    lengths = set()
    for _ in range(15):
        chunks = await post_stream(
            server.url + "/v1/chat/completions",
            {
                "messages": [{"role": "user", "content": PROMPT}],
                "max_tokens": 50,
                "stream_options": {"include_usage": True},
            },
        )
        content = [c for c in chunks[1:] if c["choices"]]
        text = "".join(c["choices"][0]["delta"]["content"] for c in content)
        usage = chunks[-1]["usage"]
        assert usage["completion_tokens"] == len(content) == TOKENIZER.count(text)
        reason = content[-1]["choices"][0]["finish_reason"]
        assert reason == ("length" if len(content) == 50 else "stop")
        lengths.add(len(content))
    assert len(lengths) > 3


async def test_continuous_usage_runs_on_every_chunk(mock_url: str) -> None:
    chunks = await post_stream(
        mock_url + "/v1/completions",
        {
            "prompt": PROMPT,
            "max_tokens": 5,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        },
    )
    running = [c["usage"]["completion_tokens"] for c in chunks]
    assert running == [1, 2, 3, 4, 5, 5]
    assert chunks[-1]["choices"] == []


async def test_stream_without_include_usage_has_no_usage_chunk(mock_url: str) -> None:
    chunks = await post_stream(mock_url + "/v1/completions", {"prompt": PROMPT, "max_tokens": 3})
    assert len(chunks) == 3
    assert all("usage" not in chunk for chunk in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


async def test_responses_usage_counts_input_and_instructions(mock_url: str) -> None:
    answer = await post_json(
        mock_url + "/v1/responses",
        {
            "instructions": "Answer briefly.",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": PROMPT}]}],
            "max_output_tokens": 30,
        },
    )
    assert answer["status"] == "completed"
    assert answer["incomplete_details"] is None
    text = answer["output"][0]["content"][0]["text"]
    assert answer["usage"]["output_tokens"] == TOKENIZER.count(text) == 16
    assert answer["usage"]["input_tokens"] == TOKENIZER.count("Answer briefly.") + TOKENIZER.count(
        PROMPT
    )


async def test_embeddings_are_deterministic_across_servers(start_mock: StartMock) -> None:
    first = await start_mock(MockConfig(embedding_dimension=8))
    second = await start_mock(MockConfig(embedding_dimension=8, seed=99))
    body = {"input": ["same text", [101, 2023, 102]], "encoding_format": "float"}
    a = await post_json(first.url + "/v1/embeddings", body)
    b = await post_json(second.url + "/v1/embeddings", body)
    assert a["data"] == b["data"]
    assert [len(item["embedding"]) for item in a["data"]] == [8, 8]
    assert a["usage"]["prompt_tokens"] == TOKENIZER.count("same text") + 3


@pytest.mark.parametrize(
    ("path", "body", "complaint"),
    [
        ("/v1/completions", {"prompt": "x", "max_tokens": -1}, "`max_tokens` must be an integer"),
        ("/v1/chat/completions", {"messages": "hi"}, "`messages` must be a list"),
        ("/v1/embeddings", {"model": "m"}, "without `input`"),
    ],
)
async def test_bad_request_body_is_a_400_saying_why(
    mock_url: str, path: str, body: dict[str, Any], complaint: str
) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(mock_url + path, json=body) as response,
    ):
        assert response.status == 400
        assert complaint in (await response.json())["error"]["message"]


async def test_body_that_is_not_json_is_a_400(mock_url: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(mock_url + "/v1/completions", data=b"{nope") as response,
    ):
        assert response.status == 400


async def test_health_and_stats_answer(mock_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(mock_url + "/health") as response:
            assert response.status == 200
        async with session.get(mock_url + "/mock/stats") as response:
            assert await response.json() == {
                "requests": 0,
                "faults": {},
                "faults_not_applicable": {},
            }
