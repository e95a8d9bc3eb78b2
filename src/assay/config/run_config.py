"""Config files and flags into one `RunConfig` (the run spec, `assay.spec.run`).

A config file (TOML or JSON) holds the same keys as the `assay run` flags (dashes or
underscores); flags given on the command line override the file. Validation errors become one
`ConfigError` line per problem.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from assay.errors import ConfigError
from assay.spec.run import RunConfig as RunConfig
from assay.spec.validation import SLO_KEYS as SLO_KEYS

FIELD_NAMES: Final = frozenset(RunConfig.model_fields)
"""Every key a config file may hold."""


def load_config_file(path: Path) -> dict[str, Any]:
    """The raw keys of a TOML or JSON config file, dashes folded to underscores.

    Unknown keys are an error naming the valid ones, so a typo never silently does nothing.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {error.start}); is it a binary file?"
        ) from None
    try:
        match path.suffix.lower():
            case ".toml":
                raw: object = tomllib.loads(text)
            case ".json":
                raw = json.loads(text)
            case other:
                raise ConfigError(
                    f"config file {path}: unknown extension {other or '(none)'!r}; "
                    "use .toml or .json"
                )
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"config file {path} is not valid: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a table of keys, not {type(raw).__name__}")
    keys = {str(key).replace("-", "_"): value for key, value in raw.items()}
    unknown = sorted(set(keys) - FIELD_NAMES)
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key {', '.join(unknown)}; "
            f"valid keys: {', '.join(sorted(FIELD_NAMES))}"
        )
    return keys


def build_config(file_keys: dict[str, Any], overrides: dict[str, Any]) -> RunConfig:
    """Merge file keys with flag overrides (flags win) and validate into a `RunConfig`.

    >>> build_config({"profile": "constant", "rate": 5}, {"rate": 10}).rate
    10.0
    >>> build_config({"extra_body": {"a": 1, "b": 2}}, {"extra_body": {"b": 3}}).extra_body
    {'a': 1, 'b': 3}
    """
    merged = {**file_keys, **{key: value for key, value in overrides.items() if value is not None}}
    file_extra, flag_extra = file_keys.get("extra_body"), overrides.get("extra_body")
    if isinstance(file_extra, dict) and isinstance(flag_extra, dict):
        # Request fields add up: the flags' objects are merged over the file's, key by key.
        merged["extra_body"] = {**file_extra, **flag_extra}
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error)) from None


def describe_validation_error(error: ValidationError) -> str:
    """One readable line per problem: `key: what is wrong`."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "config"
        message = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"{where.replace('_', '-')}: {message}" if where != "config" else message)
    return "; ".join(lines)
