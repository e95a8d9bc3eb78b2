"""What a run checks before it starts a target or sends a request: every setting that can be
wrong is refused here, as one `AssayError` line, and never found later by a load process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from assay.config import RunConfig, describe_validation_error
from assay.data.dataset_files import is_hf_spec
from assay.data.source_config import source_config_of
from assay.data.tokenizer_spec import BUILTIN
from assay.errors import ConfigError, DataError
from assay.spec.flat import flag_of, flattened

_INT64: Final = 1 << 63
MAX_RAY_WORKERS: Final = 1 << 16
"""Ray actors one run may ask for (65,536): Ray itself refuses a node of more than 10^14 CPUs
with a traceback, and no cluster has more cores than this."""

# Stands in for what only the started target tells (its URL, its model) while checking the rest.
_PLACEHOLDER_URL: Final = "http://127.0.0.1:1"
_PLACEHOLDER_MODEL: Final = "model"


def check_before_start(config: RunConfig, mock_check: Callable[[], object] | None) -> None:
    """Raise `ConfigError` or `DataError` for any setting the run would fail on.

    `mock_check` builds the embedded mock's config (when the run starts one), so a bad
    `--mock-fault` is refused with the rest; the mock's other settings are checked by the
    run's own `Mock` section, so what the config refuses is the fault list's.
    """
    # Imported here: the checks of the source need no HTTP client (see `check_source`).
    from assay.backend.settings import settings_for

    check_source(config)
    target = config.target
    url = target.url or _PLACEHOLDER_URL
    _checked("", lambda: settings_for(target, url, seed=config.seed))
    if mock_check is not None:
        _checked(f"{flag_of('mock_faults')}: ", mock_check)


def check_source(config: RunConfig) -> None:
    """The part of `check_before_start` about what is sent: every whole number, the data or
    trace file's presence, the bounds on synthetic requests (images, documents, sizes) and the
    tokenizer. It imports no HTTP client, so `assay run` makes it before any process starts."""
    _check_integers(config)
    source, target = config.source, config.target
    if source.data is not None and not is_hf_spec(source.data) and not source.data.exists():
        raise DataError(f"{source.data}: no such prompt file")
    if source.trace is not None and not source.trace.exists():
        raise DataError(f"{source.trace}: no such trace file")
    _checked(
        "",
        lambda: source_config_of(
            source, config.request, target.endpoint, _PLACEHOLDER_MODEL, config.seed
        ),
    )
    spec = source.tokenizer
    if spec is not None and spec.strip().lower() != BUILTIN and not Path(spec).exists():
        raise DataError(f"--tokenizer {spec}: no such file or folder")


def _check_integers(config: RunConfig) -> None:
    """Refuse a whole number no file of the run can hold: report.json, records.jsonl and the
    page are JSON written by orjson, which stops at 64 bits (`--max-requests 10^30` ran, then
    crashed writing the report), and a Ray of the run's own takes at most `MAX_RAY_WORKERS`."""
    for key, value in flattened(config.model_dump(mode="json")).items():
        for number in _integers(value):
            if not -_INT64 <= number < _INT64:
                raise ConfigError(
                    f"{flag_of(key)} {number}: beyond 64 bits, more than any run can count "
                    "(see docs/security.md)"
                )
    workers = config.engine.ray_workers
    if workers is not None and workers > MAX_RAY_WORKERS:
        raise ConfigError(
            f"--ray-workers {workers}: at most {MAX_RAY_WORKERS:,} actors (one CPU each)"
        )


def _integers(value: object) -> list[int]:
    match value:
        case bool():
            return []
        case int():
            return [value]
        case list() | tuple():
            return [number for item in value for number in _integers(item)]
        case dict():
            return [number for item in value.values() for number in _integers(item)]
        case _:
            return []


def _checked(prefix: str, build: Callable[[], object]) -> None:
    try:
        build()
    except ValidationError as error:
        raise ConfigError(prefix + describe_validation_error(error)) from None


__all__ = ["MAX_RAY_WORKERS", "check_before_start", "check_source"]
