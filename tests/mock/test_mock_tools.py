"""The mock honours `tools`: it calls the first tool with JSON arguments, one value per declared
parameter, unless `tool_choice` is "none"; and it records what it receives when asked to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from assay.mock import MockConfig
from assay.mock.server import open_mock_server
from tests.mock.test_mock_faults_on_wire import CHAT, chat, post

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book_table",
            "parameters": {
                "type": "object",
                "properties": {"guests": {"type": "integer"}, "terrace": {"type": "boolean"}},
            },
        },
    }
]


def tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    assert isinstance(calls, list)
    return calls


async def test_whole_body_tool_request_gets_a_tool_call_with_json_arguments(
    mock_url: str,
) -> None:
    answer = (await post(mock_url, CHAT, chat(stream=False, tools=TOOLS))).json()
    choice = answer["choices"][0]
    (call,) = tool_calls(choice["message"])
    assert call["function"]["name"] == "book_table"
    assert orjson.loads(call["function"]["arguments"]) == {"guests": 3, "terrace": True}
    assert choice["finish_reason"] == "tool_calls"
    assert answer["usage"]["completion_tokens"] > 0


async def test_streamed_tool_call_arguments_join_into_json(mock_url: str) -> None:
    chunks = (await post(mock_url, CHAT, chat(tools=TOOLS))).chunks()
    pieces = [
        call["function"]["arguments"]
        for chunk in chunks
        if chunk.get("choices")
        for call in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert orjson.loads("".join(pieces)) == {"guests": 3, "terrace": True}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_tool_choice_none_is_answered_in_text(mock_url: str) -> None:
    body = chat(stream=False, tools=TOOLS, tool_choice="none")
    message = (await post(mock_url, CHAT, body)).json()["choices"][0]["message"]
    assert message["content"]
    assert message["tool_calls"] == []


async def test_record_requests_appends_every_body_received(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    async with open_mock_server(MockConfig(record_requests=wire)) as server:
        await post(server.url, CHAT, chat(stream=False, temperature=0.3))
        await post(server.url, CHAT, chat(stream=False, top_k=7))
    lines = [orjson.loads(line) for line in wire.read_bytes().splitlines()]
    assert [line["path"] for line in lines] == [CHAT, CHAT]
    assert lines[0]["body"]["temperature"] == 0.3
    assert lines[1]["body"]["top_k"] == 7
