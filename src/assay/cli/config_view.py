"""Every read of `RunConfig` the command line makes, in one place: what `assay run` asks of
the settings it built (where the run goes, how it starts, how many steps its progress counts)
and the closed sets of keys typed as a `Literal`."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from assay.config import RunConfig


def key_choices(key: str) -> tuple[str, ...]:
    """The values a key typed as a `Literal` takes.

    >>> key_choices("image_format")
    ('png', 'jpeg')
    """
    return get_args(RunConfig.model_fields[key].annotation)


def output_dir(config: RunConfig) -> Path | None:
    """Where the run's folder goes (None: a new folder under `assay-results/`)."""
    return config.output_dir


def runs_on_ray(config: RunConfig) -> bool:
    """Whether the load runs on Ray actors (the run starts them) rather than local processes."""
    return config.engine == "ray"


def progress_steps(config: RunConfig) -> int | None:
    """How many steps the progress counts (None: a sweep, whose steps are found as it runs)."""
    if config.sweep_concurrency:
        return len(config.sweep_concurrency)
    return None if config.profile == "sweep" else 1


__all__ = ["key_choices", "output_dir", "progress_steps", "runs_on_ray"]
