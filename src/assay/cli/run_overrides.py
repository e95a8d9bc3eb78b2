"""From `assay run`'s flags to `RunConfig` keys, row by row of `assay.cli.run_flags`: a flag
passes its value to its key as it is, or through its row's parser; a switch sets a fixed value.

`tests/cli/test_run_overrides.py` holds the flags and `RunConfig`'s fields together: every
override is a field, and every field has a flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from assay.cli.run_flags import CONFIG_FILE_FLAG, RUN_FLAGS
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.config import RunConfig

NOT_CONFIG: Final = frozenset({CONFIG_FILE_FLAG.name})
"""Flags that are not run configuration (the config file itself)."""


def run_overrides(flags: Mapping[str, object]) -> dict[str, object]:
    """The `RunConfig` keys `assay run`'s flags set, by flag name as the command received them
    (None where a flag was not given; `build_config` drops those). Two flags of one key given
    with different values (`--server-metrics URL --no-server-metrics`) are refused: either
    would be dropped.

    >>> run_overrides({"rate": 5.0, "header": ["X-Team: infra"], "no_probe": True})["headers"]
    {'X-Team': 'infra'}
    >>> run_overrides({"server_metrics": "http://h:1/metrics", "no_server_metrics": True})
    Traceback (most recent call last):
    ...
    assay.errors.ConfigError: --server-metrics and --no-server-metrics set one thing: give one
    """
    overrides: dict[str, object] = {}
    given: dict[str, str] = {}  # a key set by a flag given, and that flag
    for row in RUN_FLAGS:
        if row.key is None:
            continue
        value = row.config_value(flags.get(row.name))
        if value is None:
            overrides.setdefault(row.key, None)
            continue
        if row.key in given and overrides[row.key] != value:
            raise ConfigError(f"{given[row.key]} and {row.spelling} set one thing: give one")
        given[row.key] = row.spelling
        overrides[row.key] = value
    return overrides


def read_run_config(flags: Mapping[str, object]) -> RunConfig:
    """The run's settings: the config file's keys (`--config`), with the flags given over them."""
    from assay.config import build_config, load_config_file

    path = flags.get(CONFIG_FILE_FLAG.name)
    file_keys = load_config_file(path) if isinstance(path, Path) else {}
    return build_config(file_keys, run_overrides(flags) | capacity_slos(flags, file_keys))


def capacity_slos(
    flags: Mapping[str, object], file_keys: Mapping[str, object]
) -> dict[str, object]:
    """The capacity search's SLOs when the run's profile (a flag's or the config file's) is
    capacity and neither `--capacity-slos` nor the file names them: `--slo`'s, else the file's
    `slo` table (at the default percentile). A percentile on another profile is refused.

    >>> capacity_slos({"slo": ["ttft_ms=500@p99"], "profile": "capacity"}, {})
    {'capacity_slos': ['ttft_ms=500@p99']}
    >>> capacity_slos({}, {"profile": "capacity", "slo": {"ttft_ms": 500}})
    {'capacity_slos': ['ttft_ms=500']}
    """
    keys = {str(key).replace("-", "_"): value for key, value in file_keys.items()}
    profile = flags.get("profile") or keys.get("profile")
    texts = flags.get("slo")
    if isinstance(texts, list) and texts:
        return _slo_flags_as_capacity_slos(texts, profile, flags.get("capacity_slos"))
    named = flags.get("capacity_slos") or keys.get("capacity_slos")
    return _slo_table_as_capacity_slos(keys.get("slo"), profile, named)


def _slo_table_as_capacity_slos(slo: object, profile: object, named: object) -> dict[str, object]:
    """A config file's `slo` table as the capacity search's SLOs, at their default percentile,
    unless `named` (`--capacity-slos` or the file's `capacity_slos`) gave them."""
    if profile != "capacity" or named or not isinstance(slo, dict) or not slo:
        return {}
    return {"capacity_slos": [f"{name}={limit}" for name, limit in slo.items()]}


def _slo_flags_as_capacity_slos(
    texts: list[object], profile: object, named: object
) -> dict[str, object]:
    """`--slo`'s SLOs as the capacity search's, unless `named` (`--capacity-slos`) gave them; a
    percentile on another profile is refused."""
    if profile == "capacity":
        return {} if named else {"capacity_slos": [str(text) for text in texts]}
    with_percentile = [text for text in texts if "@" in str(text)]
    if with_percentile:
        raise ConfigError(
            f"--slo {with_percentile[0]}: a percentile applies to --profile capacity "
            "(goodput counts every request against the limit)"
        )
    return {}


__all__ = ["NOT_CONFIG", "capacity_slos", "read_run_config", "run_overrides"]
