"""The flat keys users write (`assay run` flags, config files, report.json's `run_config`), and
where each lives in the sectioned run spec: `FLAT_KEYS` is the one table that knows, read both
ways (`sectioned`, `flattened`) and to name the key of an error inside a section (`flat_loc`).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from assay.spec.load import (
    Profile,
    ProfileKind,
    RampCurve,
    RateRamp,
)
from assay.spec.parameter import Asked, asked_of


def _keys(section: str, *names: str) -> dict[str, tuple[str, ...]]:
    return {name: (section, name) for name in names}


# The profiles of the union, by kind.
_MEMBERS: Final[dict[str, type[BaseModel]]] = {
    typing.get_args(member.model_fields["kind"].annotation)[0]: member
    for member in typing.get_args(typing.get_args(Profile)[0])
}


_LISTED: Final[dict[str, tuple[str, ...]]] = {
    "target": ("target", "url"),
    **_keys("target", "endpoint", "model", "model_mix", "api_key_env", "headers"),
    **_keys("target", "secret_headers"),
    **_keys("target", "request_id_header", "trace_context", "trace_sample", "trace_from_seed"),
    **_keys("target", "insecure"),
    **_keys("target", "ca_bundle", "wait_ready", "probe", "context_window"),
    "profile": ("load", "kind"),
    "rate": ("load", "rate"),
    # The concurrent profile's `streams`, the throughput and sweep profiles' `max_concurrency`.
    "concurrency": ("load", "concurrency"),
    "sweep_rates": ("load", "rates"),
    "sweep_concurrency": ("load", "concurrencies"),
    "burstiness": ("load", "burstiness"),
    "ramp_up": ("load", "ramp", "curve"),
    "ramp_up_start_rate": ("load", "ramp", "start_rate"),
    "ramp_up_end_rate": ("load", "ramp", "end_rate"),
    "trace": ("source", "trace"),
    "replay_speed": ("load", "speed"),
    "trace_block_tokens": ("source", "trace_block_tokens"),
    "processes": ("engine", "processes"),
    "engine": ("engine", "kind"),
    **_keys("engine", "ray_address", "ray_workers"),
    **_keys("constraints", "max_seconds", "max_requests", "max_errors", "stop_error_rate"),
    **_keys("constraints", "warmup_seconds", "cooldown_seconds"),
    **_keys("source", "data", "data_columns", "data_cycle", "multi_turn", "turns"),
    "allowed_media_paths": ("source", "allowed_media_paths"),
    **_keys("source", "think_time_ms", "prompt_tokens", "output_tokens", "documents"),
    **_keys("source", "document_tokens", "shared_prefix_tokens", "images", "image_size"),
    **_keys("source", "image_format", "audio_seconds", "tokenizer"),
    **_keys("request", "stream", "ignore_eos"),
    "continuous_usage_stats": ("target", "continuous_usage_stats"),
    "seed": ("seed",),
    **_keys("request", "temperature", "top_p", "stop"),
    "request_seed": ("request", "seed"),
    "extra_body": ("request", "extra_body"),
    **_keys("validation", "validators", "default_validators", "strict", "allow_missing_done"),
    **_keys("validation", "max_error_rate", "max_not_sent_rate", "slo"),
    **{
        f"timeout_{name}": ("target", "timeouts", f"{name}_s")
        for name in ("connect", "first_token", "idle", "total")
    },
    "max_response_bytes": ("target", "max_response_bytes"),
    "output_dir": ("output", "dir"),
    **{f"mock_{name}": ("mock", name) for name in ("workers", "ttft_ms", "itl_ms", "faults")},
    "mock_record_requests": ("mock", "record_requests"),
    **{f"mock_{name}": ("mock", name) for name in ("slots", "tokens_per_s", "fault_past")},
    "mock_load_fault": ("mock", "load_fault"),
    "mock_gpu_watts": ("mock", "gpu_watts"),
    "server_metrics": ("server_metrics", "url"),
    "server_metrics_interval": ("server_metrics", "interval"),
    "gpu_metrics": ("server_metrics", "gpu_url"),
    "cost_per_hour": ("output", "cost_per_hour"),
}

# The load fields the table routes otherwise: the run's seed, and `concurrency`'s.
_ROUTED_ELSEWHERE: Final = ("seed", "streams", "max_concurrency")


def _profile_parameters() -> dict[str, tuple[str, ...]]:
    """The flat key of every profile parameter the table does not name: `<kind>_<name>` (a
    `burst` profile's `size` is `burst_size`), so a new profile's parameter needs no row."""
    named = {path[1] for path in _LISTED.values() if path[0] == "load"}
    return {
        f"{kind}_{name}": ("load", name)
        for kind, member in _MEMBERS.items()
        for name in member.model_fields
        if name not in named and name not in _ROUTED_ELSEWHERE
    }


FLAT_KEYS: Final = {**_LISTED, **_profile_parameters()}
"""Every flat key, in the order report.json writes them, with its place in the sections."""

SECTIONS: Final = tuple(dict.fromkeys(path[0] for path in FLAT_KEYS.values()))
"""The sections of the run spec (and `seed`, a value of its own)."""

_PATHS: Final = {path: key for key, path in FLAT_KEYS.items()}

# The keys whose flag is not simply the key with dashes (tests/cli/test_run_flags.py holds
# them to `assay run`'s rows).
_FLAGS: Final = {
    "headers": "--header",
    "secret_headers": "--secret-header",
    "probe": "--no-probe",
    "data_columns": "--data-column",
    "allowed_media_paths": "--allowed-media-path",
    "validators": "--validator",
    "default_validators": "--no-default-validators",
    "mock_faults": "--mock-fault",
}


def flag_of(key: str) -> str:
    """The `assay run` flag that sets the key `key`, as messages name it.

    >>> flag_of("output_tokens"), flag_of("mock_faults")
    ('--output-tokens', '--mock-fault')
    """
    return _FLAGS.get(key, f"--{key.replace('_', '-')}")


def _asked_for(name: str, field: FieldInfo) -> str:
    """How an error asks for the required profile parameter `name`, in words read from its
    field: its `Asked`, else its flag (with `N` for a count)."""
    asked = asked_of(field) or Asked("N" if field.annotation is int else "")
    paths = (*_LOAD_KEYS.items(), *_PATHS.items())
    key = next(key for path, key in paths if path[:2] == ("load", name))
    words = f"{asked.flag or flag_of(key)} {asked.metavar}".rstrip()
    return f"{asked.what} ({words})" if asked.what else words


def kinds_with(field: str) -> list[str]:
    """The profiles whose type has `field`, in the union's order.

    >>> kinds_with("rate")
    ['constant', 'poisson']
    """
    return [kind for kind, member in _MEMBERS.items() if field in member.model_fields]


def sectioned(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data`, whose flat keys are routed into their sections; sections given whole, and
    unknown keys (for the model to refuse), are passed through."""
    routed: dict[str, Any] = {}
    flat_load = False
    for key, value in data.items():
        path = FLAT_KEYS.get(key)
        if path is None or (key in SECTIONS and isinstance(value, dict | BaseModel)):
            routed[key] = value
            continue
        flat_load = flat_load or path[0] == "load"
        if isinstance(routed.get(path[0]), BaseModel):
            raise ValueError(f"{flag_of(key)}: give the {path[0]} section whole or flat, not both")
        place = routed
        for part in path[:-1]:
            place = place.setdefault(part, {})
        place[path[-1]] = value
    if flat_load:
        load = routed["load"]
        if isinstance(routed.get("seed"), int):
            load["seed"] = routed["seed"]  # the run's seed, for the profiles that draw
        routed["load"] = _profile_fields(load, routed.get("constraints", {}))
    return routed


def _profile_fields(load: dict[str, Any], constraints: Any) -> dict[str, Any]:
    """The fields of the profile the flat load keys describe, or a ValueError naming the flag
    that does not apply to it."""
    given = {name: value for name, value in load.items() if value is not None}
    ramp = given.get("ramp", {})
    kind = str(given.pop("kind", "ramp_up" if ramp.get("curve") is not None else "throughput"))
    if kind not in _MEMBERS:
        kinds = [repr(kind) for kind in typing.get_args(ProfileKind)]
        raise ValueError(f"--profile: Input should be {', '.join(kinds[:-1])} or {kinds[-1]}")
    fields = _MEMBERS[kind].model_fields
    if "seed" not in fields:
        given.pop("seed", None)
    if "concurrency" in given:
        given["streams" if "streams" in fields else "max_concurrency"] = given.pop("concurrency")
    for name in given:
        if name not in fields:
            raise ValueError(_not_for(name, kind, sorted(ramp)))
    missing = [name for name, info in fields.items() if info.is_required() and name not in given]
    if missing:
        asked = (_asked_for(name, fields[name]) for name in missing)
        raise ValueError(f"profile {kind} needs {' and '.join(asked)}")
    if "ramp" in given:
        given["ramp"] = _ramp_fields(ramp, constraints if isinstance(constraints, dict) else {})
    return {"kind": kind, **given}


def _not_for(field: str, kind: str, ramp: list[str]) -> str:
    """Why the load key of `field` (of the ramp's fields `ramp`) does not apply to profile
    `kind`, in words built from the profiles that take it."""
    if field in ("streams", "max_concurrency"):
        why = "one request at a time" if kind == "synchronous" else "an open loop"
        return f"--concurrency does not apply to profile {kind} ({why})"
    parts = [path for path in _PATHS if path[:2] == ("load", "ramp") and path[2] in ramp]
    paths = parts if field == "ramp" else [("load", field)]
    flags = ", ".join(flag_of(_PATHS[path]) for path in paths)
    kinds = kinds_with(field)
    names = " and ".join(filter(None, (", ".join(kinds[:-1]), kinds[-1])))
    hint = " (a sweep measures its rates; --sweep-rates sets how many)"
    return (
        f"{flags} applies to the {names} profile{'s' if len(kinds) > 1 else ''}, "
        f"not {kind}{hint if kind == 'sweep' and field == 'rate' else ''}"
    )


def _ramp_fields(ramp: dict[str, Any], constraints: dict[str, Any]) -> dict[str, Any]:
    """The ramp of `--ramp-up`: over `--max-seconds` when given, else over the time the curve
    takes to offer `--max-requests` (its integral reaches them at its end)."""
    missing = [flag_of(_PATHS[("load", "ramp", name)])
               for name in ("start_rate", "end_rate") if ramp.get(name) is None]  # fmt: skip
    if missing:
        raise ValueError(f"--ramp-up needs {' and '.join(missing)} (requests/s)")
    max_seconds, max_requests = constraints.get("max_seconds"), constraints.get("max_requests")
    if max_seconds is not None:
        return {**ramp, "duration_s": max_seconds}
    if max_requests is None:
        raise ValueError(
            "--ramp-up needs the step's length: --max-seconds (the ramp's duration) or "
            "--max-requests (the time the ramp takes to offer them)"
        )
    curve: RampCurve = "exponential" if ramp.get("curve") == "exponential" else "linear"
    try:
        count = int(max_requests)
        if count > 0:
            offered = RateRamp.offering(curve, ramp["start_rate"], ramp["end_rate"], count)
            return {**ramp, "duration_s": offered.duration_s}
    except (TypeError, ValueError):  # a bad rate (ValidationError) or a bad --max-requests
        pass
    return {**ramp, "duration_s": 1.0}  # the fields themselves then say what is wrong


def flattened(sections: Mapping[str, Any]) -> dict[str, Any]:
    """The flat keys of a sectioned spec dumped as JSON (`model_dump(mode="json")`), in the
    table's order; a key its sections leave out (a parameter of another profile) is left out.

    >>> flattened({"load": {"kind": "concurrent", "streams": 4}, "seed": 7})
    {'profile': 'concurrent', 'concurrency': 4, 'seed': 7}
    """
    found: dict[str, Any] = {}
    for path, key in (*_PATHS.items(), *_LOAD_KEYS.items()):
        place: Any = sections
        for part in path:
            place = place.get(part, _MISSING) if isinstance(place, Mapping) else _MISSING
        if place is not _MISSING:
            found[key] = place
    return {key: found[key] for key in FLAT_KEYS if key in found}


_MISSING: Final = object()


def places_of(key: str) -> list[tuple[str, ...]]:
    """Where the flat key `key` lives in the sections (`concurrency`: also a profile's
    `streams` or `max_concurrency`).

    >>> places_of("concurrency")[1:]
    [('load', 'streams'), ('load', 'max_concurrency')]
    """
    return [FLAT_KEYS[key], *(path for path, name in _LOAD_KEYS.items() if name == key)]


def flat_loc(loc: tuple[int | str, ...]) -> tuple[str | None, str]:
    """The flat key of a validation error's location inside the sections (None when the error
    is a whole section's), and the rest of the location (`.0` for a list's first item)."""
    parts = tuple(str(part) for part in loc)
    if parts[:1] == ("load",) and len(parts) > 1 and parts[1] in _MEMBERS:
        parts = ("load", *parts[2:])
    for end in range(len(parts), 0, -1):
        key = _PATHS.get(parts[:end]) or _LOAD_KEYS.get(parts[:end])
        if key is not None:
            return key, "".join(f".{part}" for part in parts[end:])
    if len(parts) == 1 and parts[0] not in SECTIONS:
        return parts[0], ""  # a key no section knows
    return None, ""


# The load fields whose key the table cannot name by one path.
_LOAD_KEYS: Final[dict[tuple[str, ...], str]] = {
    ("load", "streams"): "concurrency",
    ("load", "max_concurrency"): "concurrency",
}

__all__ = [
    "FLAT_KEYS",
    "SECTIONS",
    "flag_of",
    "flat_loc",
    "flattened",
    "kinds_with",
    "places_of",
    "sectioned",
]
