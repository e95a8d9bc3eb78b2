"""A response keeps a bounded number of chunk times (issue 21.8): an errored endless stream kept
every one (435,200 entries, ~7 MB per records.jsonl line). Past `MAX_KEPT_CHUNK_TIMES` entries
neighbours are merged pairwise and the record says how many were merged away; the counts of
chunks and tokens stay exact, and the inter-token latency keeps its total."""

from __future__ import annotations

import orjson
import pytest

from assay.core import Endpoint, GenerationRequest
from assay.core.response import MAX_KEPT_CHUNK_TIMES
from assay.handlers import SseParser, Transfer, handler_for
from assay.metrics import StepAggregator
from assay.records import Completed, RequestRecord
from tests.handlers.handler_results import fault, ok

STEP_NS = 1_000
CHAT = GenerationRequest(
    request_id="r", endpoint=Endpoint.chat, model="m", messages=({"role": "user", "content": "x"},)
)


def _chunk(text: str) -> bytes:
    body = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions])
@pytest.mark.parametrize("ending", [b"data: [DONE]\n\n", b"event: error\ndata: {}\n\n"])
def test_a_giant_stream_keeps_at_most_the_cap_of_chunk_times_and_says_so(
    endpoint: Endpoint, ending: bytes
) -> None:
    chunks = 5 * MAX_KEPT_CHUNK_TIMES + 3
    if endpoint is Endpoint.chat:  # two shapes of the same chunk
        request = GenerationRequest(
            request_id="r",
            endpoint=endpoint,
            model="m",
            messages=({"role": "user", "content": "x"},),
        )
        one = _chunk("a")
    else:
        request = GenerationRequest(request_id="r", endpoint=endpoint, model="m", prompt="x")
        one = b'data: {"object": "text_completion", "choices": [{"index": 0, "text": "a"}]}\n\n'
    accumulator = handler_for(endpoint).open_accumulator(request, send_ns=0)
    parser = SseParser()
    now = 0
    for _ in range(chunks):
        for event in parser.feed(one):
            now += STEP_NS
            accumulator.feed(event, now)
    for event in parser.feed(ending):
        accumulator.feed(event, now)
    result = accumulator.finish(Transfer(send_ns=0, end_ns=now + STEP_NS))
    # A completed answer, or the partial answer kept as the evidence of an errored one.
    response = ok(result) if b"DONE" in ending else fault(result).evidence.partial
    assert response is not None
    timing = response.timing
    assert len(timing.chunk_times_ns) <= MAX_KEPT_CHUNK_TIMES
    assert len(timing.chunk_times_ns) + timing.merged_chunk_times == chunks
    assert response.content_chunks == chunks
    assert response.streamed_tokens == chunks
    assert sum(timing.chunk_tokens) == chunks
    assert timing.chunk_times_ns[-1] == now  # the last chunk's time is kept exactly
    assert len(response.text) == chunks


def test_merged_chunk_times_keep_the_inter_token_latency_average() -> None:
    request = GenerationRequest(
        request_id="r",
        endpoint=Endpoint.chat,
        model="m",
        messages=({"role": "user", "content": "x"},),
    )
    accumulator = handler_for(Endpoint.chat).open_accumulator(request, send_ns=0)
    parser = SseParser()
    chunks = 3 * MAX_KEPT_CHUNK_TIMES
    now = 0
    for _ in range(chunks):
        for event in parser.feed(_chunk("a")):
            now += STEP_NS
            accumulator.feed(event, now)
    for event in parser.feed(b"data: [DONE]\n\n"):
        accumulator.feed(event, now)
    response = ok(accumulator.finish(Transfer(send_ns=0, end_ns=now + STEP_NS)))
    assert response.timing.merged_chunk_times > 0
    aggregator = StepAggregator()
    aggregator.add(
        RequestRecord(
            request_id="r", targeted_start_ns=0, dispatched_ns=0, finished_ns=now + STEP_NS,
            outcome=Completed(response=response),
        )
    )  # fmt: skip
    itl = aggregator.snapshot().latency.itl_ms
    assert itl is not None
    assert itl.mean == pytest.approx(STEP_NS / 1e6, rel=1e-6)
