"""Choosing a tokenizer from its spelling in config or on the command line."""

from __future__ import annotations

from typing import Final

from assay.data.tokenizer import BuiltinTokenizer, Tokenizer
from assay.errors import DataError

BUILTIN: Final = "builtin"
"""The spec naming the built-in tokenizer (as does no spec at all)."""


def load_tokenizer(spec: str | None) -> Tokenizer:
    """The built-in tokenizer for None or "builtin", else a local tokenizer.json (or its folder).

    >>> load_tokenizer(None).name
    'builtin'
    >>> load_tokenizer("builtin").count("Hello, world")
    3
    """
    if spec is None or spec.strip().lower() == BUILTIN:
        return BuiltinTokenizer()
    try:
        # Imported here: `tokenizers` is an optional dependency, and only this path needs it.
        from assay.data.hf_tokenizer import HfTokenizer
    except ImportError:
        raise DataError(
            f"tokenizer {spec!r} needs the `tokenizers` package: install assay[hf]"
        ) from None
    return HfTokenizer.from_path(spec)


__all__ = ["BUILTIN", "load_tokenizer"]
