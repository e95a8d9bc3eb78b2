"""From `assay run`'s flags to `RunConfig` keys: a flag named as a key passes through as it is,
and the few that are not are converted here, so a new key needs only a flag of its name.

`tests/cli/test_run_overrides.py` holds the flags and `RunConfig`'s fields together: every
override is a field, and every field has a flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from assay.cli.options import parse_headers, parse_json_objects, parse_mapping, parse_pairs

NOT_CONFIG: Final = frozenset({"config"})
"""Flags that are not run configuration (the config file itself)."""


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values else None


# The flags that are not a key as they stand, each with the keys it sets (None: not given).
_CONVERTED: Final[dict[str, Callable[[Any], dict[str, Any]]]] = {
    "header": lambda values: {"headers": parse_headers(values)},
    "secret_header": lambda values: {"secret_headers": _tuple(values)},
    "no_probe": lambda given: {"probe": False if given else None},
    "data_column": lambda values: {"data_columns": parse_mapping(values, "--data-column")},
    "stop": lambda values: {"stop": _tuple(values)},
    "extra_body": lambda values: {"extra_body": parse_json_objects(values, "--extra-body")},
    "validator": lambda values: {"validators": _tuple(values)},
    "no_default_validators": lambda given: {"default_validators": False if given else None},
    "slo": lambda values: {"slo": parse_pairs(values, "--slo")},
    "mock_fault": lambda values: {"mock_faults": parse_pairs(values, "--mock-fault")},
    # Wins over --server-metrics, which passes through.
    "no_server_metrics": lambda given: {"server_metrics": "off"} if given else {},
}


def run_overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The `RunConfig` keys `assay run`'s flags set, by flag name as the command received them
    (None where a flag was not given; `build_config` drops those).

    >>> run_overrides({"rate": 5.0, "header": ["X-Team: infra"], "no_probe": True})["headers"]
    {'X-Team': 'infra'}
    """
    overrides = {
        name: value
        for name, value in flags.items()
        if name not in _CONVERTED and name not in NOT_CONFIG
    }
    for name, convert in _CONVERTED.items():
        overrides.update(convert(flags.get(name)))
    return overrides
