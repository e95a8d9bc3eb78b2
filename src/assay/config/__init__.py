"""Run configuration: the frozen `RunConfig`, config files, and merging flags over them."""

from assay.config.run_config import (
    FIELD_NAMES,
    SLO_KEYS,
    ProfileKind,
    RunConfig,
    build_config,
    describe_validation_error,
    load_config_file,
)

__all__ = [
    "FIELD_NAMES",
    "SLO_KEYS",
    "ProfileKind",
    "RunConfig",
    "build_config",
    "describe_validation_error",
    "load_config_file",
]
