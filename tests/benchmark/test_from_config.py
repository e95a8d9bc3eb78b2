"""From flat run configuration to the sections the scheduler reads: the profile, the
constraints and the validator chain."""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.result import Failure, Success

from assay.benchmark.chain_spec import ChainSpec
from assay.config import RunConfig
from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    UnusableResponse,
    outcome,
)
from assay.errors import ConfigError
from assay.spec.constraints import Constraints
from assay.spec.load import (
    DEFAULT_CONCURRENCY,
    Concurrent,
    Constant,
    Poisson,
    Profile,
    Sweep,
    Synchronous,
    Throughput,
)
from assay.spec.run import DEFAULT_MAX_SECONDS


def flat(**keys: object) -> RunConfig:
    """The config of flat keys, as a config file or the command line gives them."""
    return RunConfig.model_validate(keys)


def profile_of(config: RunConfig) -> Profile:
    return config.load


def constraints_of(config: RunConfig) -> Constraints:
    return config.constraints_in_force()


def chain_of(config: RunConfig) -> ChainSpec:
    return ChainSpec.of(config.validation, config.target.endpoint)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (flat(profile="synchronous"), Synchronous()),
        (flat(profile="concurrent", concurrency=6), Concurrent(streams=6)),
        (flat(profile="throughput"), Throughput(max_concurrency=DEFAULT_CONCURRENCY)),
        (flat(profile="throughput", concurrency=12), Throughput(max_concurrency=12)),
        (flat(profile="constant", rate=2.5), Constant(rate=2.5)),
        (flat(profile="poisson", rate=8, seed=3), Poisson(rate=8, seed=3)),
        (
            flat(profile="sweep", sweep_rates=3, concurrency=16),
            Sweep(rates=3, max_concurrency=16),
        ),
    ],
)
def test_profile_of_maps_each_profile_with_its_parameters(
    config: RunConfig, expected: Profile
) -> None:
    assert profile_of(config) == expected


def test_default_profile_is_throughput_at_default_concurrency() -> None:
    assert profile_of(flat()) == Throughput(max_concurrency=DEFAULT_CONCURRENCY)


def test_poisson_profile_takes_the_run_seed() -> None:
    assert profile_of(flat(profile="poisson", rate=1, seed=99)) == Poisson(rate=1, seed=99)


def test_unbounded_synthetic_run_gets_the_default_time_limit() -> None:
    assert constraints_of(flat()).max_seconds == DEFAULT_MAX_SECONDS


def test_max_requests_alone_bounds_the_run_without_a_time_limit() -> None:
    constraints = constraints_of(flat(max_requests=50))
    assert constraints.max_requests == 50
    assert constraints.max_seconds is None


def test_data_file_alone_bounds_the_run_without_a_time_limit() -> None:
    assert constraints_of(flat(data=Path("prompts.jsonl"))).max_seconds is None


def test_explicit_limits_are_passed_through() -> None:
    config = flat(
        max_seconds=3,
        max_requests=20,
        max_errors=4,
        stop_error_rate=0.5,
        warmup_seconds=0.5,
        cooldown_seconds=0.25,
    )
    constraints = constraints_of(config)
    assert constraints.max_seconds == 3
    assert constraints.max_requests == 20
    assert constraints.max_errors == 4
    assert constraints.stop_error_rate == 0.5
    assert constraints.warmup_seconds == 0.5
    assert constraints.cooldown_seconds == 0.25


def test_chain_of_carries_endpoint_strictness_and_extra_validators() -> None:
    config = flat(
        endpoint=Endpoint.completions,
        strict=True,
        validators=("invalid_json_output",),
        default_validators=False,
    )
    assert chain_of(config) == ChainSpec(
        endpoint=Endpoint.completions,
        strict=True,
        extra=("invalid_json_output",),
        use_defaults=False,
    )
    assert chain_of(config).describe() == "invalid_json_output"
    assert chain_of(flat()).describe() == "default chat chain"
    assert chain_of(flat(strict=True)).describe() == "default chat chain (strict)"


def finished_without_reason() -> GenerationResponse:
    # Non-streamed: a chat/completions *stream* without finish_reason is an error by default.
    return GenerationResponse(
        request_id="req-00000003",
        endpoint=Endpoint.chat,
        streamed=False,
        answer=TextAnswer(text="The capital of France is Paris."),
        finish_reason=None,
        content_chunks=7,
        streamed_tokens=7,
        terminal_seen=True,
        timing=ResponseTiming(send_ns=1_000, first_token_ns=5_000, end_ns=9_000),
    )


def verdict(config: RunConfig, response: GenerationResponse) -> UnusableResponse | None:
    match outcome(chain_of(config)()(response)):
        case Success(_):
            return None
        case Failure(problem):
            return problem


def test_strict_chain_built_from_config_rejects_a_missing_finish_reason() -> None:
    response = finished_without_reason()
    assert verdict(flat(), response) is None
    problem = verdict(flat(strict=True), response)
    assert problem is not None
    assert problem.code is DiagnosticCode.missing_finish_reason


def test_chain_without_defaults_or_validators_is_a_config_error() -> None:
    spec = chain_of(flat(default_validators=False))
    with pytest.raises(ConfigError, match="needs at least one --validator"):
        spec()
