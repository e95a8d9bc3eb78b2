"""Every record carries the ids that join it to the server's view (issue 23): the request id
sent, the one echoed, the answer's own id and the traceparent, checked against what the mock
logged for that very request."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import orjson
import pytest
from pydantic import SecretStr

from assay.backend import BackendSettings, Timeouts, open_backend, wire_request_id
from assay.backend.trace_context import TraceContext
from assay.core import Endpoint, GenerationRequest, GenerationResponse, MonotonicClock
from assay.mock.config import MockConfig
from assay.mock.faults import FAULT_HEADER
from assay.records import record_from_line, record_line
from assay.records.record import Completed, Errored, RequestRecord
from assay.validators import default_chain
from assay.worker import execute
from tests.backend.backend_loopback import serve_raw
from tests.backend.test_against_mock import MODES, request_for
from tests.conftest import StartMock

TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]")
API_KEY = "sk-ids-5c7e1a9d3b"


async def send(
    url: str,
    request: GenerationRequest,
    *,
    headers: dict[str, str] | None = None,
    trace: TraceContext | None = None,
    request_id_header: str | None = "X-Request-Id",
) -> RequestRecord[GenerationResponse]:
    settings = BackendSettings(
        base_url=url,
        api_key=SecretStr(API_KEY),
        headers=headers or {},
        timeouts=Timeouts(first_token_s=5.0, idle_s=5.0, total_s=5.0),
        trace_context=trace,
        request_id_header=request_id_header,
    )
    clock = MonotonicClock()
    async with open_backend(settings, clock) as backend:
        return await execute(
            request,
            request_id=request.request_id,
            resolve=backend.resolve,
            validate=default_chain(request.endpoint),
            clock=clock,
            targeted_start_ns=clock.now_ns(),
            sink=lambda _: None,
        )


def logged(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def stored_ids(record: RequestRecord[GenerationResponse]) -> dict[str, object]:
    """The ids as records.jsonl holds them (what a user reads), after a round trip."""
    line = orjson.loads(orjson.dumps(record_line(record)))
    assert record_from_line(line) == record
    ids = line["ids"]
    assert isinstance(ids, dict)
    return ids


@pytest.mark.parametrize(("endpoint", "stream"), MODES)
async def test_sent_echoed_and_answer_ids_match_what_the_mock_logged(
    start_mock: StartMock, tmp_path: Path, endpoint: Endpoint, stream: bool
) -> None:
    wire = tmp_path / "wire.jsonl"
    server = await start_mock(MockConfig(record_requests=wire))
    trace = TraceContext(seed=3)
    record = await send(server.url, request_for(endpoint, stream), trace=trace)
    assert isinstance(record.outcome, Completed), record.outcome
    [seen] = logged(wire)
    ids = stored_ids(record)
    assert ids["sent_header"] == "X-Request-Id"
    assert ids["sent"] == seen["request_id"] == wire_request_id(record.request_id)
    assert ids["echoed"] == ids["sent"]
    assert ids["answer"] == seen["answer_id"]
    assert ids["traceparent"] == seen["traceparent"] == trace.traceparent(record.request_id)
    assert TRACEPARENT.fullmatch(str(ids["traceparent"]))


async def test_an_errored_stream_keeps_the_ids_on_its_partial_answer(
    start_mock: StartMock, tmp_path: Path
) -> None:
    wire = tmp_path / "wire.jsonl"
    server = await start_mock(MockConfig(record_requests=wire))
    request = request_for(Endpoint.chat, True, "truncated_stream")
    record = await send(server.url, request, headers={FAULT_HEADER: "truncated_stream; after=2"})
    assert isinstance(record.outcome, Errored), record.outcome
    assert record.outcome.diagnostic.evidence.partial is not None
    [seen] = logged(wire)
    ids = stored_ids(record)
    assert ids["sent"] == ids["echoed"] == seen["request_id"]
    assert ids["answer"] == seen["answer_id"]


async def test_an_error_status_keeps_the_echoed_id_on_its_evidence(
    start_mock: StartMock, tmp_path: Path
) -> None:
    wire = tmp_path / "wire.jsonl"
    server = await start_mock(MockConfig(record_requests=wire))
    request = request_for(Endpoint.chat, True, "http_500")
    record = await send(server.url, request, headers={FAULT_HEADER: "http_500"})
    assert isinstance(record.outcome, Errored), record.outcome
    evidence = record.outcome.diagnostic.evidence
    assert evidence.partial is None
    assert evidence.ids is not None
    [seen] = logged(wire)
    ids = stored_ids(record)
    assert ids["sent"] == ids["echoed"] == seen["request_id"]
    assert ids["answer"] is None


async def test_without_a_request_id_header_the_mock_invents_the_echo(mock_url: str) -> None:
    record = await send(mock_url, request_for(Endpoint.chat, False), request_id_header=None)
    ids = stored_ids(record)
    assert ids["sent_header"] is None
    assert ids["sent"] is None
    assert re.fullmatch(r"[0-9a-f]{32}", str(ids["echoed"]))  # a uuid4 hex, as vLLM's


async def test_an_echoed_id_is_capped_and_redacted() -> None:
    echo = f"{API_KEY}-" + "x" * 5000
    body = orjson.dumps(
        {"id": "cmpl-1", "choices": [{"index": 0, "text": "hi", "finish_reason": "stop"}]}
    )

    async def answer(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"X-Request-Id: {echo}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()

    async with serve_raw(answer) as served:
        record = await send(served.url, request_for(Endpoint.completions, False))
    ids = stored_ids(record)
    echoed = str(ids["echoed"])
    assert API_KEY not in echoed
    assert len(echoed) < 300
    assert echoed.endswith("more]")
    assert ids["answer"] == "cmpl-1"


async def test_traceparent_is_deterministic_per_seed_and_distinct_per_request() -> None:
    ids = [f"req-{index:08d}" for index in range(2000)]
    first = [TraceContext(seed=42).traceparent(request_id) for request_id in ids]
    again = [TraceContext(seed=42).traceparent(request_id) for request_id in ids]
    other = [TraceContext(seed=43).traceparent(request_id) for request_id in ids]
    assert first == again
    assert all(TRACEPARENT.fullmatch(value) for value in first)
    assert len({value[3:35] for value in first}) == len(ids)
    assert len({value[36:52] for value in first}) == len(ids)
    assert not set(first) & set(other)


@pytest.mark.parametrize(
    ("sample", "low", "high"), [(0.0, 0, 0), (1.0, 2000, 2000), (0.25, 400, 600)]
)
def test_trace_sample_sets_the_sampled_flag_on_that_fraction(
    sample: float, low: int, high: int
) -> None:
    context = TraceContext(seed=42, sample=sample)
    flags = [context.traceparent(f"req-{index:08d}")[-2:] for index in range(2000)]
    assert low <= flags.count("01") <= high
    assert flags == [
        TraceContext(seed=42, sample=sample).traceparent(f"req-{index:08d}")[-2:]
        for index in range(2000)
    ]
