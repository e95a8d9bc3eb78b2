"""Profile kinds and the default concurrency live in one place (`assay.spec.load`).

The library's `Throughput()` and `Sweep()` used to keep 256 requests in flight while `assay run`
(and its help and the README) kept 64: one default now, and the config's kinds are the profiles'.
"""

from __future__ import annotations

import typing

import pytest
from pydantic import ValidationError

from assay.config import ProfileKind, RunConfig
from assay.spec.load import (
    DEFAULT_CONCURRENCY,
    Profile,
    Sweep,
    Throughput,
    most_in_flight,
)
from tests.load.profile_examples import example_flat_keys, example_profile, required_examples


def flat(**keys: object) -> RunConfig:
    """The config of flat keys, as a config file or the command line gives them."""
    return RunConfig.model_validate(keys)


def profile_of(config: RunConfig) -> Profile:
    return config.load


def test_library_profiles_and_the_cli_default_to_the_same_concurrency() -> None:
    assert DEFAULT_CONCURRENCY == 64  # what the README and `--concurrency`'s help promise
    assert Throughput().max_concurrency == DEFAULT_CONCURRENCY
    assert Sweep().max_concurrency == DEFAULT_CONCURRENCY
    assert profile_of(flat()) == Throughput()
    assert profile_of(flat(profile="sweep")) == Sweep()
    assert most_in_flight(flat().load) == DEFAULT_CONCURRENCY


def test_config_profile_kinds_are_the_kinds_of_the_profile_union() -> None:
    members = typing.get_args(typing.get_args(Profile)[0])
    kinds = {typing.get_args(member.model_fields["kind"].annotation)[0] for member in members}
    assert set(typing.get_args(ProfileKind)) == kinds
    assert {profile_of(_config(kind)).kind for kind in typing.get_args(ProfileKind)} == kinds


# What a profile's config needs beside its own parameters: a trace to replay, the length of a
# ramp given by flags. A profile that needs only its parameters needs no row.
_BESIDE: dict[str, dict[str, object]] = {
    "replay": {"trace": "trace.jsonl"},
    "ramp_up": {"max_seconds": 1.0},
}


def _config(kind: ProfileKind) -> RunConfig:
    """A config of profile `kind` given by flat keys, with its required parameters at the
    examples their fields declare (`tests.load.profile_examples`)."""
    return flat(**example_flat_keys(kind), **_BESIDE.get(kind, {}))


def test_each_profile_given_by_flat_keys_is_its_example() -> None:
    for kind in typing.get_args(ProfileKind):
        assert profile_of(_config(kind)) == example_profile(kind), kind


# The words of each refusal of a profile given without its required parameter, as they were
# written by hand before they were read from the fields.
_NEEDS = {
    "constant": "a rate (--rate R requests/s)",
    "poisson": "a rate (--rate R requests/s)",
    "concurrent": "--concurrency N",
    "ramp_up": "--ramp-up linear|exponential",
    "capacity": "an SLO (--slo FIGURE=MS[@pXX], e.g. ttft_ms=500@p99)",
}


def test_a_profile_without_its_required_parameters_is_refused_in_words_naming_them() -> None:
    for kind in typing.get_args(ProfileKind):
        beside = {key: value for key, value in _BESIDE.get(kind, {}).items() if key == "trace"}
        if not required_examples(kind):
            assert profile_of(flat(profile=kind, **beside)).kind == kind
            continue
        with pytest.raises(ValidationError, match=f"profile {kind} needs ") as refused:
            flat(profile=kind, **beside)
        if kind in _NEEDS:
            assert f"profile {kind} needs {_NEEDS[kind]}" in str(refused.value)
