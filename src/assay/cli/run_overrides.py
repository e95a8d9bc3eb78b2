"""From `assay run`'s flags to `RunConfig` keys, row by row of `assay.cli.run_flags`: a flag
passes its value to its key as it is, or through its row's parser; a switch sets a fixed value.

`tests/cli/test_run_overrides.py` holds the flags and `RunConfig`'s fields together: every
override is a field, and every field has a flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from assay.cli.capacity_flags import capacity_overrides
from assay.cli.run_flags import CONFIG_FILE_FLAG, RUN_FLAGS

if TYPE_CHECKING:
    from assay.config import RunConfig

NOT_CONFIG: Final = frozenset({CONFIG_FILE_FLAG.name})
"""Flags that are not run configuration (the config file itself)."""


def run_overrides(flags: Mapping[str, object]) -> dict[str, object]:
    """The `RunConfig` keys `assay run`'s flags set, by flag name as the command received them
    (None where a flag was not given; `build_config` drops those). Of two flags of one key, a
    later one given wins (`--no-server-metrics` over `--server-metrics`).

    >>> run_overrides({"rate": 5.0, "header": ["X-Team: infra"], "no_probe": True})["headers"]
    {'X-Team': 'infra'}
    """
    overrides: dict[str, object] = {}
    for row in RUN_FLAGS:
        if row.key is None:
            continue
        value = row.config_value(flags.get(row.name))
        if value is not None or row.key not in overrides:
            overrides[row.key] = value
    overrides.update(capacity_overrides(flags, flags.get("profile")))
    return overrides


def read_run_config(flags: Mapping[str, object]) -> RunConfig:
    """The run's settings: the config file's keys (`--config`), with the flags given over them."""
    from assay.config import build_config, load_config_file

    path = flags.get(CONFIG_FILE_FLAG.name)
    if not isinstance(path, Path):
        return build_config({}, run_overrides(flags))
    # The profile may be the file's: `--slo ...@p99` then feeds its capacity search too.
    file_keys = load_config_file(path)
    profile = flags.get("profile") or file_keys.get("profile")
    overrides = run_overrides({**flags, "profile": profile})
    overrides["profile"] = flags.get("profile")  # the file's stays the file's
    return build_config(file_keys, overrides | _file_capacity_slos(file_keys, overrides))


def _file_capacity_slos(
    file_keys: Mapping[str, object], overrides: Mapping[str, object]
) -> dict[str, object]:
    """A config file's `slo` table as the capacity search's SLOs (at their default percentile),
    as `--slo` is with `--profile capacity`, when neither the file nor a flag names them.

    >>> _file_capacity_slos({"profile": "capacity", "slo": {"ttft_ms": 500}}, {})
    {'capacity_slos': ['ttft_ms=500']}
    """
    keys = {str(key).replace("-", "_"): value for key, value in file_keys.items()}
    profile = overrides.get("profile") or keys.get("profile")
    named = overrides.get("capacity_slos") or keys.get("capacity_slos")
    slo = keys.get("slo")
    if profile != "capacity" or named or not isinstance(slo, dict) or not slo:
        return {}
    return {"capacity_slos": [f"{name}={limit}" for name, limit in slo.items()]}


__all__ = ["NOT_CONFIG", "read_run_config", "run_overrides"]
