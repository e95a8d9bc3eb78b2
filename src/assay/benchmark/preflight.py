"""What a run checks before it starts a target or sends a request: every setting that can be
wrong is refused here, as one `AssayError` line, and never found later by a load process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from assay.benchmark.from_config import backend_settings_of, source_config_of
from assay.config import RunConfig, describe_validation_error
from assay.data.dataset_files import is_hf_spec
from assay.data.tokenizer_spec import BUILTIN
from assay.errors import ConfigError, DataError

# Stands in for what only the started target tells (its URL, its model) while checking the rest.
_PLACEHOLDER_URL: Final = "http://127.0.0.1:1"
_PLACEHOLDER_MODEL: Final = "model"


def check_before_start(config: RunConfig, mock_check: Callable[[], object] | None) -> None:
    """Raise `ConfigError` or `DataError` for any setting the run would fail on.

    `mock_check` builds the embedded mock's config (when the run starts one), so a bad
    `--mock-fault` is refused with the rest.
    """
    if config.data is not None and not is_hf_spec(config.data) and not config.data.exists():
        raise DataError(f"{config.data}: no such prompt file")
    if config.trace is not None and not config.trace.is_file():
        raise DataError(f"{config.trace}: no such trace file")
    _checked("", lambda: backend_settings_of(config, config.target or _PLACEHOLDER_URL))
    _checked("", lambda: source_config_of(config, _PLACEHOLDER_MODEL))
    spec = config.tokenizer
    if spec is not None and spec.strip().lower() != BUILTIN and not Path(spec).exists():
        raise DataError(f"--tokenizer {spec}: no such file or folder")
    if mock_check is not None:
        _checked("embedded mock: ", mock_check)


def _checked(prefix: str, build: Callable[[], object]) -> None:
    try:
        build()
    except ValidationError as error:
        raise ConfigError(prefix + describe_validation_error(error)) from None


__all__ = ["check_before_start"]
