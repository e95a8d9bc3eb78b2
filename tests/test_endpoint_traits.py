"""The traits of each endpoint, and the decisions of the other layers that follow them.

Every layer decides by an endpoint's traits (`Endpoint.traits`), never by naming an endpoint:
the default validator chain and the metrics by the kind of answer, a request's body by what
the endpoint carries, whether it streams and whether it generates tokens.
"""

from __future__ import annotations

import pytest

from assay.core import GenerationResponse, ResponseTiming, TextAnswer, TokenSource, Usage
from assay.core.answer import answer_type
from assay.data import FixedCount, SyntheticSource
from assay.metrics import StepAggregator
from assay.records import Completed, RequestRecord
from assay.spec.endpoint import Answer, Carries, Endpoint, EndpointTraits
from assay.validators import default_chain

EXPECTED: dict[Endpoint, EndpointTraits] = {
    Endpoint.completions: EndpointTraits(
        path="/v1/completions",
        carries=Carries.prompt,
        answer=Answer.text,
        streams=True,
        terminal_marker="[DONE]",
        streams_finish_reason=True,
        takes_conversation=True,
        limit_keys=("max_tokens",),
    ),
    Endpoint.chat: EndpointTraits(
        path="/v1/chat/completions",
        carries=Carries.messages,
        answer=Answer.text,
        streams=True,
        terminal_marker="[DONE]",
        streams_finish_reason=True,
        takes_conversation=True,
        limit_keys=("max_tokens", "max_completion_tokens"),
    ),
    Endpoint.responses: EndpointTraits(
        path="/v1/responses",
        carries=Carries.prompt,
        answer=Answer.text,
        streams=True,
        terminal_marker="response.completed",
        streams_finish_reason=False,
        takes_conversation=True,
        limit_keys=("max_output_tokens",),
    ),
    Endpoint.embeddings: EndpointTraits(
        path="/v1/embeddings",
        carries=Carries.inputs,
        answer=Answer.vectors,
        streams=False,
        terminal_marker=None,
        streams_finish_reason=False,
        takes_conversation=False,
    ),
    Endpoint.rerank: EndpointTraits(
        path="/v1/rerank",
        carries=Carries.documents,
        answer=Answer.scores,
        streams=False,
        terminal_marker=None,
        streams_finish_reason=False,
        takes_conversation=False,
    ),
    Endpoint.score: EndpointTraits(
        path="/v1/score",
        carries=Carries.documents,
        answer=Answer.scores,
        streams=False,
        terminal_marker=None,
        streams_finish_reason=False,
        takes_conversation=False,
    ),
    Endpoint.transcriptions: EndpointTraits(
        path="/v1/audio/transcriptions",
        carries=Carries.audio,
        answer=Answer.text,
        streams=True,
        terminal_marker="[DONE]",
        streams_finish_reason=False,
        takes_conversation=False,
        limit_keys=("max_completion_tokens",),
    ),
}


def test_each_endpoint_keeps_its_traits() -> None:
    # A pin of the traits of the endpoints there were when it was written (none of them may
    # drift); a new endpoint is not pinned here, but held to the rules below on every endpoint.
    for endpoint, traits in EXPECTED.items():
        assert endpoint.traits == traits
        assert endpoint.path == traits.path


def test_embeddings_answer_vectors_in_one_body_and_generate_nothing() -> None:
    traits = Endpoint.embeddings.traits
    assert traits.answer is Answer.vectors
    assert not traits.streams
    assert traits.terminal_marker is None
    assert not traits.generates
    assert not traits.takes_conversation


def test_only_text_answers_generate_tokens() -> None:
    for endpoint in Endpoint:
        traits = endpoint.traits
        assert traits.generates is (traits.answer is Answer.text)
        assert bool(traits.limit_keys) is traits.generates


def test_an_endpoint_that_streams_names_what_ends_its_stream() -> None:
    for endpoint in Endpoint:
        traits = endpoint.traits
        assert (traits.terminal_marker is not None) is traits.streams
        assert not traits.streams_finish_reason or traits.streams


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("allow_missing_done", [False, True])
def test_the_default_chain_is_decided_by_the_kind_of_answer(
    strict: bool, allow_missing_done: bool
) -> None:
    # One chain per kind of answer: endpoints that answer alike share it, whatever their name.
    chains: dict[Answer, set[str]] = {}
    for endpoint in Endpoint:
        chosen = default_chain(endpoint, strict=strict, allow_missing_done=allow_missing_done)
        chains.setdefault(endpoint.traits.answer, set()).add(str(chosen))
    assert chains[Answer.vectors] == {"chain(empty_embedding)"}
    assert chains[Answer.scores] == {
        "chain(no_results, result_count_mismatch, invalid_result_index, non_finite_score)"
    }
    (text_chain,) = chains[Answer.text]
    assert "empty_response" in text_chain
    assert "empty_embedding" not in text_chain


def _completed(endpoint: Endpoint) -> RequestRecord[GenerationResponse]:
    response = GenerationResponse(
        request_id="r1",
        endpoint=endpoint,
        streamed=False,
        answer=TextAnswer(text="Paris.")
        if endpoint.traits.generates
        else answer_type(endpoint.traits.answer)(),
        finish_reason="stop" if endpoint.traits.generates else None,
        usage=Usage(prompt_tokens=4, completion_tokens=3 if endpoint.traits.generates else None),
        timing=ResponseTiming(send_ns=0, end_ns=2_000_000),
    )
    return RequestRecord[GenerationResponse](
        request_id="r1",
        targeted_start_ns=0,
        dispatched_ns=0,
        finished_ns=2_000_000,
        outcome=Completed(response=response),
    )


@pytest.mark.parametrize("endpoint", list(Endpoint))
def test_metrics_count_output_tokens_only_for_a_text_answer(endpoint: Endpoint) -> None:
    aggregator = StepAggregator()
    aggregator.add(_completed(endpoint))
    tokens = aggregator.snapshot().tokens
    kind, generates = endpoint.traits.answer, endpoint.traits.generates
    assert tokens.output_sources == ({TokenSource.usage: 1} if generates else {})
    assert (tokens.output_per_request is not None) is generates
    assert (tokens.embeddings, tokens.scored) == (kind is Answer.vectors, kind is Answer.scores)


@pytest.mark.parametrize("endpoint", list(Endpoint))
@pytest.mark.parametrize("stream", [False, True])
def test_a_synthetic_request_is_shaped_by_the_traits(endpoint: Endpoint, stream: bool) -> None:
    traits = endpoint.traits
    source = SyntheticSource(
        endpoint=endpoint,
        model="m",
        prompt_tokens=FixedCount(value=8),
        stream=stream,
        audio_seconds=1.0 if traits.carries is Carries.audio else 0.0,
    )
    request = source.request(0)
    assert request.stream is (stream and traits.streams)
    assert (request.max_output_tokens is not None) is traits.generates
    match traits.carries:
        case Carries.messages:
            assert request.messages is not None
            assert request.prompt is None
        case Carries.prompt | Carries.inputs:
            assert request.messages is None
            assert request.prompt is not None
            assert request.documents is None
        case Carries.documents:
            assert request.messages is None
            assert isinstance(request.prompt, str)
            assert request.documents is not None
            assert len(request.documents) == source.documents
        case Carries.audio:
            assert request.messages is None
            assert request.prompt is None
            assert request.audio_file is not None
