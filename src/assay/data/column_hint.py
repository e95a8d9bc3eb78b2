"""The columns a data row does have, for the message about one it lacks (issue 38: a parquet
file without `--data-column` said "no 'prompt' in the row" and nothing about its columns)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# A wide table's message names this many columns, then how many more it has.
_SHOWN: Final = 12


def columns_hint(values: Mapping[str, object], role: str) -> str:
    """ "; its columns: ..." and the flag that names the column holding `role`.

    >>> columns_hint({"question": "q", "answer": "a"}, "prompt")
    "; the row's columns: 'question', 'answer' (--data-column prompt=COLUMN names the one to use)"
    >>> columns_hint({}, "prompt")
    '; the row has no columns'
    """
    names = [str(name) for name in values]
    if not names:
        return "; the row has no columns"
    shown = ", ".join(repr(name) for name in names[:_SHOWN])
    if len(names) > _SHOWN:
        shown += f" and {len(names) - _SHOWN} more"
    return f"; the row's columns: {shown} (--data-column {role}=COLUMN names the one to use)"


__all__ = ["columns_hint"]
