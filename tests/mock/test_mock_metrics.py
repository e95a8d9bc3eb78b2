"""The mock's /metrics: vLLM's names, and counts that match what it really served."""

from __future__ import annotations

import urllib.request

import aiohttp
import orjson
import pytest

from assay.mock import MockConfig, open_mock_server, start_mock_processes
from assay.mock.faults import FAULT_HEADER
from assay.server_metrics import ServerKind, detect_kind, parse_exposition
from tests.mock.test_mock_media import post_transcription, transcription_form


async def _chat(session: aiohttp.ClientSession, url: str, fault: str | None = None) -> int:
    headers = {FAULT_HEADER: fault} if fault else {}
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": True}
    async with session.post(url + "/v1/chat/completions", json=body, headers=headers) as answer:
        await answer.read()
        return answer.status


async def test_metrics_count_finished_answers_and_their_tokens() -> None:
    async with open_mock_server(MockConfig()) as server, aiohttp.ClientSession() as session:
        for _ in range(5):
            assert await _chat(session, server.url) == 200
        # Finished by the engine though unusable: counted. Errors and cut streams: not, but a
        # cut stream's tokens are (2 each before the cut), as vLLM counts an aborted request's.
        await _chat(session, server.url, "empty_stream")
        await _chat(session, server.url, "http_500")
        await _chat(session, server.url, "truncated_stream")
        await _chat(session, server.url, "inband_error")
        async with session.get(server.url + "/metrics") as response:
            assert response.status == 200
            assert response.content_type == "text/plain"
            samples = parse_exposition(await response.text())
    assert detect_kind(samples) is ServerKind.vllm
    assert samples["vllm:request_success_total"] == 6
    assert samples["vllm:generation_tokens_total"] == 5 * 8 + 2 * 2
    assert samples["vllm:num_requests_running"] == 0
    assert samples["vllm:prompt_tokens_total"] > 0


async def test_metrics_count_a_cut_transcription_stream_as_a_cut_chat() -> None:
    form = transcription_form(2.0, stream="true")  # six tokens; cut after two
    async with open_mock_server(MockConfig()) as server, aiohttp.ClientSession() as session:
        status, _, _ = await post_transcription(server.url, form, "truncated_stream")
        assert status == 200
        async with session.get(server.url + "/metrics") as response:
            samples = parse_exposition(await response.text())
    assert samples["vllm:request_success_total"] == 0
    assert samples["vllm:generation_tokens_total"] == 2
    assert samples["vllm:prompt_tokens_total"] > 0


async def test_metrics_scale_makes_the_mock_misreport() -> None:
    config = MockConfig(metrics_scale=0.5)
    async with open_mock_server(config) as server, aiohttp.ClientSession() as session:
        for _ in range(4):
            await _chat(session, server.url)
        async with session.get(server.url + "/metrics") as response:
            samples = parse_exposition(await response.text())
    assert samples["vllm:request_success_total"] == 2
    assert samples["vllm:generation_tokens_total"] == 16


def test_metrics_of_several_worker_processes_add_up_whichever_answers_the_scrape() -> None:
    with start_mock_processes(MockConfig(), workers=2) as url:
        for _ in range(12):
            request = urllib.request.Request(
                url + "/v1/completions",
                data=orjson.dumps({"prompt": "hello", "max_tokens": 3}),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        for _ in range(4):  # each scrape may reach either worker: every one sees the total
            with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
                samples = parse_exposition(response.read().decode())
            assert samples["vllm:request_success_total"] == 12
            assert samples["vllm:generation_tokens_total"] == 36


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book_table",
            "parameters": {
                "type": "object",
                "properties": {"guests": {"type": "integer"}, "city": {"type": "string"}},
            },
        },
    }
]


def _usage_tokens(raw: bytes, stream: bool) -> int:
    """The completion tokens the answer's usage reports (0 when it reports none)."""
    if not stream:
        usage = orjson.loads(raw).get("usage") or {}
        return int(usage.get("completion_tokens", 0))
    tokens = 0
    for line in raw.decode().splitlines():
        if line.startswith("data: {"):
            usage = orjson.loads(line[6:]).get("usage") or {}
            tokens = int(usage.get("completion_tokens", tokens))
    return tokens


_ANSWER_KINDS: list[tuple[str | None, dict[str, object]]] = [
    (None, {}),
    (None, {"tools": TOOLS}),
    ("invalid_tool_call", {}),
    ("invalid_tool_call", {"tools": TOOLS}),
    ("empty_stream", {}),
    ("missing_finish_reason", {}),
    ("short_output", {"ignore_eos": True}),
]


@pytest.mark.parametrize(
    ("stream", "fault", "extra"),
    [(stream, fault, extra) for stream in (True, False) for fault, extra in _ANSWER_KINDS]
    # missing_done is a streamed fault: an answer in one body has no [DONE] to leave out.
    + [(True, "missing_done", {})],
)
async def test_metrics_count_the_tokens_every_answer_kind_reports(
    stream: bool, fault: str | None, extra: dict[str, object]
) -> None:
    # Issue 20 item 3: with tool calls the mock counted its text plan, not the tool call's
    # arguments its usage reported ("server generated 960 tokens; assay counted 294").
    headers = {FAULT_HEADER: fault} if fault else {}
    body = {
        "messages": [{"role": "user", "content": "book a table"}],
        "max_tokens": 40,
        "stream": stream,
        **({"stream_options": {"include_usage": True}} if stream else {}),
        **extra,
    }
    async with open_mock_server(MockConfig()) as server, aiohttp.ClientSession() as session:
        async with session.post(
            server.url + "/v1/chat/completions", json=body, headers=headers
        ) as answer:
            assert answer.status == 200
            reported = _usage_tokens(await answer.read(), stream)
        async with session.get(server.url + "/metrics") as response:
            samples = parse_exposition(await response.text())
    assert samples["vllm:request_success_total"] == 1
    assert samples["vllm:generation_tokens_total"] == reported
