"""Warm-up and cool-down that leave nothing of a step measured are refused when the spec is
built, before anything starts: no step reaches its aggregator with an empty window."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from assay.config import build_config
from assay.errors import ConfigError
from assay.metrics.aggregator import TimeWindow
from assay.spec import Constraints
from assay.spec.capacity import Capacity, SloTarget

# Each: constraints whose warm-up and cool-down fill the whole step (the crashes found).
FILLED: list[dict[str, Any]] = [
    {"warmup_seconds": 5, "max_seconds": 3},
    {"warmup_seconds": 3, "max_seconds": 3},
    {"cooldown_seconds": 3, "max_seconds": 3},
    {"warmup_seconds": 1, "cooldown_seconds": 1, "max_seconds": 2},
    # Shorter than the step in floats, but not by a whole nanosecond.
    {"warmup_seconds": 1, "cooldown_seconds": 0.9999999999, "max_seconds": 2},
]


@pytest.mark.parametrize("keys", FILLED)
def test_warmup_and_cooldown_filling_the_step_are_refused(keys: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"leaves? nothing of --max-seconds"):
        build_config({}, keys)


@pytest.mark.parametrize("profile", [{"profile": "sweep"}, {"profile": "constant", "rate": 5}])
def test_every_profile_s_steps_are_held_to_it(profile: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="--warmup-seconds 2 leaves nothing"):
        build_config({}, {**profile, "warmup_seconds": 2, "max_seconds": 2})


def test_the_refusal_names_only_what_was_given() -> None:
    with pytest.raises(ConfigError) as refused:
        build_config({}, {"cooldown_seconds": 3, "max_seconds": 3})
    assert str(refused.value).startswith("--cooldown-seconds 3 leaves nothing")
    assert "--warmup-seconds" not in str(refused.value)


def test_constraints_built_by_a_library_user_are_refused_as_well() -> None:
    with pytest.raises(ValidationError, match="leave nothing of --max-seconds 2"):
        Constraints(max_seconds=2, warmup_seconds=1, cooldown_seconds=1)


def test_warmup_without_a_time_limit_is_still_refused() -> None:
    # A --max-requests step has no known end, so neither cool-down nor window can be placed.
    with pytest.raises(ConfigError, match="need --max-seconds"):
        build_config({}, {"warmup_seconds": 1, "max_requests": 5})


@pytest.mark.parametrize(
    ("warmup", "cooldown", "step"), [(1, 1, 2.000000001), (0, 2.999999999, 3), (5, 0, 5.5)]
)
def test_whatever_is_accepted_leaves_a_window_the_aggregator_takes(
    warmup: float, cooldown: float, step: float
) -> None:
    config = build_config(
        {}, {"warmup_seconds": warmup, "cooldown_seconds": cooldown, "max_seconds": step}
    )
    begin, end = config.constraints_in_force().measured_window(start_ns=123)
    assert end is not None
    assert TimeWindow(start_ns=begin, end_ns=end).duration_ns >= 1


def test_a_capacity_step_is_held_to_the_nanosecond_too() -> None:
    search = Capacity(slos=(SloTarget.parse("ttft_ms=500"),), step_s=2)
    within = Constraints(max_seconds=60, warmup_seconds=1, cooldown_seconds=0.9999999999)
    problem = search.problem(within)
    assert problem is not None
    assert "leaves no measured time" in problem
