"""Synthetic requests are built unvalidated; they must equal their validated copies."""

from __future__ import annotations

from assay.core import Endpoint, GenerationRequest
from assay.data import FixedCount, SyntheticSource, UniformCount, index_rng


def _same_as_validated(request: GenerationRequest) -> None:
    rebuilt = GenerationRequest.model_validate(request.model_dump())
    assert rebuilt == request
    assert rebuilt.model_dump_json() == request.model_dump_json()
    assert list(rebuilt.__dict__) == list(request.__dict__)


def test_synthetic_chat_request_equals_its_validated_copy() -> None:
    source = SyntheticSource(
        model="tiny-llama",
        prompt_tokens=UniformCount(min=8, max=40),
        output_tokens=FixedCount(value=16),
        shared_prefix_tokens=4,
        ignore_eos=True,
        seed=11,
        extra_body={"temperature": 0.0},
    )
    request = source.request(3)
    assert request.messages is not None
    assert request.extra_body == {"temperature": 0.0}
    _same_as_validated(request)


def test_synthetic_embeddings_batch_equals_its_validated_copy() -> None:
    source = SyntheticSource(
        model="bge",
        endpoint=Endpoint.embeddings,
        prompt_tokens=FixedCount(value=6),
        embeddings_batch_size=3,
    )
    request = source.request(0)
    assert isinstance(request.prompt, tuple)
    assert not request.stream
    _same_as_validated(request)


def test_negative_and_positive_seeds_draw_different_streams() -> None:
    draws = {index_rng(seed, index).random() for seed in (-2, -1, 0, 1, 2) for index in range(4)}
    assert len(draws) == 20
