"""Config files and flags into one `RunConfig` (the run spec, `assay.spec.run`).

A config file (TOML or JSON) holds the same keys as the `assay run` flags (dashes or
underscores; a repeatable flag's key is plural, `headers` for `--header`, and the flag's own
spelling is taken too), in the file format's natural types: `output_tokens = 32` as the flag's
"32", a lone string where the flag repeats (`validators = "mypkg.checks:x"`). Flags given on the
command line override the file. Validation errors become one `ConfigError` line per problem,
naming each key as the user wrote it: `output_tokens` for a file's key, `--output-tokens` for a
flag.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, get_args, get_origin

from pydantic import ValidationError

from assay.data.file_formats import RepeatedKeyError, read_regular_file, unique_keys
from assay.errors import ConfigError, DataError
from assay.spec.flat import FLAT_KEYS, flag_of, flat_loc
from assay.spec.run import RunConfig as RunConfig
from assay.spec.run import RunEcho
from assay.spec.validation import SLO_KEYS as SLO_KEYS

FIELD_NAMES: Final = frozenset(FLAT_KEYS)
"""Every key a config file may hold (the flat keys, `assay.spec.flat`)."""

FLAG_SPELLINGS: Final = {
    spelled: key
    for key in FLAT_KEYS
    if (flag := flag_of(key)).startswith("--")
    and not flag.startswith("--no-")
    and (spelled := flag.removeprefix("--").replace("-", "_")) != key
}
"""The keys a config file may also write as their flag is spelled (`header` for `headers`, the
flag being `--header`), to the key they stand for. A `--no-` flag's key is not among them: its
value is the opposite of the flag's (`probe = false` is `--no-probe`)."""

# Keys whose flag repeats (`--validator A --validator B`): a file may give a list or one string.
_REPEATED: Final = frozenset(
    name
    for name in FLAT_KEYS
    if get_origin(annotation := RunEcho.model_fields[name].annotation) is tuple
    and get_args(annotation)[0] in (str, Path)
)


def load_config_file(path: Path) -> dict[str, Any]:
    """The keys of a TOML or JSON config file, as the file spells them (dashes or underscores;
    `build_config` folds them and names them back as written).

    Unknown keys are an error naming the valid ones, so a typo never silently does nothing; so
    is a key given twice (a JSON object's repeated key would otherwise keep its last value, as
    a TOML file's is refused by the format). Only a regular file is read (`--config` on a pipe
    or a device is refused, never waited on).
    """
    try:
        text = read_regular_file(path, "--config", "config file").decode("utf-8")
    except DataError as error:
        raise ConfigError(str(error)) from None
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
                raw = json.loads(text, object_pairs_hook=unique_keys)
            case other:
                raise ConfigError(
                    f"config file {path}: unknown extension {other or '(none)'!r}; "
                    "use .toml or .json"
                )
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"config file {path} is not valid: {error}") from None
    except RepeatedKeyError as error:
        raise ConfigError(f"config file {path}: {error}; keep one") from None
    except RecursionError:  # both parsers recurse per level of nesting
        raise ConfigError(f"config file {path} is nested too deeply to read") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a table of keys, not {type(raw).__name__}")
    keys = {str(key): value for key, value in raw.items()}
    unknown = sorted(key for key in keys if _folded(key) not in FIELD_NAMES)
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key {', '.join(unknown)}; "
            f"valid keys: {', '.join(sorted(FIELD_NAMES))} (or a flag's own spelling: "
            f"{', '.join(sorted(FLAG_SPELLINGS))})"
        )
    spellings: dict[str, list[str]] = {}
    for key in keys:
        spellings.setdefault(_folded(key), []).append(key)
    twice = [
        f"{key} given twice ({' and '.join(given)})"
        for key, given in spellings.items()
        if len(given) > 1
    ]
    if twice:
        raise ConfigError(f"config file {path}: {'; '.join(twice)}")
    return keys


def build_config(file_keys: Mapping[str, Any], overrides: Mapping[str, Any]) -> RunConfig:
    """Merge file keys with flag overrides (flags win) and validate into a `RunConfig`.

    >>> build_config({"profile": "constant", "rate": 5}, {"rate": 10}).load.rate
    10.0
    >>> build_config({"extra_body": {"a": 1, "b": 2}}, {"extra_body": {"b": 3}}).request.extra_body
    {'a': 1, 'b': 3}
    >>> build_config({"output-tokens": 32, "stop": "END"}, {}).source.output_tokens
    '32'
    >>> build_config({"max_requests": "ten"}, {})
    Traceback (most recent call last):
    ...
    assay.errors.ConfigError: max_requests: Input should be a valid integer, unable to parse \
string as an integer
    """
    written = {_folded(key): key for key in file_keys}
    from_file = {_folded(key): value for key, value in file_keys.items()}
    for key in _REPEATED & from_file.keys():
        if isinstance(from_file[key], str):
            from_file[key] = [from_file[key]]  # one string where the flag repeats
    flags = {key: value for key, value in overrides.items() if value is not None}
    merged = {**from_file, **flags}
    file_extra, flag_extra = from_file.get("extra_body"), flags.get("extra_body")
    if isinstance(file_extra, dict) and isinstance(flag_extra, dict):
        # Request fields add up: the flags' objects are merged over the file's, key by key.
        merged["extra_body"] = {**file_extra, **flag_extra}
    # A key the file set and no flag overrode is named as the file wrote it; a flag's, as the
    # flag (`--image-format: ...`, not the field's name).
    names = {key: spelled for key, spelled in written.items() if key not in flags}
    names |= {key: flag_of(key) for key in flags}
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, names)) from None


def describe_validation_error(
    error: ValidationError, names: Mapping[str, str] | None = None
) -> str:
    """One readable line per problem: `key: what is wrong`.

    A problem inside a section is named by its flat key (`assay.spec.flat`); a key in `names`
    is named as given there, e.g. as a config file wrote it; any other with dashes. Messages
    that name the flag of a key in `names` name it so instead.
    """
    names = names or {}
    lines = []
    for problem in error.errors():
        head, rest = flat_loc(problem["loc"])
        message = _as_written(str(problem["msg"]).removeprefix("Value error, "), names)
        if head is None:
            lines.append(message)
            continue
        where = names.get(head) or head.replace("_", "-")
        lines.append(f"{where}{rest}: {message}")
    return "; ".join(lines)


def _folded(key: str) -> str:
    """The flat key a file's key stands for: dashes as underscores, a flag's spelling as its
    key (`data-column` is `data_columns`)."""
    underscored = key.replace("-", "_")
    return FLAG_SPELLINGS.get(underscored, underscored)


def _as_written(message: str, names: Mapping[str, str]) -> str:
    """`message` with each flag of a key in `names` replaced by the key as the file wrote it."""
    for key, spelled in names.items():
        flag = flag_of(key)
        if flag == spelled:
            continue
        message = re.sub(rf"{re.escape(flag)}(?![\w-])", spelled, message)
    return message
