"""Run configuration: config files and flags merged into the run spec's frozen `RunConfig`
(declared in `assay.spec.run`), and the limits of the machine the run starts on."""

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
