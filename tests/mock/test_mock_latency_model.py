"""The latency model's draws (not sleeps), and the length rules that make finish_reason true."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from assay.mock import Fixed, LatencyModel, MockConfig, Normal, Uniform, sample
from assay.mock.answer_plan import LatencySampler, plan_length
from assay.mock.config import is_zero


def test_fixed_distribution_always_draws_its_value() -> None:
    rng = random.Random(0)
    assert {sample(Fixed(value=0.25), rng) for _ in range(10)} == {0.25}


def test_normal_distribution_has_its_mean_and_stays_within_bounds() -> None:
    rng = random.Random(3)
    normal = Normal(mean=0.05, stdev=0.01, min=0.03, max=0.08)
    draws = [sample(normal, rng) for _ in range(5_000)]
    assert min(draws) >= 0.03
    assert max(draws) <= 0.08
    assert statistics.fmean(draws) == pytest.approx(0.05, abs=0.001)
    assert statistics.stdev(draws) == pytest.approx(0.01, abs=0.001)


def test_uniform_distribution_covers_its_interval() -> None:
    rng = random.Random(4)
    draws = [sample(Uniform(low=10, high=20), rng) for _ in range(5_000)]
    assert 10 <= min(draws) < 10.1
    assert 19.9 < max(draws) <= 20
    assert statistics.fmean(draws) == pytest.approx(15, abs=0.2)


def test_same_seed_draws_the_same_latencies() -> None:
    model = LatencyModel(
        time_to_first_token=Normal(mean=0.2, stdev=0.05),
        inter_token_latency=Uniform(low=0.01, high=0.03),
        output_tokens=Normal(mean=100, stdev=30, min=1),
    )

    def draws(seed: int) -> tuple[float, list[float], int]:
        sampler = LatencySampler(model, seed)
        return (
            sampler.time_to_first_token(),
            sampler.inter_token_latencies(5),
            sampler.output_tokens(),
        )

    assert draws(9) == draws(9)
    assert draws(9) != draws(10)


def test_zero_latency_model_never_sleeps() -> None:
    sampler = LatencySampler(LatencyModel(), seed=0)
    assert sampler.instant
    assert sampler.inter_token_latencies(15) == []
    assert sampler.time_to_first_token() == 0
    assert not LatencySampler(LatencyModel(inter_token_latency=Fixed(value=0.01)), 0).instant


def test_itl_is_drawn_once_per_gap() -> None:
    sampler = LatencySampler(LatencyModel(inter_token_latency=Uniform(low=0.001, high=0.002)), 1)
    gaps = sampler.inter_token_latencies(15)
    assert len(gaps) == 15
    assert len(set(gaps)) == 15


@pytest.mark.parametrize(
    ("distribution", "zero"),
    [
        (Fixed(value=0), True),
        (Normal(mean=0, stdev=0), True),
        (Normal(mean=0.1, stdev=0.01, max=0), True),
        (Uniform(low=0, high=0), True),
        (Normal(mean=0, stdev=0.1), False),
        (Uniform(low=0, high=0.001), False),
    ],
)
def test_zero_is_recognised_in_every_distribution(
    distribution: Fixed | Normal | Uniform, zero: bool
) -> None:
    assert is_zero(distribution) is zero


def test_distribution_bounds_are_validated() -> None:
    with pytest.raises(ValidationError, match="below min"):
        Normal(mean=1, stdev=1, min=2, max=1)
    with pytest.raises(ValidationError, match="below low"):
        Uniform(low=2, high=1)
    with pytest.raises(ValidationError):
        Fixed(value=-1)


def test_latency_model_round_trips_through_json_by_kind() -> None:
    config = MockConfig(
        latency=LatencyModel(time_to_first_token=Normal(mean=0.1, stdev=0.02)), seed=4
    )
    assert MockConfig.model_validate_json(config.model_dump_json()) == config


@given(
    wanted=st.integers(0, 500),
    max_tokens=st.none() | st.integers(0, 500),
    ignore_eos=st.booleans(),
    min_tokens=st.integers(0, 500),
)
def test_finish_reason_is_length_exactly_when_the_limit_cut_the_output(
    wanted: int, max_tokens: int | None, ignore_eos: bool, min_tokens: int
) -> None:
    length = plan_length(wanted, max_tokens, ignore_eos, min_tokens)
    if max_tokens is not None:
        assert length.tokens <= max_tokens
    if ignore_eos and max_tokens is not None:
        assert length.tokens == max_tokens
    elif not ignore_eos:
        would_say = max(wanted, min_tokens)
        cut = max_tokens is not None and would_say >= max_tokens
        assert length.finish_reason == ("length" if cut else "stop")
        assert length.tokens == (
            min(would_say, max_tokens) if max_tokens is not None else would_say
        )
