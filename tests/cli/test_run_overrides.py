"""`assay run`'s flags and `RunConfig`'s keys are held together: every override is a key, and
every key has a flag (the overrides used to be a hand-kept dict of 57 entries)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.core import TyperGroup
from typer.main import get_command

from assay.cli.commands import app
from assay.cli.run_overrides import NOT_CONFIG, run_overrides
from assay.config import FIELD_NAMES, RunConfig, build_config
from assay.errors import ConfigError


def run_flags() -> dict[str, Any]:
    """Every flag of `assay run`, by the name the command receives it under, not given."""
    command = get_command(app)
    assert isinstance(command, TyperGroup)
    run = command.commands["run"]
    return {str(param.name): None for param in run.params}


def test_every_override_is_a_run_config_key() -> None:
    assert set(run_overrides(run_flags())) - FIELD_NAMES == set()


def test_every_run_config_key_has_a_flag() -> None:
    assert FIELD_NAMES - set(run_overrides(run_flags())) == set()


def test_only_the_config_file_flag_is_not_configuration() -> None:
    assert {"config"} == NOT_CONFIG
    assert set(run_flags()) >= NOT_CONFIG


def test_converted_flags_set_their_keys() -> None:
    flags = {
        **run_flags(),
        "header": ["X-Team: infra"],
        "secret_header": ["X-Team"],
        "no_probe": True,
        "data_column": ["prompt=question"],
        "stop": ["###"],
        "extra_body": ['{"top_k": 4}'],
        "validator": ["invalid_tool_call"],
        "no_default_validators": True,
        "slo": ["ttft_ms=500"],
        "mock_fault": ["empty_stream=0.5"],
        "no_server_metrics": True,
        "data": Path("prompts.jsonl"),
    }
    config = build_config({}, run_overrides(flags))
    assert config.target.headers == {"X-Team": "infra"}
    assert config.target.secret_headers == ("X-Team",)
    assert config.target.probe is False
    assert config.source.data_columns == {"prompt": "question"}
    assert config.request.stop == ("###",)
    assert config.request.extra_body == {"top_k": 4}
    assert (config.validation.validators, config.validation.default_validators) == (
        ("invalid_tool_call",),
        False,
    )
    assert config.validation.slo == {"ttft_ms": 500.0}
    assert config.mock.faults == {"empty_stream": 0.5}
    assert config.server_metrics.url == "off"
    assert config.source.data == Path("prompts.jsonl")


def test_flags_not_given_leave_the_config_defaults() -> None:
    assert build_config({}, run_overrides(run_flags())) == RunConfig()


def test_two_flags_of_one_key_given_apart_are_refused_and_alike_pass() -> None:
    flags = {**run_flags(), "server_metrics": "http://127.0.0.1:9/metrics"}
    with pytest.raises(ConfigError, match=r"^--server-metrics and --no-server-metrics set one"):
        run_overrides({**flags, "no_server_metrics": True})
    assert run_overrides(flags)["server_metrics"] == "http://127.0.0.1:9/metrics"
    # `--server-metrics off` says what `--no-server-metrics` says: nothing is dropped.
    same = {**run_flags(), "server_metrics": "off", "no_server_metrics": True}
    assert run_overrides(same)["server_metrics"] == "off"
