"""Tokens the transport delivers in one read: a real loopback stream through the backend, then
the aggregator. Issue 10 item 13: such tokens gave zero ITL gaps (ITL p50 0.00 ms under load)."""

from __future__ import annotations

import asyncio

from pydantic import SecretStr
from returns.result import Failure, Success

from assay.backend import BackendSettings, Timeouts, open_backend
from assay.core import GenerationResponse, MonotonicClock, outcome
from assay.metrics import StepAggregator
from assay.records import Completed, RequestRecord
from tests.backend.backend_loopback import (
    API_KEY,
    chat_chunk,
    chat_request,
    http_chunk,
    response_head,
    serve_raw,
)

# Long enough that two writes this far apart are two reads on loopback.
PAUSE_S = 0.1


async def two_tokens_per_write(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    """One token, then two tokens in one write, then the last token and the end."""
    writer.write(response_head() + http_chunk(chat_chunk("Rivers")))
    await writer.drain()
    await asyncio.sleep(PAUSE_S)
    writer.write(http_chunk(chat_chunk(" run") + chat_chunk(" to")))
    await writer.drain()
    await asyncio.sleep(PAUSE_S)
    writer.write(
        http_chunk(chat_chunk(" sea", finish_reason="stop") + b"data: [DONE]\n\n") + b"0\r\n\r\n"
    )
    await writer.drain()


async def resolve(url: str) -> GenerationResponse:
    settings = BackendSettings(
        base_url=url,
        api_key=SecretStr(API_KEY),
        timeouts=Timeouts(connect_s=5, first_token_s=5, idle_s=5, total_s=10),
    )
    async with open_backend(settings, MonotonicClock()) as backend:
        match outcome(await backend.resolve(chat_request())):
            case Success(response):
                return response
            case Failure(unusable):
                raise AssertionError(f"expected a usable answer, got {unusable.message}")


async def test_tokens_read_together_count_as_coalesced_gaps_not_zero_itl() -> None:
    async with serve_raw(two_tokens_per_write) as server:
        response = await resolve(server.url)
    times = response.timing.chunk_times_ns
    assert len(times) == 4
    assert times[1] == times[2]  # one read, one arrival time: the transport hid their gap
    aggregator = StepAggregator()
    aggregator.add(
        RequestRecord[GenerationResponse](
            request_id="r1",
            targeted_start_ns=response.timing.send_ns,
            dispatched_ns=response.timing.send_ns,
            finished_ns=response.timing.end_ns,
            outcome=Completed(response=response),
        )
    )
    latency = aggregator.snapshot().latency
    assert latency.itl_coalesced_gaps == 1
    assert latency.itl_ms is not None
    assert latency.itl_ms.count == 3
    assert latency.itl_ms.min > 0  # no zero gap: the read's gap is spread over its two tokens
