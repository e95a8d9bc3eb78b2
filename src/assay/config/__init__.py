"""Run configuration: the frozen `RunConfig`, config files, and merging flags over them."""

from assay.config.limits import PROCESSES_PER_CPU, check_machine_limits, usable_cpus
from assay.config.run_config import (
    FIELD_NAMES,
    SLO_KEYS,
    RunConfig,
    build_config,
    describe_validation_error,
    load_config_file,
)
from assay.spec.load import ProfileKind

__all__ = [
    "FIELD_NAMES",
    "PROCESSES_PER_CPU",
    "SLO_KEYS",
    "ProfileKind",
    "RunConfig",
    "build_config",
    "check_machine_limits",
    "describe_validation_error",
    "load_config_file",
    "usable_cpus",
]
