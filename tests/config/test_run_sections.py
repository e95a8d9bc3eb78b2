"""The run spec in sections: flat keys (flags, config files, report.json's `run_config`) are
routed to their sections through one table, and written back through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from assay.config import FIELD_NAMES, build_config
from assay.errors import ConfigError
from assay.spec import Constant, Constraints, Sweep, Synchronous
from assay.spec.flat import FLAT_KEYS, flattened, kinds_with
from assay.spec.run import Mock, RunConfig, RunEcho, Target

FLAT_CONFIGS: list[dict[str, Any]] = [
    {},
    {"profile": "poisson", "rate": 3.0, "burstiness": 0.5, "seed": 7},
    {
        "ramp_up": "exponential",
        "ramp_up_start_rate": 1.0,
        "ramp_up_end_rate": 8.0,
        "max_seconds": 4.0,
    },
    {"profile": "sweep", "sweep_concurrency": [1, 4, 16]},
    {"profile": "concurrent", "concurrency": 5, "target": "http://127.0.0.1:9"},
    {
        "timeout_idle": 3.0,
        "mock_faults": {"empty_stream": 0.1},
        "request_seed": 3,
        "output_dir": "runs/x",
        "slo": {"ttft_ms": 5.0},
    },
    {"data": "prompts.jsonl", "multi_turn": True, "max_requests": 9, "engine": "ray"},
]


def _field_at(model: type[BaseModel], path: tuple[str, ...]) -> bool:
    info = model.model_fields.get(path[0])
    if info is None:
        return False
    if len(path) == 1:
        return True
    inner = info.annotation
    return isinstance(inner, type) and issubclass(inner, BaseModel) and _field_at(inner, path[1:])


def test_every_flat_key_outside_the_load_is_a_field_of_its_section() -> None:
    routed = {key: path for key, path in FLAT_KEYS.items() if path[0] != "load"}
    assert [key for key, path in routed.items() if not _field_at(RunConfig, path)] == []


def test_the_flat_keys_are_the_config_file_keys_and_the_echo_keys_in_its_order() -> None:
    assert set(FLAT_KEYS) == FIELD_NAMES
    echoed = [key for key in RunEcho.model_fields if key in FLAT_KEYS]
    assert echoed == list(FLAT_KEYS)


@pytest.mark.parametrize("keys", FLAT_CONFIGS)
def test_a_config_written_back_under_its_flat_keys_reads_as_the_same_config(
    keys: dict[str, Any],
) -> None:
    config = RunConfig.model_validate(keys)
    flat = flattened(config.model_dump(mode="json"))
    written = {key: value for key, value in flat.items() if key in keys or key == "profile"}
    assert RunConfig.model_validate(written) == config


def test_sections_and_flat_keys_build_the_same_config() -> None:
    sectioned = RunConfig(
        target=Target(url="http://127.0.0.1:8000"),
        load=Constant(rate=20),
        constraints=Constraints(max_requests=5),
        mock=Mock(),
    )
    flat = {"target": "http://127.0.0.1:8000", "profile": "constant", "rate": 20}
    assert RunConfig.model_validate({**flat, "max_requests": 5}) == sectioned


def test_a_parameter_of_another_profile_is_refused_naming_the_profiles_that_take_it() -> None:
    assert kinds_with("rate") == ["constant", "poisson"]
    with pytest.raises(ConfigError) as refused:
        build_config({"profile": "synchronous"}, {"rate": 5.0})
    assert str(refused.value) == (
        "--rate applies to the constant and poisson profiles, not synchronous"
    )
    with pytest.raises(ValidationError):
        Synchronous.model_validate({"rate": 5.0})  # the type itself refuses it


def test_a_problem_inside_a_section_names_the_flat_key() -> None:
    with pytest.raises(ConfigError) as refused:
        build_config({"timeout_idle": -1}, {})
    assert str(refused.value) == "timeout_idle: Input should be greater than 0"
    with pytest.raises(ConfigError) as refused:
        build_config({}, {"sweep_concurrency": "4,4", "profile": "sweep"})
    assert str(refused.value) == "--sweep-concurrency: concurrency levels repeat: [4, 4]"


def test_an_unknown_key_is_refused_by_its_name() -> None:
    with pytest.raises(ConfigError, match=r"^rates: Extra inputs are not permitted$"):
        build_config({"rates": 5}, {})


def test_a_ramp_bounded_by_requests_ramps_over_the_time_it_takes_to_offer_them() -> None:
    config = RunConfig.model_validate(
        {"ramp_up": "linear", "ramp_up_start_rate": 1, "ramp_up_end_rate": 9, "max_requests": 50}
    )
    assert config.load.kind == "ramp_up"
    assert config.load.ramp.duration_s == 10.0


def test_a_sweep_over_levels_given_as_the_flag_keeps_them_in_order() -> None:
    config = build_config({}, {"profile": "sweep", "sweep_concurrency": "1,8,4"})
    assert config.load == Sweep(concurrencies=(1, 8, 4))


def test_the_output_folder_is_its_section() -> None:
    assert build_config({"output_dir": "runs/a"}, {}).output.dir == Path("runs/a")


def test_each_flat_key_echoes_as_its_field_in_the_sections() -> None:
    fields = RunEcho.model_fields
    assert list(fields)[: len(FLAT_KEYS)] == list(FLAT_KEYS)
    assert fields["max_requests"].metadata == Constraints.model_fields["max_requests"].metadata
    assert fields["sweep_rates"].default == Sweep.model_fields["rates"].default
    # A parameter its profile requires echoes as None for a run of another profile.
    assert fields["rate"].default is None
    assert fields["ramp_up"].default is None


def test_an_echoed_profile_parameter_keeps_its_bounds_and_a_refused_value_as_written() -> None:
    echo = RunEcho.model_validate_json('{"rate": -1, "concurrency": 0, "sweep_rates": 3}')
    # Refused by the profile's bounds: read as the defaults, written back as they were.
    assert vars(echo)["rate"] is None
    assert echo.concurrency is None
    assert vars(echo)["sweep_rates"] == 3
    assert echo.model_dump(mode="json") == {"rate": -1, "concurrency": 0, "sweep_rates": 3}
