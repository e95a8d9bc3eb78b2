"""Token-count specs: the CLI spelling, seeded sampling within bounds, and config coercion."""

from __future__ import annotations

import random

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from assay.data import (
    FixedCount,
    NormalCount,
    TokenCount,
    UniformCount,
    parse_token_count,
    sample_token_count,
    smallest_count,
)
from assay.errors import DataError


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: TokenCount


def test_plain_integer_parses_to_fixed_count() -> None:
    assert parse_token_count("256") == FixedCount(value=256)
    assert parse_token_count(" fixed:64 ") == FixedCount(value=64)


def test_normal_spec_parses_mean_stdev_min_max() -> None:
    assert parse_token_count("normal:256,32,64,512") == NormalCount(
        mean=256, stdev=32, min=64, max=512
    )


def test_uniform_spec_parses_min_max() -> None:
    assert parse_token_count("uniform:64, 512") == UniformCount(min=64, max=512)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "not an integer"),
        ("abc", "not an integer"),
        ("-5", "must not be negative"),
        ("12.5", "not an integer"),
        ("uniform:64", "expected uniform:MIN,MAX, got 1 value"),
        ("uniform:512,64", "min (512) is greater than max (64)"),
        ("uniform:a,64", "min 'a' is not an integer"),
        ("normal:256,32,64", "expected normal:MEAN,STDEV,MIN,MAX, got 3 value"),
        ("normal:256,-1,64,512", "stdev must not be negative"),
        ("normal:nan,1,64,512", "mean must be finite"),
        ("normal:x,1,64,512", "mean 'x' is not a number"),
        ("poisson:5", "unknown distribution 'poisson'"),
    ],
)
def test_bad_spec_string_is_data_error_saying_why(text: str, complaint: str) -> None:
    with pytest.raises(DataError) as caught:
        parse_token_count(text)
    assert complaint in str(caught.value)
    assert repr(text) in str(caught.value)


def test_normal_samples_stay_within_min_and_max() -> None:
    spec = parse_token_count("normal:100,80,40,150")
    rng = random.Random(11)
    samples = [sample_token_count(spec, rng) for _ in range(2000)]
    assert min(samples) == 40
    assert max(samples) == 150
    assert 80 < sum(samples) / len(samples) < 120


def test_uniform_samples_cover_the_whole_range_and_no_more() -> None:
    spec = parse_token_count("uniform:3,7")
    rng = random.Random(5)
    assert {sample_token_count(spec, rng) for _ in range(500)} == {3, 4, 5, 6, 7}


def test_sampling_is_reproducible_from_the_seed() -> None:
    spec = parse_token_count("normal:256,32,64,512")
    first = [sample_token_count(spec, random.Random(9)) for _ in range(3)]
    assert first == [sample_token_count(spec, random.Random(9)) for _ in range(3)]


def test_fixed_count_draws_nothing_from_the_stream() -> None:
    rng = random.Random(1)
    assert sample_token_count(FixedCount(value=10), rng) == 10
    assert rng.random() == random.Random(1).random()


def test_smallest_count_is_the_lower_bound() -> None:
    assert smallest_count(FixedCount(value=9)) == 9
    assert smallest_count(UniformCount(min=4, max=8)) == 4


def test_config_field_accepts_int_cli_string_or_tagged_object() -> None:
    assert _Spec.model_validate({"tokens": 128}).tokens == FixedCount(value=128)
    assert _Spec.model_validate({"tokens": "uniform:1,2"}).tokens == UniformCount(min=1, max=2)
    tagged = {"kind": "normal", "mean": 10, "stdev": 2, "min": 5, "max": 15}
    assert _Spec.model_validate({"tokens": tagged}).tokens == NormalCount(
        mean=10, stdev=2, min=5, max=15
    )


def test_config_field_round_trips_through_json() -> None:
    spec = _Spec(tokens=NormalCount(mean=10, stdev=2, min=5, max=15))
    assert _Spec.model_validate_json(spec.model_dump_json()) == spec


def test_config_field_rejects_bad_string_and_inverted_bounds() -> None:
    with pytest.raises(ValidationError, match="unknown distribution"):
        _Spec.model_validate({"tokens": "zipf:1"})
    with pytest.raises(ValidationError, match="greater than max"):
        _Spec.model_validate({"tokens": {"kind": "uniform", "min": 9, "max": 1}})
