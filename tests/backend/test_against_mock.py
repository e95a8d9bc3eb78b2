"""Backend + handlers + default validators + worker against the project's mock, over loopback.

Every mock fault must end as an errored record with the fault's code, never as completed; every
clean answer, streamed or not, on every endpoint, must complete with the mock's token counts.
"""

from __future__ import annotations

import random

import pytest
from pydantic import JsonValue, SecretStr

from assay.backend import BackendSettings, Timeouts, open_backend
from assay.core import (
    Endpoint,
    GenerationRequest,
    GenerationResponse,
    MonotonicClock,
    Scores,
    ScoreSummary,
    TextAnswer,
    Vectors,
)
from assay.data.media import synthetic_wav
from assay.mock.faults import FAULT_HEADER, FAULTS
from assay.mock.per_endpoint import fault_applies
from assay.records.record import Completed, Errored, RequestRecord
from assay.spec.endpoint import Carries
from assay.validators import default_chain
from assay.worker import execute

API_KEY = "sk-mock-4e1d8b2f90c7a6"
OUTPUT_TOKENS = 12
DOCUMENTS = ("rivers run to the sea", "the sea does not fill", "clouds carry the water back")
TOOLS: JsonValue = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MODES = [
    (endpoint, stream)
    for endpoint in Endpoint
    for stream in (True, False)
    if endpoint.traits.streams or not stream
]
FAULT_CASES = [
    pytest.param(name, endpoint, stream, id=f"{name}-{endpoint}-{'stream' if stream else 'body'}")
    for name in FAULTS
    for endpoint, stream in MODES
    if fault_applies(name, endpoint, stream)
]


def request_for(endpoint: Endpoint, stream: bool, fault: str | None = None) -> GenerationRequest:
    """A realistic request; the shape some faults need (JSON mode, tools, ignore_eos) added."""
    extra: dict[str, JsonValue] = {}
    if fault == "invalid_json_output":
        extra["response_format"] = {"type": "json_object"}
        if endpoint is Endpoint.responses:
            extra["text"] = {"format": {"type": "json_object"}}
    if fault == "invalid_tool_call":
        extra["tools"] = TOOLS
    if endpoint.traits.carries is Carries.documents:
        return GenerationRequest(
            request_id=f"{endpoint}-1",
            endpoint=endpoint,
            model="assay-mock",
            prompt="where do rivers go",
            documents=DOCUMENTS,
            stream=False,
        )
    if endpoint is Endpoint.embeddings:
        return GenerationRequest(
            request_id="emb-1",
            endpoint=endpoint,
            model="assay-mock",
            prompt=("rivers run to the sea", "the sea does not fill"),
            stream=False,
        )
    if endpoint is Endpoint.transcriptions:
        # 4 s of audio: the mock's transcript is ceil(4 * 3) = 12 tokens, OUTPUT_TOKENS.
        return GenerationRequest(
            request_id="transcription-1",
            endpoint=endpoint,
            model="assay-mock",
            audio_file=synthetic_wav(4.0, random.Random(1)),
            audio_seconds=4.0,
            max_output_tokens=OUTPUT_TOKENS,
            stream=stream,
        )
    return GenerationRequest(
        request_id=f"{endpoint}-1",
        endpoint=endpoint,
        model="assay-mock",
        messages=({"role": "user", "content": "Write one line about rivers."},)
        if endpoint is Endpoint.chat
        else None,
        prompt=None if endpoint is Endpoint.chat else "Write one line about rivers.",
        max_output_tokens=OUTPUT_TOKENS,
        # Exact lengths for the clean runs; faults other than short_output do without, so a
        # shortened answer reports its own fault rather than max_tokens_not_honoured.
        ignore_eos=fault in (None, "short_output"),
        stream=stream,
        extra_body=extra,
    )


async def run_one(
    url: str,
    request: GenerationRequest,
    headers: dict[str, str] | None = None,
    timeouts: Timeouts | None = None,
    strict: bool = False,
) -> RequestRecord[GenerationResponse]:
    settings = BackendSettings(
        base_url=url,
        api_key=SecretStr(API_KEY),
        headers=headers or {},
        timeouts=timeouts or Timeouts(first_token_s=5.0, idle_s=5.0, total_s=5.0),
    )
    clock = MonotonicClock()
    sunk: list[RequestRecord[GenerationResponse]] = []
    async with open_backend(settings, clock) as backend:
        record = await execute(
            request,
            request_id=request.request_id,
            resolve=backend.resolve,
            validate=default_chain(request.endpoint, strict=strict),
            clock=clock,
            targeted_start_ns=clock.now_ns(),
            sink=sunk.append,
        )
    assert sunk == [record]
    assert API_KEY not in record.model_dump_json()
    return record


@pytest.mark.parametrize(("fault", "endpoint", "stream"), FAULT_CASES)
async def test_every_mock_fault_is_errored_with_its_code(
    mock_url: str, fault: str, endpoint: Endpoint, stream: bool
) -> None:
    header = f"{fault}; after=2; seconds=3" if fault == "stall" else f"{fault}; after=2"
    timeouts = Timeouts(first_token_s=5.0, idle_s=0.2, total_s=5.0) if fault == "stall" else None
    record = await run_one(
        mock_url,
        request_for(endpoint, stream, fault),
        headers={FAULT_HEADER: header},
        timeouts=timeouts,
        strict=fault == "missing_finish_reason",
    )
    assert isinstance(record.outcome, Errored), record.outcome
    diagnostic = record.outcome.diagnostic
    assert diagnostic.code is FAULTS[fault].code, diagnostic.message
    assert diagnostic.message


@pytest.mark.parametrize(("endpoint", "stream"), MODES)
async def test_clean_answer_completes_with_the_mock_token_counts(
    mock_url: str, endpoint: Endpoint, stream: bool
) -> None:
    record = await run_one(mock_url, request_for(endpoint, stream))
    assert isinstance(record.outcome, Completed), record.outcome
    response = record.outcome.response
    assert response.streamed is stream
    assert response.usage is not None
    assert response.answer.kind is endpoint.traits.answer
    answer = response.answer
    # What the mock's clean answer holds, for the kinds with a summary to check here (a kind
    # without one is held to its kind above, and to its own end-to-end test).
    if isinstance(answer, Vectors):
        assert answer.summary is not None
        assert answer.summary.count == 2
    elif isinstance(answer, Scores):
        assert answer == Scores(summary=ScoreSummary(count=3, lowest_index=0, highest_index=2))
        assert response.output_tokens == 0
        assert response.usage.prompt_tokens is not None
        assert response.usage.prompt_tokens > 0
    elif endpoint is Endpoint.transcriptions and not stream:
        # A whole transcript's usage is seconds of audio (vLLM's), not tokens.
        assert response.usage.completion_tokens is None
        assert response.text
        assert response.sent is not None
        assert response.sent.audio_seconds == 4.0
    elif isinstance(answer, TextAnswer):
        _assert_generated(response, stream)


def _assert_generated(response: GenerationResponse, stream: bool) -> None:
    """A generated answer holds the mock's token count, in order in time."""
    assert response.usage is not None
    assert response.usage.completion_tokens == OUTPUT_TOKENS
    assert response.output_tokens == OUTPUT_TOKENS
    if stream:
        assert response.streamed_tokens == OUTPUT_TOKENS
        assert len(response.timing.chunk_times_ns) == len(response.timing.chunk_tokens)
        assert sum(response.timing.chunk_tokens) == OUTPUT_TOKENS
    timing = response.timing
    assert timing.first_byte_ns is not None
    assert timing.send_ns <= timing.first_byte_ns <= timing.end_ns
