"""The models a run's data or trace rows name, which its target must list before the load.

A traffic mix's models are checked against `/v1/models` before any request; so are the models
the rows of `--data` or `--trace` name (their `model` column), from the rows already read ahead.
The embedded mock answers every model name, so a run without `--target` checks nothing.
"""

from __future__ import annotations

from assay.backend.served_models import RowModels
from assay.benchmark.source_ahead import SourceAhead
from assay.config import RunConfig


def rows_to_list(config: RunConfig, ahead: SourceAhead | None) -> RowModels | None:
    """The models `ahead`'s rows name, for `wait_for_model` to find listed; None when no row
    names one, no file was read, or the target is the embedded mock."""
    if ahead is None or config.target.url is None:
        return None
    named = ahead.named_models()
    if named is None:
        return None
    flag = "--trace" if config.source.trace is not None else "--data"
    return RowModels(f"{flag} rows", named.unit, named)


__all__ = ["rows_to_list"]
