"""Profile kinds and the default concurrency live in one place (`assay.spec.load`).

The library's `Throughput()` and `Sweep()` used to keep 256 requests in flight while `assay run`
(and its help and the README) kept 64: one default now, and the config's kinds are the profiles'.
"""

from __future__ import annotations

import typing

from assay.config import ProfileKind, RunConfig
from assay.spec.load import (
    CONCURRENCY_KINDS,
    DEFAULT_CONCURRENCY,
    RATE_KINDS,
    Profile,
    Sweep,
    Throughput,
    most_in_flight,
)


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


def test_rate_and_concurrency_kinds_are_the_profiles_with_those_parameters() -> None:
    rated = {kind for kind in typing.get_args(ProfileKind) if "rate" in _fields(kind)}
    assert set(RATE_KINDS) == rated
    # concurrent calls it streams; throughput and sweep max_concurrency.
    limited = {
        kind
        for kind in typing.get_args(ProfileKind)
        if _fields(kind) & {"streams", "max_concurrency"}
    }
    assert set(CONCURRENCY_KINDS) == limited


def _fields(kind: ProfileKind) -> set[str]:
    return set(type(profile_of(_config(kind))).model_fields)


def _config(kind: ProfileKind) -> RunConfig:
    """A config of profile `kind` with its required parameters (a new kind is a type error)."""
    match kind:
        case "synchronous" | "throughput" | "sweep":
            return flat(profile=kind)
        case "constant" | "poisson":
            return flat(profile=kind, rate=2.0)
        case "concurrent":
            return flat(profile=kind, concurrency=4)
        case "replay":
            return flat(profile=kind, trace="trace.jsonl")
        case "capacity":
            return flat(load={"kind": kind, "slos": ["ttft_ms=500@p99"]})
        case "ramp_up":
            return flat(
                profile=kind,
                ramp_up="linear",
                ramp_up_start_rate=1.0,
                ramp_up_end_rate=4.0,
                max_seconds=5.0,
            )
