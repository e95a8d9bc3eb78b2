"""Every read of `RunConfig` the command line makes, in one place: what `assay run` asks of
the settings it built (where the run goes, how it starts, how many steps its progress counts)
and the closed sets of keys typed as a `Literal`."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from pydantic import BaseModel

from assay.config import RunConfig
from assay.spec.flat import FLAT_KEYS
from assay.spec.load import Sweep


def key_choices(key: str) -> tuple[str, ...]:
    """The values a key typed as a `Literal` takes, read from its field in its section.

    >>> key_choices("image_format"), key_choices("engine")
    (('png', 'jpeg'), ('local', 'ray'))
    """
    section: type[BaseModel] = RunConfig
    *path, name = FLAT_KEYS[key]
    for part in path:
        section = section.model_fields[part].annotation  # type: ignore[assignment]  # a section
    return get_args(section.model_fields[name].annotation)


def output_dir(config: RunConfig) -> Path | None:
    """Where the run's folder goes (None: a new folder under `assay-results/`)."""
    return config.output.dir


def runs_on_ray(config: RunConfig) -> bool:
    """Whether the load runs on Ray actors (the run starts them) rather than local processes."""
    return config.engine.kind == "ray"


def progress_steps(config: RunConfig) -> int | None:
    """How many steps the progress counts (None: a sweep over rates, whose steps are found as
    it runs)."""
    match config.load:
        case Sweep(concurrencies=levels) if levels:
            return len(levels)
        case Sweep():
            return None
        case _:
            return 1


def max_seconds(config: RunConfig) -> float | None:
    """The time limit of each step in force, for the progress display."""
    return config.constraints_in_force().max_seconds


__all__ = ["key_choices", "max_seconds", "output_dir", "progress_steps", "runs_on_ray"]
