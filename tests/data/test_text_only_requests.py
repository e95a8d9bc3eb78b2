"""A synthetic source of plain text prompts builds each request from the fields its requests
share; the request, and the body sent for it, are those the general path builds, byte for byte.
The per-index random stream is the one `random.Random` seeds from the same integer."""

from __future__ import annotations

import random

import orjson
import pytest
from pydantic import JsonValue

from assay.core import Endpoint, GenerationRequest
from assay.data import FixedCount, NormalCount, SyntheticSource, UniformCount, index_rng
from assay.data.token_count import TokenCount
from assay.handlers import handler_for

SEEDS = [0, 1, 7, -3, 2**40]
INDICES = [*range(40), 511, 4_096, 99_999, 10**7]
PROMPTS: dict[str, TokenCount] = {
    "1": FixedCount(value=1),
    "128": FixedCount(value=128),
    "8192": FixedCount(value=8_192),
    "uniform": UniformCount(min=1, max=300),
    "normal": NormalCount(mean=64, stdev=40, min=2, max=200),
}
_EXTRA: dict[str, JsonValue] = {"max_tokens": 5, "ignore_eos": True, "temperature": 0}
VARIANTS: dict[str, dict[str, object]] = {
    "plain": {},
    "ignore-eos-uniform-output": {"ignore_eos": True, "output_tokens": UniformCount(min=1, max=64)},
    "shared-prefix": {"shared_prefix_tokens": 1},
    "extra-body": {"extra_body": _EXTRA},
}


def _both_paths(source: SyntheticSource, index: int) -> tuple[GenerationRequest, GenerationRequest]:
    """The request as `request` builds it, and as the general path builds it."""
    built = source.request(index)
    general = source._built_request(index, index_rng(source.seed, index))
    return built, general


def _assert_identical(built: GenerationRequest, general: GenerationRequest) -> None:
    assert list(vars(built).items()) == list(vars(general).items())  # values and field order
    assert built.model_fields_set == general.model_fields_set
    assert built.model_dump_json() == general.model_dump_json()
    handler = handler_for(built.endpoint)
    assert orjson.dumps(handler.build_body(built)) == orjson.dumps(handler.build_body(general))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions, Endpoint.responses])
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("prompt", list(PROMPTS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_plain_text_request_is_the_general_paths_request_byte_for_byte(
    seed: int, endpoint: Endpoint, stream: bool, prompt: str, variant: str
) -> None:
    source = SyntheticSource.model_validate(
        {
            "model": "assay-mock",
            "endpoint": endpoint,
            "stream": stream,
            "seed": seed,
            "prompt_tokens": PROMPTS[prompt],
            "output_tokens": FixedCount(value=16),
            **VARIANTS[variant],
        }
    )
    indices = INDICES[:8] if prompt == "8192" else INDICES
    for index in indices:
        built, general = _both_paths(source, index)
        _assert_identical(built, general)
        assert built.request_id == f"req-{index:08d}"


def test_a_fresh_source_builds_what_a_used_one_does() -> None:
    """The shared fields are built on first use; they do not depend on which index came first."""
    used = SyntheticSource(model="m", prompt_tokens=FixedCount(value=32), seed=5)
    for index in range(10):
        used.request(index)
    for index in (3, 9, 0):
        fresh = SyntheticSource(model="m", prompt_tokens=FixedCount(value=32), seed=5)
        _assert_identical(fresh.request(index), used.request(index))


def test_requests_with_images_keep_the_general_path() -> None:
    source = SyntheticSource(
        model="m", prompt_tokens=FixedCount(value=8), images=FixedCount(value=1), seed=2
    )
    built, general = _both_paths(source, 4)
    _assert_identical(built, general)
    assert built.images == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_index_rng_is_random_seeded_with_the_paired_integer(seed: int) -> None:
    for index in INDICES:
        key = seed << 1 if seed >= 0 else (-seed << 1) - 1
        total = key + index
        expected = random.Random((total * (total + 1) >> 1) + index)
        rng = index_rng(seed, index)
        assert rng.getstate() == expected.getstate()
        assert [rng.gauss(0, 1), rng.random(), rng.randrange(10**6)] == [
            expected.gauss(0, 1),
            expected.random(),
            expected.randrange(10**6),
        ]
