"""How many models of a traffic mix a step aggregates each on its own.

A model's aggregator costs some kilobytes in every load process (about 7 kB) and its figures
about 2.4 kB in report.json, and a data file's `model` column, a server or records edited by
hand may name a model per request. A step aggregates at most `MAX_MODELS` models each on its
own; the records of the others are aggregated together under `OTHER_MODELS`. The step's own
figures count every record whatever its model.
"""

from __future__ import annotations

from typing import Final

MAX_MODELS: Final = 256
# Not a name a run sends: its parentheses and space say it gathers the models past the bound.
OTHER_MODELS: Final = "(other models)"

__all__ = ["MAX_MODELS", "OTHER_MODELS"]
