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
    overrides.update(capacity_overrides(flags))
    return overrides


def read_run_config(flags: Mapping[str, object]) -> RunConfig:
    """The run's settings: the config file's keys (`--config`), with the flags given over them."""
    from assay.config import build_config, load_config_file

    overrides = run_overrides(flags)  # a bad flag is refused before the file is read
    path = flags.get(CONFIG_FILE_FLAG.name)
    file_keys = load_config_file(path) if isinstance(path, Path) else {}
    return build_config(file_keys, overrides)


__all__ = ["NOT_CONFIG", "read_run_config", "run_overrides"]
