"""Every fault is produced on the wire as specified, read with a raw aiohttp client."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest

from assay.data.tokenizer import BuiltinTokenizer
from assay.mock import FAULT_HEADER, FAULTS
from assay.mock.choices import BAD_TOOL_ARGUMENTS

TOKENIZER = BuiltinTokenizer()
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
RESPONSES = "/v1/responses"
EMBEDDINGS = "/v1/embeddings"
RERANK = "/v1/rerank"
SCORE = "/v1/score"
RANKED = {"query": "where do rivers go", "documents": ["to the sea", "uphill", "nowhere"]}
SCORED = {"text_1": "where do rivers go", "text_2": ["to the sea", "uphill", "nowhere"]}
MESSAGES = [{"role": "user", "content": "List three uses of a lighthouse."}]


@dataclass
class Reply:
    status: int
    content_type: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)

    def frames(self) -> list[tuple[str, str]]:
        """(event, data) of each SSE frame; event is "message" when the frame names none."""
        frames = []
        for block in self.body.decode().split("\n\n"):
            if not block.strip():
                continue
            event, data = "message", []
            for line in block.split("\n"):
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    data.append(line.removeprefix("data: "))
            frames.append((event, "\n".join(data)))
        return frames

    def chunks(self) -> list[dict[str, Any]]:
        """The JSON of every `data:` frame but `[DONE]`."""
        return [orjson.loads(data) for _, data in self.frames() if data != "[DONE]"]


async def post(url: str, path: str, body: dict[str, Any], fault: str | None = None) -> Reply:
    headers = {FAULT_HEADER: fault} if fault else {}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + path, json=body, headers=headers) as response,
    ):
        return Reply(
            status=response.status,
            content_type=response.content_type,
            headers=dict(response.headers),
            body=await response.read(),
        )


def chat(stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {"model": "assay-mock", "messages": MESSAGES, "stream": stream, **extra}


def content_of(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["choices"][0]["delta"]["content"] for c in chunks[1:] if c.get("choices")]


async def test_empty_stream_is_only_done(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "empty_stream")
    assert reply.status == 200
    assert reply.body == b"data: [DONE]\n\n"


async def test_empty_stream_body_has_empty_content_and_zero_tokens(mock_url: str) -> None:
    answer = (await post(mock_url, CHAT, chat(stream=False), "empty_stream")).json()
    assert answer["choices"][0]["message"]["content"] == ""
    assert answer["usage"]["completion_tokens"] == 0


@pytest.mark.parametrize("stream", [True, False])
async def test_no_body_is_an_empty_200(mock_url: str, stream: bool) -> None:
    reply = await post(mock_url, CHAT, chat(stream=stream), "no_body")
    assert (reply.status, reply.body) == (200, b"")


async def test_choices_empty_streams_one_chunk_then_done(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "choices_empty")
    assert reply.frames() == [("message", '{"choices":[],"usage":{}}'), ("message", "[DONE]")]
    body = await post(mock_url, COMPLETIONS, {"prompt": "x", "stream": False}, "choices_empty")
    assert body.json() == {"choices": [], "usage": {}}


async def test_inband_error_arrives_after_the_asked_tokens(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "inband_error; after=3")
    chunks = reply.chunks()
    assert len(content_of(chunks[:-1])) == 3
    assert set(chunks[-1]) == {"error"}
    assert chunks[-1]["error"]["message"]
    assert reply.frames()[-1] == ("message", "[DONE]")


async def test_inband_error_body_is_a_200_error_object(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(stream=False), "inband_error")
    assert reply.status == 200
    assert set(reply.json()) == {"error"}


async def test_sse_error_event_is_an_error_frame_after_the_asked_tokens(mock_url: str) -> None:
    reply = await post(mock_url, COMPLETIONS, {"prompt": "x", "stream": True}, "sse_error_event")
    frames = reply.frames()
    assert [event for event, _ in frames] == ["message", "message", "error"]
    assert "error" in orjson.loads(frames[-1][1])


async def test_truncated_stream_ends_without_done_or_finish_reason(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "truncated_stream; after=4")
    assert b"[DONE]" not in reply.body
    chunks = reply.chunks()
    assert len(content_of(chunks)) == 4
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)


async def test_missing_finish_reason_still_sends_done(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "missing_finish_reason")
    assert reply.frames()[-1] == ("message", "[DONE]")
    chunks = reply.chunks()
    assert len(content_of(chunks)) == 16
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)


async def test_missing_done_sends_the_whole_answer_and_usage_but_no_done(mock_url: str) -> None:
    body = {**chat(), "stream_options": {"include_usage": True}}
    reply = await post(mock_url, CHAT, body, "missing_done")
    assert b"[DONE]" not in reply.body
    chunks = reply.chunks()
    assert len(content_of(chunks)) == 16
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] == 16


async def read_until_cut(response: aiohttp.ClientResponse, received: list[bytes]) -> None:
    """Collect the body into `received` until it ends; raises if the connection was cut."""
    async with response:
        for _ in range(1000):
            data = await response.content.readany()
            if not data:
                return
            received.append(data)


async def test_drop_aborts_the_connection_mid_stream(mock_url: str) -> None:
    received: list[bytes] = []
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            mock_url + CHAT, json=chat(), headers={FAULT_HEADER: "drop; after=3"}
        )
        with pytest.raises(aiohttp.ClientPayloadError):
            await read_until_cut(response, received)
    body = b"".join(received)
    assert body.count(b'"content":') == 4  # the role chunk and three tokens
    assert b"[DONE]" not in body


async def test_drop_of_a_whole_body_sends_half_then_aborts(mock_url: str) -> None:
    received: list[bytes] = []
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            mock_url + EMBEDDINGS, json={"input": "hello"}, headers={FAULT_HEADER: "drop"}
        )
        with pytest.raises(aiohttp.ClientPayloadError):
            await read_until_cut(response, received)
    assert response.content_length is not None
    assert 0 < len(b"".join(received)) < response.content_length


async def test_stall_sends_the_asked_tokens_then_nothing(mock_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            mock_url + CHAT, json=chat(), headers={FAULT_HEADER: "stall; after=2"}
        )
        async with response:
            received = b""
            for _ in range(100):
                if received.count(b"\n\n") == 3:  # the role chunk and two tokens
                    break
                received += await response.content.readany()
            # The stall is an hour long; a short wait must see nothing more arrive.
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await response.content.readany()
    assert received.count(b"\n\n") == 3


async def test_short_stall_ends_with_the_rest_of_the_stream(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "stall; after=2; seconds=0.01")
    assert reply.frames()[-1] == ("message", "[DONE]")


@pytest.mark.parametrize(
    ("fault", "status"), [("http_429", 429), ("http_500", 500), ("http_503", 503)]
)
async def test_http_faults_send_status_with_an_openai_error_body(
    mock_url: str, fault: str, status: int
) -> None:
    reply = await post(mock_url, CHAT, chat(), fault)
    assert reply.status == status
    assert reply.content_type == "application/json"
    error = reply.json()["error"]
    assert error["code"] == status
    assert error["message"]
    assert error["type"]
    if status == 429:
        assert reply.headers["Retry-After"] == "1"


async def test_html_200_is_a_proxy_page(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "html_200")
    assert (reply.status, reply.content_type) == (200, "text/html")
    assert reply.body.startswith(b"<html>")


@pytest.mark.parametrize("path", [CHAT, COMPLETIONS, RESPONSES])
async def test_invalid_json_streams_a_data_line_that_does_not_parse(
    mock_url: str, path: str
) -> None:
    body = {"messages": MESSAGES, "prompt": "x", "input": "x", "stream": True}
    reply = await post(mock_url, path, body, "invalid_json")
    data = [d for _, d in reply.frames() if d != "[DONE]"]
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(data[-1])
    for line in data[:-1]:
        orjson.loads(line)


@pytest.mark.parametrize("path", [CHAT, RESPONSES, EMBEDDINGS])
async def test_invalid_json_body_does_not_parse(mock_url: str, path: str) -> None:
    body = {"messages": MESSAGES, "input": "x"}
    reply = await post(mock_url, path, body, "invalid_json")
    assert reply.content_type == "application/json"
    with pytest.raises(orjson.JSONDecodeError):
        reply.json()


async def test_unexpected_shape_is_json_without_choices(mock_url: str) -> None:
    streamed = (await post(mock_url, CHAT, chat(), "unexpected_shape")).chunks()
    assert streamed
    assert all("choices" not in chunk for chunk in streamed)
    whole = (await post(mock_url, COMPLETIONS, {"prompt": "x"}, "unexpected_shape")).json()
    assert "choices" not in whole
    vectors = (await post(mock_url, EMBEDDINGS, {"input": "x"}, "unexpected_shape")).json()
    assert "data" not in vectors
    response = (await post(mock_url, RESPONSES, {"input": "x"}, "unexpected_shape")).json()
    assert "output" not in response


async def test_wrong_usage_reports_half_the_streamed_tokens(mock_url: str) -> None:
    chunks = (await post(mock_url, CHAT, chat(), "wrong_usage")).chunks()
    assert len(content_of(chunks)) == 16
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == 8


async def test_short_output_returns_half_of_what_ignore_eos_asked(mock_url: str) -> None:
    body = chat(max_tokens=10, ignore_eos=True, stream_options={"include_usage": True})
    chunks = (await post(mock_url, CHAT, body, "short_output")).chunks()
    assert len(content_of(chunks)) == 5
    assert chunks[-1]["usage"]["completion_tokens"] == 5


async def test_empty_embedding_has_no_vectors(mock_url: str) -> None:
    answer = (await post(mock_url, EMBEDDINGS, {"input": ["a", "b"]}, "empty_embedding")).json()
    assert answer["data"] == []
    assert answer["usage"]["prompt_tokens"] == 2


async def test_no_results_is_an_empty_result_list(mock_url: str) -> None:
    assert (await post(mock_url, RERANK, RANKED, "no_results")).json()["results"] == []
    assert (await post(mock_url, SCORE, SCORED, "no_results")).json()["data"] == []


async def test_result_count_mismatch_drops_the_last_result(mock_url: str) -> None:
    ranked = (await post(mock_url, RERANK, RANKED, "result_count_mismatch")).json()
    clean = (await post(mock_url, RERANK, RANKED)).json()
    assert ranked["results"] == clean["results"][:-1]
    scored = (await post(mock_url, SCORE, SCORED, "result_count_mismatch")).json()
    assert [item["index"] for item in scored["data"]] == [0, 1]


async def test_index_out_of_range_names_a_document_not_sent(mock_url: str) -> None:
    for path, body, key in ((RERANK, RANKED, "results"), (SCORE, SCORED, "data")):
        answer = (await post(mock_url, path, body, "index_out_of_range")).json()
        assert [item["index"] for item in answer[key]][-1] == 3  # three documents: 0..2


async def test_repeated_index_names_the_first_document_again(mock_url: str) -> None:
    for path, body, key in ((RERANK, RANKED, "results"), (SCORE, SCORED, "data")):
        answer = (await post(mock_url, path, body, "repeated_index")).json()
        indices = [item["index"] for item in answer[key]]
        assert len(indices) == 3
        assert indices[-1] == indices[0]


async def test_non_finite_score_writes_a_bare_nan(mock_url: str) -> None:
    reply = await post(mock_url, RERANK, RANKED, "non_finite_score")
    assert reply.body.count(b'"relevance_score":NaN') == 1
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(reply.body)  # strict JSON has no NaN: the client must read it leniently
    scored = await post(mock_url, SCORE, SCORED, "non_finite_score")
    assert scored.body.count(b'"score":NaN') == 1


async def test_invalid_tool_call_streams_arguments_that_are_not_json(mock_url: str) -> None:
    chunks = (await post(mock_url, CHAT, chat(), "invalid_tool_call")).chunks()
    calls = [
        call
        for chunk in chunks
        if chunk.get("choices")
        for call in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert calls[0]["function"]["name"] == "get_weather"
    arguments = "".join(call["function"]["arguments"] for call in calls)
    assert arguments == BAD_TOOL_ARGUMENTS
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(arguments)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_invalid_tool_call_body_names_the_requested_tool(mock_url: str) -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    answer = (
        await post(mock_url, CHAT, chat(stream=False, tools=tools), "invalid_tool_call")
    ).json()
    call = answer["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "lookup"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(call["function"]["arguments"])


@pytest.mark.parametrize("max_tokens", [1, 5, 8, 40])
async def test_json_mode_answers_json_unless_invalid_json_output(
    mock_url: str, max_tokens: int
) -> None:
    body = chat(
        stream=False,
        max_tokens=max_tokens,
        ignore_eos=True,
        response_format={"type": "json_object"},
    )
    answer = (await post(mock_url, CHAT, body)).json()
    text = answer["choices"][0]["message"]["content"]
    orjson.loads(text)
    assert TOKENIZER.count(text) == answer["usage"]["completion_tokens"] == max_tokens
    broken = (await post(mock_url, CHAT, body, "invalid_json_output")).json()
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(broken["choices"][0]["message"]["content"])


async def test_unknown_fault_is_a_400_naming_it(mock_url: str) -> None:
    reply = await post(mock_url, CHAT, chat(), "meteor_strike")
    assert reply.status == 400
    assert "unknown fault 'meteor_strike'" in reply.json()["error"]["message"]


async def test_fault_that_does_not_apply_is_a_400(mock_url: str) -> None:
    reply = await post(mock_url, EMBEDDINGS, {"input": "x"}, "truncated_stream")
    assert reply.status == 400
    assert "does not apply to POST /v1/embeddings" in reply.json()["error"]["message"]


def test_every_fault_has_a_wire_test_here() -> None:
    tested = {
        "empty_stream",
        "no_body",
        "choices_empty",
        "inband_error",
        "sse_error_event",
        "truncated_stream",
        "missing_finish_reason",
        "drop",
        "stall",
        "http_429",
        "http_500",
        "http_503",
        "html_200",
        "invalid_json",
        "unexpected_shape",
        "wrong_usage",
        "short_output",
        "empty_embedding",
        "invalid_tool_call",
        "invalid_json_output",
        "missing_done",
        "no_results",
        "result_count_mismatch",
        "index_out_of_range",
        "repeated_index",
        "non_finite_score",
    }
    assert set(FAULTS) == tested
