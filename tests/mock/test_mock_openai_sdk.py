"""The official openai SDK talks to the mock: every endpoint, streamed and not, parses cleanly."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from openai import AsyncOpenAI

from assay.data.tokenizer import BuiltinTokenizer

TOKENIZER = BuiltinTokenizer()
QUESTION = "Summarise the history of the printing press in three sentences."


@pytest.fixture
async def client(mock_url: str) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=mock_url + "/v1", api_key="x", max_retries=0) as client:
        yield client


async def test_sdk_lists_the_mock_model(client: AsyncOpenAI) -> None:
    models = await client.models.list()
    assert [m.id for m in models.data] == ["assay-mock"]


async def test_sdk_chat_completion_is_cut_at_max_tokens(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.create(
        model="assay-mock",
        messages=[{"role": "user", "content": QUESTION}],
        max_completion_tokens=8,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.role == "assistant"
    assert choice.message.content is not None
    assert TOKENIZER.count(choice.message.content) == 8
    assert completion.usage is not None
    assert completion.usage.completion_tokens == 8
    assert completion.usage.prompt_tokens == TOKENIZER.count(QUESTION)


async def test_sdk_chat_stream_has_role_content_finish_and_usage_chunks(
    client: AsyncOpenAI,
) -> None:
    stream = await client.chat.completions.create(
        model="assay-mock",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": QUESTION},
        ],
        max_tokens=5,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    content_chunks = [c for c in chunks[1:] if c.choices]
    assert len(content_chunks) == 5
    assert [c.choices[0].finish_reason for c in content_chunks] == [None] * 4 + ["length"]
    text = "".join(c.choices[0].delta.content or "" for c in content_chunks)
    assert TOKENIZER.count(text) == 5
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == []
    assert usage_chunk.usage is not None
    assert usage_chunk.usage.completion_tokens == 5
    assert usage_chunk.usage.prompt_tokens == TOKENIZER.count("Be brief.") + TOKENIZER.count(
        QUESTION
    )


async def test_sdk_completions_streamed_and_whole(client: AsyncOpenAI) -> None:
    whole = await client.completions.create(model="assay-mock", prompt=QUESTION, max_tokens=4)
    assert whole.choices[0].finish_reason == "length"
    assert TOKENIZER.count(whole.choices[0].text) == 4
    stream = await client.completions.create(
        model="assay-mock", prompt=QUESTION, max_tokens=4, stream=True
    )
    pieces = [chunk.choices[0].text async for chunk in stream if chunk.choices]
    assert len(pieces) == 4
    assert TOKENIZER.count("".join(pieces)) == 4


async def test_sdk_response_cut_at_max_output_tokens_is_incomplete(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="assay-mock", input=QUESTION, max_output_tokens=6
    )
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert TOKENIZER.count(response.output_text) == 6
    assert response.usage is not None
    assert response.usage.output_tokens == 6
    assert response.usage.input_tokens == TOKENIZER.count(QUESTION)


async def test_sdk_response_stream_follows_the_event_sequence(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="assay-mock", input=QUESTION, max_output_tokens=64, stream=True
    )
    events = [event async for event in stream]
    types = [event.type for event in events]
    deltas = types.count("response.output_text.delta")
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.status == "completed"
    assert completed.response.usage is not None
    assert completed.response.usage.output_tokens == deltas == 16
    assert TOKENIZER.count(completed.response.output_text) == 16


async def test_sdk_embeddings_have_the_configured_dimension_and_usage(
    client: AsyncOpenAI,
) -> None:
    inputs = ["the first passage", "a second, longer passage of text"]
    result = await client.embeddings.create(model="assay-mock", input=inputs)
    assert [e.index for e in result.data] == [0, 1]
    assert all(len(e.embedding) == 384 for e in result.data)
    assert result.usage.prompt_tokens == sum(TOKENIZER.count(text) for text in inputs)
    # The SDK asks for base64 by default; float32 and float answers carry the same vector.
    floats = await client.embeddings.create(
        model="assay-mock", input=inputs[0], encoding_format="float"
    )
    assert floats.data[0].embedding == pytest.approx(result.data[0].embedding, abs=1e-6)
    assert sum(x * x for x in floats.data[0].embedding) == pytest.approx(1.0)
    short = await client.embeddings.create(model="assay-mock", input=inputs[0], dimensions=16)
    assert len(short.data[0].embedding) == 16
