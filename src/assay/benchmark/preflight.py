"""What a run checks before it starts a target or sends a request: every setting that can be
wrong is refused here, as one `AssayError` line, and never found later by a load process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from assay.backend.settings import settings_for
from assay.config import RunConfig, describe_validation_error
from assay.data.dataset_files import is_hf_spec
from assay.data.source_config import source_config_of
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
    source, target = config.source, config.target
    if source.data is not None and not is_hf_spec(source.data) and not source.data.exists():
        raise DataError(f"{source.data}: no such prompt file")
    if source.trace is not None and not source.trace.is_file():
        raise DataError(f"{source.trace}: no such trace file")
    url = target.url or _PLACEHOLDER_URL
    _checked("", lambda: settings_for(target, url, seed=config.seed))
    _checked(
        "",
        lambda: source_config_of(
            source, config.request, target.endpoint, _PLACEHOLDER_MODEL, config.seed
        ),
    )
    spec = source.tokenizer
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
