"""Config files take every key in its natural TOML type, and errors name keys as the file wrote
them (issue 20 item 4: `output_tokens = 32` was refused as "output-tokens: Input should be a
valid string")."""

from __future__ import annotations

import enum
import tomllib
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import pytest

from assay.config import FIELD_NAMES, build_config, load_config_file
from assay.errors import ConfigError
from assay.spec.run import RunEcho


def natural_toml(annotation: Any) -> str:
    """How a person writes a value of `annotation` in TOML: numbers bare, lists as arrays."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return natural_toml(next(arg for arg in args if arg is not type(None)))
    if origin is Literal:
        return f'"{args[0]}"'
    if origin is tuple:
        return "[1, 4]" if args and args[0] in (int, float) else '["a"]'
    if origin is dict:
        return "{ a = 1 }" if args[1] in (int, float) else '{ a = "b" }'
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return f'"{next(iter(annotation)).value}"'
    if annotation is bool:
        return "true"
    if annotation in (int, float):
        return "3"  # a TOML integer, for a float key too
    if annotation is Path:
        return '"file.jsonl"'
    return '"text"'


# The keys whose natural value is not their type's: token counts as numbers.
NATURAL: dict[str, str] = {"prompt_tokens": "64", "output_tokens": "32"}


@pytest.mark.parametrize("key", sorted(FIELD_NAMES))
def test_every_key_takes_its_natural_toml_type(key: str) -> None:
    literal = NATURAL.get(key) or natural_toml(RunEcho.model_fields[key].annotation)
    keys = tomllib.loads(f"{key} = {literal}")
    problem = ""
    try:
        build_config(keys, {})
    except ConfigError as error:
        problem = str(error)
    # A key may need another (a rate needs its profile): never a refused type.
    assert "Input should be a valid" not in problem, problem


def test_token_counts_as_toml_integers_run_as_the_flags_strings() -> None:
    keys = tomllib.loads("output_tokens = 32\nprompt-tokens = 64\nseed = 5")
    config = build_config(keys, {})
    source = config.source
    assert (source.output_tokens, source.prompt_tokens, config.seed) == ("32", "64", 5)


def test_a_lone_string_where_the_flag_repeats_is_a_list_of_one() -> None:
    config = build_config(tomllib.loads('stop = "END"\nvalidators = "not_blank"'), {})
    assert config.request.stop == ("END",)
    assert config.validation.validators == ("not_blank",)


@pytest.mark.parametrize("spelled", ["max_requests", "max-requests"])
def test_a_wrong_type_names_the_key_as_the_file_wrote_it(spelled: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build_config(tomllib.loads(f'{spelled} = "ten"'), {})
    assert str(raised.value).startswith(f"{spelled}: Input should be a valid integer")


def test_a_rule_message_names_the_file_key_not_the_flag() -> None:
    with pytest.raises(ConfigError) as raised:
        build_config(tomllib.loads('profile = "synchronous"\nconcurrency = 4'), {})
    assert str(raised.value) == (
        "concurrency does not apply to profile synchronous (one request at a time)"
    )
    with pytest.raises(ConfigError) as raised:
        build_config(tomllib.loads("max_requests = true"), {})
    assert str(raised.value) == "max_requests: expected a number, not True"


def test_a_flag_keeps_its_name_over_the_files_key() -> None:
    with pytest.raises(ConfigError) as raised:
        build_config(tomllib.loads("rate = 5"), {"rate": 5.0})
    assert "--rate applies to the constant and poisson profiles" in str(raised.value)


def test_a_key_given_twice_in_two_spellings_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "assay.toml"
    path.write_text("output_tokens = 8\noutput-tokens = 16\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="output_tokens given twice"):
        load_config_file(path)


def test_the_file_keeps_its_spelling_until_the_config_is_built(tmp_path: Path) -> None:
    path = tmp_path / "assay.toml"
    path.write_text("output-tokens = 16\nmock_ttft_ms = 0\n", encoding="utf-8")
    keys = load_config_file(path)
    assert keys == {"output-tokens": 16, "mock_ttft_ms": 0}
    assert build_config(keys, {}).source.output_tokens == "16"
